#pragma once
// The compile-time passes over a graph type:
//
//   classes       every distinct node type, children before parents;
//   edges         how many (parent, operand slot) pairs name a class;
//   materialized  the elementwise classes whose value gets a buffer;
//   readers       the first class reading each class.
//
// Each pass is one walk over the graph's edges into a constexpr table, so
// the passes cost instantiations linear in the graph (group.hpp lays out a
// group's registers and leaves the same way).
//
// An elementwise class is materialized when it is an output, when a
// non-elementwise op reads it, when a parent computes in another type, or
// when it holds a tensor (a captured tensor, or a non-elementwise op's
// result, at it or below it) and is read through two or more slots: two
// nodes of such a type, as two blocks of one module type with their own
// parameters, are computed once per runtime instance, into a buffer.
// Every other elementwise class is computed in registers, once per group
// however often it is read. For a class holding nothing (a pure class: its
// type is its value) that is always right; for one holding scalars read
// through several slots it is right when the slots read one value (`h * h`,
// or `y + 2` written twice), which graph/sharing.hpp checks on every call.

#include <array>
#include <cstddef>
#include <tuple>
#include <utility>

#include "tandem/graph/symbol.hpp"
#include "tandem/graph/type_list.hpp"

namespace tandem::detail {

// The root of a graph: its outputs.
template <class... C>
struct outputs_node {
  using value_type = void;
  operand_list<sym<C>...> children;
};
template <class... C>
struct node_traits<outputs_node<C...>> : node_traits<void> {
  using children = std::tuple<C...>;
};

template <class T>
inline constexpr bool is_pair_v = false;
template <class A, class B>
inline constexpr bool is_pair_v<std::pair<A, B>> = true;

// What a function returned, with a std::pair as the two-element std::tuple
// tandem's constructs and graphs return: a function may return either.
template <class R>
auto pair_as_tuple(R&& r) {
  if constexpr (is_pair_v<std::remove_cvref_t<R>>) return std::tuple{std::forward<R>(r).first, std::forward<R>(r).second};
  else return std::forward<R>(r);
}

// The root over what f returned: one symbolic value, or a tuple of them.
template <class Out>
auto outputs_root(Out&& out) {
  using result = std::remove_cvref_t<Out>;
  if constexpr (is_symbolic_v<result>) {
    return outputs_node<typename result::node_type>{make_operands(std::forward<Out>(out))};
  } else {
    return std::apply(
        []<class... S>(S&&... outs) {
          static_assert((is_symbolic_v<std::remove_cvref_t<S>> && ...),
                        "tandem::jit: the function must return what tandem ops return on its arguments (a symbolic "
                        "value, or a tuple of them); a tensor computed outside the graph cannot be an output");
          return outputs_node<typename std::remove_cvref_t<S>::node_type...>{make_operands(std::forward<S>(outs)...)};
        },
        std::forward<Out>(out));
  }
}

inline constexpr std::size_t no_product = static_cast<std::size_t>(-1);

template <class N>
using children_of = typename node_traits<N>::children;

template <class N>
inline constexpr std::size_t arity_v = std::tuple_size_v<children_of<N>>;

// The classes by a depth-first walk that threads the set of classes seen so
// far: a membership test is a base-class lookup, so the pass costs one
// instantiation per edge of the graph, not one per path. `Walk` says which
// children the walk enters (the whole graph, or one fused group).
struct walk_all {
  template <class C>
  static constexpr bool enters = true;
};

template <class N, class Seen, class Walk>
struct postorder;

template <class Walk, class Seen, class... C>
struct postorder_children {
  using type = Seen;
};
template <class Walk, class Seen, class C, class... Rest>
struct postorder_children<Walk, Seen, C, Rest...> {
  using after = typename std::conditional_t<Walk::template enters<C> && !list_contains<Seen, C>,
                                            postorder<C, Seen, Walk>, std::type_identity<Seen>>::type;
  using type = typename postorder_children<Walk, after, Rest...>::type;
};

template <class Walk, class Seen, class Children>
struct postorder_of;
template <class Walk, class Seen, class... C>
struct postorder_of<Walk, Seen, std::tuple<C...>> : postorder_children<Walk, Seen, C...> {};

template <class N, class Seen, class Walk>
struct postorder {
  using type = typename append_class<typename postorder_of<Walk, Seen, children_of<N>>::type, N>::type;
};

// Every distinct node type of the graph, children before parents, the root
// last.
template <class N>
using all_classes = typename postorder<N, seen_list<>, walk_all>::type;

template <class N>
using value_of_t = typename N::value_type;

// Whether a graph reads tensors it was not given that could take a
// gradient: captured floating tensors, its own or those the sub-graphs of
// its control-flow constructs capture, or tensors an apply node's function
// holds (holds_parameters). (A loop's bounds, captured integers,
// never make a call record.)
template <class Root>
constexpr bool reads_captured() {
  bool any = false;
  for_each_type<all_classes<Root>>([&]<class C>(std::type_identity<C>) {
    if constexpr (is_control_node<C>) any = any || C::fn_type::impl_type::reads_captured;
    else if constexpr (holds_parameters<C>) any = true;
    else any = any || (node_traits<C>::is_captured && std::is_floating_point_v<value_of_t<C>>);
  });
  return any;
}

// Calls visit(counters) for every control-flow construct of the graph, and
// of its constructs' sub-graphs, outermost first.
template <class Root, class Visit>
void for_each_construct(Visit&& visit) {
  for_each_type<all_classes<Root>>([&]<class C>(std::type_identity<C>) {
    if constexpr (is_control_node<C>) {
      using impl = typename C::fn_type::impl_type;
      visit(impl::counters());
      impl::for_each_subgraph_root([&]<class R>(std::type_identity<R>) { for_each_construct<R>(visit); });
    }
  });
}

// Whether a class's value depends on a tensor some node holds: a captured
// tensor, or a non-elementwise op, at it or below it.
template <class N>
inline constexpr bool holds_tensors_v =
    node_traits<N>::is_captured || node_traits<N>::is_apply ||
    []<class... C>(std::tuple<C...>*) { return (holds_tensors_v<C> || ...); }(static_cast<children_of<N>*>(nullptr));

// How many operand slots of P name C.
template <class P, class C>
inline constexpr std::size_t slots_naming = []<class... K>(std::tuple<K...>*) {
  return (std::size_t{0} + ... + std::size_t{std::is_same_v<K, C>});
}(static_cast<children_of<P>*>(nullptr));

// Whether P reads C in registers: P is elementwise in C's compute type, or
// P sums C (a floating value computed in its own type) inside C's loop.
// Only elementwise classes are read in registers.
template <class P, class C>
constexpr bool computes_alike() {
  if constexpr (!node_traits<C>::is_map) {
    return false;
  } else if constexpr (node_traits<P>::is_map) {
    return std::is_same_v<typename P::compute_type, typename C::compute_type>;
  } else if constexpr (node_traits<P>::is_summation) {
    using T = typename C::value_type;
    return std::is_floating_point_v<T> && std::is_same_v<T, typename C::compute_type> &&
           std::is_same_v<T, typename P::value_type>;
  } else {
    return false;
  }
}

// Who reads each class, from one walk over every (parent, operand slot)
// pair of the graph: how many slots name it, whether a reader cannot take
// it in registers, and its first reader (in the order of all_classes).
template <std::size_t N>
struct read_table {
  std::array<std::size_t, N> edges{};
  std::array<bool, N> foreign_reader{};
  std::array<std::size_t, N> first_reader{};
};

template <class Root>
constexpr auto reads_of_graph() {
  using classes = all_classes<Root>;
  constexpr std::size_t n = list_size_v<classes>;
  read_table<n> table;
  table.first_reader.fill(n);
  auto note = [&](std::size_t c, bool alike, std::size_t reader) {
    ++table.edges[c];
    table.foreign_reader[c] = table.foreign_reader[c] || !alike;
    if (table.first_reader[c] == n) table.first_reader[c] = reader;
  };
  for_each_type<classes>([&]<class P>(std::type_identity<P>) {
    [&]<class... C>(std::tuple<C...>*) {
      (note(position_in<classes, C>, computes_alike<P, C>(), position_in<classes, P>), ...);
    }(static_cast<children_of<P>*>(nullptr));
  });
  return table;
}

// The passes are variable templates: each answer is computed once per
// graph and class, whatever asks for it.
template <class Root>
inline constexpr auto reads_v = reads_of_graph<Root>();

template <class Root, class C>
inline constexpr std::size_t edge_count_v = reads_v<Root>.edges[position_in<all_classes<Root>, C>];

// Whether the only reader of C is the graph's root (its outputs), through
// one slot.
template <class Root, class C>
inline constexpr bool read_only_by_outputs =
    edge_count_v<Root, C> == 1 &&
    reads_v<Root>.first_reader[position_in<all_classes<Root>, C>] == position_in<all_classes<Root>, Root>;

template <class Root, class C>
inline constexpr bool materialized_v = [] {
  if constexpr (!node_traits<C>::is_map) {
    return false;
  } else {
    constexpr std::size_t c = position_in<all_classes<Root>, C>;
    return reads_v<Root>.foreign_reader[c] || (holds_tensors_v<C> && reads_v<Root>.edges[c] >= 2);
  }
}();

// The scalar-holding elementwise classes computed in registers although two
// or more slots read them: the passes' answers hold only when every slot
// naming such a class reads one value (graph/sharing.hpp checks).
template <class Root, class C>
inline constexpr bool shared_in_registers_v = [] {
  if constexpr (!node_traits<C>::is_map || is_pure<C>) {
    return false;
  } else {
    constexpr std::size_t c = position_in<all_classes<Root>, C>;
    return !reads_v<Root>.foreign_reader[c] && !holds_tensors_v<C> && reads_v<Root>.edges[c] >= 2;
  }
}();

template <class Root>
inline constexpr bool has_shared_data_classes = []<class... C>(seen_list<C...>*) {
  return (shared_in_registers_v<Root, C> || ...);
}(static_cast<all_classes<Root>*>(nullptr));

// Whether child C is computed in registers inside a parent's group.
template <class Root, class C>
constexpr bool fused_into_parent() {
  return node_traits<C>::is_map && !materialized_v<Root, C>;
}

// Whether summation N runs inside the loop of the group of its operand.
template <class Root, class N>
constexpr bool fused_summation() {
  if constexpr (node_traits<N>::is_summation) return fused_into_parent<Root, std::tuple_element_t<0, children_of<N>>>();
  else return false;
}

// The first class reading C (void for the root).
template <class Root, class C>
using reader_of_t =
    typename type_at_or_void<all_classes<Root>, reads_v<Root>.first_reader[position_in<all_classes<Root>, C>]>::type;

// Whether elementwise class C is computed by a group that writes a buffer,
// rather than by one summed away inside a fused summation's loop (asked of
// its one reader; a class read through several slots may be computed by
// several groups, and is not counted as in one).
template <class Root, class C>
constexpr bool in_buffered_group() {
  if constexpr (materialized_v<Root, C>) {
    return true;
  } else if constexpr (edge_count_v<Root, C> != 1) {
    return false;
  } else {
    using Reader = reader_of_t<Root, C>;
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
    using Reader = reader_of_t<Root, C>;
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
                                           buffered_root<Root, reader_of_t<Root, C>>>::type;
};

// Whether matmul C, running an epilogue, can write straight into its
// group's output: the group's value has the product's type.
template <class Root, class C>
constexpr bool writes_into_group_output() {
  using Reader = reader_of_t<Root, C>;
  return std::is_same_v<value_of_t<typename buffered_root<Root, Reader>::type>, value_of_t<C>>;
}

// What the passes found, as numbers a test can static_assert.
template <class Root>
struct graph_structure {
  static constexpr std::size_t classes = list_size_v<all_classes<Root>>;
  // Fused elementwise loops plus non-elementwise kernels.
  static constexpr std::size_t fusion_groups = [] {
    std::size_t n = 0;
    for_each_type<all_classes<Root>>([&]<class C>(std::type_identity<C>) {
      n += materialized_v<Root, C> || node_traits<C>::is_apply;
    });
    return n;
  }();
  // Matmuls running the group that reads them as their epilogue.
  static constexpr std::size_t epilogues = [] {
    std::size_t n = 0;
    for_each_type<all_classes<Root>>([&]<class C>(std::type_identity<C>) { n += runs_epilogue<Root, C>(); });
    return n;
  }();
  // Buffers for values that are not outputs, in a run without gradients. A
  // matmul with an epilogue writes into its group's output when that has
  // its type (the group then updates the block in place).
  static constexpr std::size_t buffers = [] {
    std::size_t n = 0;
    for_each_type<all_classes<Root>>([&]<class C>(std::type_identity<C>) {
      bool output = slots_naming<Root, C> > 0;
      bool in_place = false;
      if constexpr (runs_epilogue<Root, C>()) in_place = writes_into_group_output<Root, C>();
      if ((materialized_v<Root, C> || node_traits<C>::is_apply) && !output && !in_place) ++n;
    });
    return n;
  }();
};

}  // namespace tandem::detail
