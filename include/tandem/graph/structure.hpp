#pragma once
// The compile-time passes over a graph type (Boost.Hana stays in here):
//
//   classes       every distinct node type, children before parents;
//   edges         how many (parent, operand slot) pairs name a class;
//   materialized  the elementwise classes whose value gets a buffer;
//   group         for a materialized class, the elementwise classes computed
//                 in registers inside its one fused loop, and its leaves.
//
// An elementwise class is materialized when it is an output, when a
// non-elementwise op reads it, when a parent computes in another type, or
// when it holds runtime data (a scalar, a captured tensor) and is read
// through two or more slots: two nodes of such a type may hold different
// scalars, so they are computed once per runtime instance, into a buffer.
// Pure classes are computed once per group however often they are read.

#include <boost/hana/append.hpp>
#include <boost/hana/contains.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <cstddef>
#include <tuple>
#include <utility>

#include "tandem/graph/symbol.hpp"

namespace tandem::detail {

namespace hana = boost::hana;

// The root of a graph with several outputs.
template <class... C>
struct outputs_node {
  using value_type = void;
  operand_list<sym<C>...> children;
};
template <class... C>
struct node_traits<outputs_node<C...>> : node_traits<void> {
  using children = std::tuple<C...>;
};

// Operand slot K of class P, as a type.
template <class P, std::size_t K>
struct slot {};

template <class S>
struct slot_child;
template <class P, std::size_t K>
struct slot_child<slot<P, K>> {
  using type = std::tuple_element_t<K, typename node_traits<P>::children>;
};
template <class S>
using slot_child_t = typename slot_child<S>::type;

inline constexpr std::size_t no_product = static_cast<std::size_t>(-1);

template <class N>
constexpr auto child_types() {
  return []<class... C>(std::tuple<C...>*) { return hana::tuple_t<C...>; }(
      static_cast<typename node_traits<N>::children*>(nullptr));
}

template <class List, class T>
constexpr auto append_new(List list, T t) {
  if constexpr (decltype(hana::contains(list, t))::value) return list;
  else return hana::append(list, t);
}

// classes_of by a depth-first walk that threads the set of classes seen so
// far: a membership test is a base-class lookup, so the pass costs one
// instantiation per edge of the graph, not one per path.
template <class T>
struct seen_tag {};
template <class... T>
struct seen_list : seen_tag<T>... {};

template <class N, class Seen>
struct postorder;

template <class Seen, class... C>
struct postorder_children {
  using type = Seen;
};
template <class Seen, class C, class... Rest>
struct postorder_children<Seen, C, Rest...> {
  using after = typename std::conditional_t<std::is_base_of_v<seen_tag<C>, Seen>, std::type_identity<Seen>,
                                            postorder<C, Seen>>::type;
  using type = typename postorder_children<after, Rest...>::type;
};

template <class List, class N>
struct append_class;
template <class... T, class N>
struct append_class<seen_list<T...>, N> {
  using type = seen_list<T..., N>;
};

template <class N, class Seen>
struct postorder {
  using walked = decltype([]<class... C>(std::tuple<C...>*) {
    return typename postorder_children<Seen, C...>::type{};
  }(static_cast<typename node_traits<N>::children*>(nullptr)));
  using type = typename append_class<walked, N>::type;
};

template <class N>
struct classes_of {
  static constexpr auto value = []<class... T>(seen_list<T...>*) {
    return hana::tuple_t<T...>;
  }(static_cast<typename postorder<N, seen_list<>>::type*>(nullptr));
};

template <class List, class T>
inline constexpr std::size_t index_in_v = []<class... E>(hana::tuple<E...>*) {
  std::size_t i = 0, found = sizeof...(E);
  ((found = std::is_same_v<typename E::type, T> ? i : found, ++i), ...);
  return found;
}(static_cast<List*>(nullptr));

template <class List, class T>
constexpr std::size_t index_in() {
  static_assert(index_in_v<List, T> < decltype(hana::length(List{}))::value, "tandem internal: class not in list");
  return index_in_v<List, T>;
}

template <class N>
using value_of_t = typename N::value_type;

template <class N>
using all_classes = typename postorder<N, seen_list<>>::type;

// How many operand slots of P name C.
template <class P, class C>
inline constexpr std::size_t slots_naming = []<class... K>(std::tuple<K...>*) {
  return (std::size_t{0} + ... + std::size_t{std::is_same_v<K, C>});
}(static_cast<typename node_traits<P>::children*>(nullptr));

// Whether P reads C in registers: P is elementwise in C's compute type, or
// P sums C (a floating value computed in its own type) inside C's loop.
template <class P, class C>
constexpr bool computes_alike() {
  if constexpr (node_traits<P>::is_map) {
    return std::is_same_v<typename P::compute_type, typename C::compute_type>;
  } else if constexpr (node_traits<P>::is_summation && node_traits<C>::is_map) {
    using T = typename C::value_type;
    return std::is_floating_point_v<T> && std::is_same_v<T, typename C::compute_type> &&
           std::is_same_v<T, typename P::value_type>;
  } else {
    return false;
  }
}

// The passes are variable templates: each answer is computed once per
// graph and class, whatever asks for it.
template <class Root, class C>
inline constexpr std::size_t edge_count_v = []<class... P>(seen_list<P...>*) {
  return (std::size_t{0} + ... + slots_naming<P, C>);
}(static_cast<all_classes<Root>*>(nullptr));

template <class Root, class C>
inline constexpr bool materialized_v = [] {
  if constexpr (!node_traits<C>::is_map) {
    return false;
  } else {
    bool foreign_reader = []<class... P>(seen_list<P...>*) {
      return ((slots_naming<P, C> > 0 && !computes_alike<P, C>()) || ...);
    }(static_cast<all_classes<Root>*>(nullptr));
    return foreign_reader || (!is_pure<C> && edge_count_v<Root, C> >= 2);
  }
}();

// Whether child C is computed in registers inside a parent's group.
template <class Root, class C>
constexpr bool fused_into_parent() {
  return node_traits<C>::is_map && !materialized_v<Root, C>;
}

// Whether summation N runs inside the loop of the group of its operand.
template <class Root, class N>
constexpr bool fused_summation() {
  if constexpr (node_traits<N>::is_summation) return fused_into_parent<Root, std::tuple_element_t<0, typename node_traits<N>::children>>();
  else return false;
}

// The one class reading C, for a class read through a single slot.
template <class C, class... P>
struct first_reader {
  using type = void;
};
template <class C, class P, class... Rest>
struct first_reader<C, P, Rest...>
    : std::conditional_t<(slots_naming<P, C> > 0), std::type_identity<P>, first_reader<C, Rest...>> {};

template <class C, class List>
struct reader_in;
template <class C, class... P>
struct reader_in<C, seen_list<P...>> : first_reader<C, P...> {};

// Whether elementwise class C is computed by a group that writes a buffer,
// rather than by one summed away inside a fused summation's loop. A fused
// class holding runtime data has one reader, so the walk up is one path.
template <class Root, class C>
constexpr bool in_buffered_group() {
  if constexpr (materialized_v<Root, C>) {
    return true;
  } else {
    using Reader = typename reader_in<C, all_classes<Root>>::type;
    if constexpr (node_traits<Reader>::is_map) return in_buffered_group<Root, Reader>();
    else return false;
  }
}

// Whether matmul C runs the group that reads it inside the GEMM, as its
// epilogue: C is read by nothing else, its operands and its reader compute
// in its floating type, and the reader's group writes a buffer.
template <class Root, class C>
constexpr bool runs_epilogue() {
  if constexpr (node_traits<C>::is_matrix_product && edge_count_v<Root, C> == 1) {
    using T = value_of_t<C>;
    using Reader = typename reader_in<C, all_classes<Root>>::type;
    using A = std::tuple_element_t<0, typename node_traits<C>::children>;
    using B = std::tuple_element_t<1, typename node_traits<C>::children>;
    if constexpr (node_traits<Reader>::is_map)
      return std::is_floating_point_v<T> && std::is_same_v<T, typename Reader::compute_type> &&
             std::is_same_v<T, value_of_t<A>> && std::is_same_v<T, value_of_t<B>> && in_buffered_group<Root, Reader>();
    else
      return false;
  } else {
    return false;
  }
}

// The buffered group root above elementwise class C (C itself if buffered).
template <class Root, class C>
struct buffered_root {
  using type = typename std::conditional_t<materialized_v<Root, C>, std::type_identity<C>,
                                           buffered_root<Root, typename reader_in<C, all_classes<Root>>::type>>::type;
};

// Whether matmul C, running an epilogue, can write straight into its
// group's output: the group's value has the product's type.
template <class Root, class C>
constexpr bool writes_into_group_output() {
  using Reader = typename reader_in<C, all_classes<Root>>::type;
  return std::is_same_v<value_of_t<typename buffered_root<Root, Reader>::type>, value_of_t<C>>;
}

// The classes of R's group, children before parents, R last: the same
// walk as classes_of, entering only children fused into their parent.
template <class Root, class N, class Seen>
struct group_postorder;

template <class Root, class Seen, class... C>
struct group_postorder_children {
  using type = Seen;
};
template <class Root, class Seen, class C, class... Rest>
struct group_postorder_children<Root, Seen, C, Rest...> {
  static constexpr bool enter = fused_into_parent<Root, C>() && !std::is_base_of_v<seen_tag<C>, Seen>;
  using after =
      typename std::conditional_t<enter, group_postorder<Root, C, Seen>, std::type_identity<Seen>>::type;
  using type = typename group_postorder_children<Root, after, Rest...>::type;
};

template <class Root, class N, class Seen>
struct group_postorder {
  using walked = decltype([]<class... C>(std::tuple<C...>*) {
    return typename group_postorder_children<Root, Seen, C...>::type{};
  }(static_cast<typename node_traits<N>::children*>(nullptr)));
  using type = typename append_class<walked, N>::type;
};

template <class Root, class R>
struct group_classes {
  static constexpr auto value = []<class... T>(seen_list<T...>*) {
    return hana::tuple_t<T...>;
  }(static_cast<typename group_postorder<Root, R, seen_list<>>::type*>(nullptr));
};

// R's group's leaves: pure leaves by class; leaves holding runtime data by
// the slot that reads them, split into scalars and tensors.
template <class Root, class R>
struct group_leaves {
  static constexpr auto classes = group_classes<Root, R>::value;

