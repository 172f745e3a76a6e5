#pragma once
// Lists of types for the compile-time passes, built so that every question
// costs the compiler a constant number of instantiations: "is T in it" is a
// base-class test, "where is T" and "which type is at I" are overload
// resolutions, none instantiating anything per element. (Hana's tuples answered them
// with an instantiation per element per question, which made the passes
// quadratic in the graph: 200 ops spent 14 s in hana::at_c alone.)

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tandem::detail {

template <class T>
struct seen_tag {};
template <class... T>
struct seen_list : seen_tag<T>... {};

template <class List, class T>
inline constexpr bool list_contains = std::is_base_of_v<seen_tag<T>, List>;

template <class List>
struct list_size;
template <class... T>
struct list_size<seen_list<T...>> : std::integral_constant<std::size_t, sizeof...(T)> {};
template <class List>
inline constexpr std::size_t list_size_v = list_size<List>::value;

template <class List, class T>
struct append_class;
template <class... T, class N>
struct append_class<seen_list<T...>, N> {
  using type = seen_list<T..., N>;
};

// A list whose elements each bring two overloads: from the element to its
// position, and from the position to the element. A lookup is overload
// resolution among non-template functions, where GCC compares types by
// identity; deducing the position from a base class instead made GCC 12
// walk a graph type as a tree, in time exponential in its depth.
template <class T, std::size_t I>
struct indexed {
  static constexpr std::size_t position(std::type_identity<T>*) { return I; }
  static std::type_identity<T> element(std::integral_constant<std::size_t, I>*);
};

template <class List, class Positions = std::make_index_sequence<list_size_v<List>>>
struct index_table;
template <class... T, std::size_t... I>
struct index_table<seen_list<T...>, std::index_sequence<I...>> : indexed<T, I>... {
  using indexed<T, I>::position...;
  using indexed<T, I>::element...;
};

// The position of T in List (which must hold it).
template <class List, class T>
inline constexpr std::size_t position_in = index_table<List>::position(static_cast<std::type_identity<T>*>(nullptr));

// The type at position I of List.
template <class List, std::size_t I>
using type_at =
    typename decltype(index_table<List>::element(static_cast<std::integral_constant<std::size_t, I>*>(nullptr)))::type;

// The type at position I, or void past the end.
template <class List, std::size_t I, bool = (I < list_size_v<List>)>
struct type_at_or_void {
  using type = void;
};
template <class List, std::size_t I>
struct type_at_or_void<List, I, true> {
  using type = type_at<List, I>;
};

// f(std::type_identity<T>{}) for each T of List, in order.
template <class List, class F>
constexpr void for_each_type(F&& f) {
  [&]<class... T>(seen_list<T...>*) { (f(std::type_identity<T>{}), ...); }(static_cast<List*>(nullptr));
}

}  // namespace tandem::detail