  template <class Want>
  static constexpr auto collect(Want want) {
    return hana::fold_left(classes, hana::make_tuple(), [want](auto acc, auto p) {
      using P = typename decltype(p)::type;
      return [&]<class... C, std::size_t... K>(std::tuple<C...>*, std::index_sequence<K...>) {
        auto result = acc;
        return hana::fold_left(hana::make_tuple(hana::make_tuple(hana::type_c<C>, hana::size_c<K>)...), result,
                               [want](auto list, auto entry) {
                                 (void)entry;
                                 using C1 = typename decltype(+hana::at_c<0>(entry))::type;
                                 constexpr std::size_t k = decltype(+hana::at_c<1>(entry))::value;
                                 return want(list, hana::type_c<C1>, hana::type_c<slot<P, k>>);
                               });
      }(static_cast<typename node_traits<P>::children*>(nullptr),
             std::make_index_sequence<std::tuple_size_v<typename node_traits<P>::children>>{});
    });
  }

  static constexpr auto pure = collect([](auto list, auto c, auto) {
    using C = typename decltype(c)::type;
    if constexpr (is_pure<C> && !fused_into_parent<Root, C>()) return append_new(list, c);
    else return list;
  });
  static constexpr auto constants = collect([](auto list, auto c, auto s) {
    using C = typename decltype(c)::type;
    if constexpr (node_traits<C>::is_constant) return hana::append(list, s);
    else return list;
  });
  static constexpr auto tensors = collect([](auto list, auto c, auto s) {
    using C = typename decltype(c)::type;
    if constexpr (!is_pure<C> && !node_traits<C>::is_constant && !fused_into_parent<Root, C>())
      return hana::append(list, s);
    else return list;
  });

  // The position in `tensors` of a matmul that runs this group as its
  // epilogue, or no_product.
  static constexpr std::size_t product = [] {
    std::size_t found = no_product, i = 0;
    hana::for_each(tensors, [&](auto s) {
      if (found == no_product && runs_epilogue<Root, slot_child_t<typename decltype(s)::type>>()) found = i;
      ++i;
    });
    return found;
  }();
};

// What the passes found, as numbers a test can static_assert.
template <class Root>
struct graph_structure {
  static constexpr std::size_t classes = decltype(hana::length(classes_of<Root>::value))::value;
  // Fused elementwise loops plus non-elementwise kernels.
  static constexpr std::size_t fusion_groups = [] {
    std::size_t n = 0;
    hana::for_each(classes_of<Root>::value, [&](auto c) {
      using C = typename decltype(c)::type;
      if (materialized_v<Root, C> || node_traits<C>::is_apply) ++n;
    });
    return n;
  }();
  // Matmuls running the group that reads them as their epilogue.
  static constexpr std::size_t epilogues = [] {
    std::size_t n = 0;
    hana::for_each(classes_of<Root>::value, [&](auto c) { n += runs_epilogue<Root, typename decltype(c)::type>(); });
    return n;
  }();
  // Buffers for values that are not outputs, in a run without gradients. A
  // matmul with an epilogue writes into its group's output when that has
  // its type (the group then updates the block in place).
  static constexpr std::size_t buffers = [] {
    std::size_t n = 0;
    hana::for_each(classes_of<Root>::value, [&](auto c) {
      using C = typename decltype(c)::type;
      bool output = decltype(hana::contains(child_types<Root>(), c))::value;
      bool in_place = false;
      if constexpr (runs_epilogue<Root, C>()) in_place = writes_into_group_output<Root, C>();
      if ((materialized_v<Root, C> || node_traits<C>::is_apply) && !output && !in_place) ++n;
    });
    return n;
  }();
};

}  // namespace tandem::detail
