#pragma once
// The elementwise rows a static graph's run asks for, as types: each fused
// group's forward row, its fused adjoint row, a fused summation's rows. The
// executor's strategies run exactly these (they check it at compile time),
// so a build of a graph's kernels for another instruction set
// (graph/kernel_build.hpp) can instantiate them all without running the
// graph.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tandem/core/tensor.hpp"
#include "tandem/graph/kernel.hpp"
#include "tandem/graph/structure.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"

namespace tandem::detail {

// One row function's template arguments (kernels/cpu/elementwise.hpp):
// result and compute types, op, output, operand types.
template <class R, class C, class Op, class Out, class... In>
struct row_signature {};

// What a group of class R reads, one element per leaf: its pure leaves,
// then its tensor leaves, in the kernel's operand order; Element<N> is the
// type that holds leaf N.
template <class Root, class R, template <class> class Element>
struct group_leaf_types {
  using layout = group_layout<Root, R>;
  template <std::size_t... P, std::size_t... T>
  static auto make(std::index_sequence<P...>, std::index_sequence<T...>)
      -> std::tuple<Element<typename layout::template pure_leaf<P>>...,
                    Element<typename layout::template tensor_leaf<T>>...>;
  using type = decltype(make(std::make_index_sequence<layout::n_pure>{}, std::make_index_sequence<layout::n_tensors>{}));
};

template <class N>
using leaf_tensor_t = tensor<value_of_t<N>>;

// The tensors a group of class R reads.
template <class Root, class R>
using group_operand_tensors_t = typename group_leaf_types<Root, R, leaf_tensor_t>::type;

// The operands of a group of class R, bound for a run: a tensor that
// outlives the run (a graph input, a captured tensor) by its address, a
// value computed for the run as a tensor. Copying the first kind into a
// tuple of tensors (a default tensor, then an assignment) was a seventh of
// a cached call of jit(x * w).
template <class N>
using bound_operand_t = std::conditional_t<node_traits<N>::is_input || node_traits<N>::is_captured,
                                           const tensor<value_of_t<N>>*, tensor<value_of_t<N>>>;

template <class Root, class R>
using group_bound_operands_t = typename group_leaf_types<Root, R, bound_operand_t>::type;

template <class T>
void bind_operand(const tensor<T>*& slot, const tensor<T>& t) {
  slot = &t;
}
// (A temporary would be gone before the group's loop reads it.)
template <class T>
void bind_operand(const tensor<T>*& slot, tensor<T>&& t) = delete;
template <class T, class V>
void bind_operand(tensor<T>& slot, V&& t) {
  slot = std::forward<V>(t);
}

template <class T>
const tensor<T>& bound_tensor(const tensor<T>* operand) {
  return *operand;
}
template <class T>
const tensor<T>& bound_tensor(const tensor<T>& operand) {
  return operand;
}

// The bound operands as the group's loop reads them.
template <class... B>
auto bound_tensors(const std::tuple<B...>& bound) {
  return std::apply(
      [](const auto&... b) { return std::tuple<decltype(bound_tensor(b))...>(bound_tensor(b)...); }, bound);
}

// The positions of the operands whose type takes a gradient.
template <class Operands>
constexpr auto floating_operand_positions() {
  return []<std::size_t... J>(std::index_sequence<J...>) {
    constexpr std::size_t count =
        (std::size_t{0} + ... + std::is_floating_point_v<typename std::tuple_element_t<J, Operands>::value_type>);
    std::array<std::size_t, count> positions{};
    std::size_t k = 0;
    ((std::is_floating_point_v<typename std::tuple_element_t<J, Operands>::value_type> ? (positions[k++] = J) : 0),
     ...);
    return positions;
  }(std::make_index_sequence<std::tuple_size_v<Operands>>{});
}

// Whether a group's backward pass writes operand J's adjoint itself: not
// where it equals that of another floating operand (group_kernel's
// adjoint_shared_with), which the pass writes instead.
template <class Kernel, class Operands>
constexpr bool writes_own_adjoint(std::size_t j) {
  const std::size_t shared = Kernel::adjoint_shared_with[j];
  if (shared == j) return true;
  for (const std::size_t w : floating_operand_positions<Operands>())
    if (w == shared) return false;
  return true;
}

// The floating operands whose adjoints a group's backward pass writes.
template <class Kernel, class Operands>
constexpr auto adjoint_writers() {
  constexpr auto wanted = floating_operand_positions<Operands>();
  constexpr std::size_t count = [&] {
    std::size_t n = 0;
    for (const std::size_t w : wanted) n += writes_own_adjoint<Kernel, Operands>(w);
    return n;
  }();
  std::array<std::size_t, count> writers{};
  std::size_t k = 0;
  for (const std::size_t w : wanted)
    if (writes_own_adjoint<Kernel, Operands>(w)) writers[k++] = w;
  return writers;
}

// Which of adjoint_writers' outputs holds floating operand J's adjoint.
template <class Kernel, class Operands>
constexpr std::size_t adjoint_written_at(std::size_t j) {
  const std::size_t source = writes_own_adjoint<Kernel, Operands>(j) ? j : Kernel::adjoint_shared_with[j];
  constexpr auto writers = adjoint_writers<Kernel, Operands>();
  std::size_t k = 0;
  while (writers[k] != source) ++k;
  return k;
}

// The rows of the group computing class R: `forward` writes its value (T
// from the group's leaves, computed in C); `adjoint` writes the adjoint of
// each floating leaf from the gradient of its value (void where no leaf
// takes one). As the loop of a fused summation whose result has type S, the
// group writes its value into a tile (`summed<S>`), and at a unit-seeded
// output that value and the adjoints in one pass (`summed_with_adjoints<S>`).
template <class Root, class R>
struct group_rows {
  using kernel = group_kernel<Root, R>;
  using T = value_of_t<R>;
  using C = typename kernel::compute_type;
  using operands = group_operand_tensors_t<Root, R>;
  static constexpr auto wanted = floating_operand_positions<operands>();
  static constexpr auto writers = adjoint_writers<kernel, operands>();

  // (Helpers of the aliases below; public, since clang checks their access
  // where an alias is used.)
  template <class Result, class Compute, class Op, class Out, class... First>
  static auto row() {
    return []<std::size_t... J>(std::index_sequence<J...>) {
      return std::type_identity<row_signature<Result, Compute, Op, Out, First...,
                                              typename std::tuple_element_t<J, operands>::value_type...>>{};
    }(std::make_index_sequence<std::tuple_size_v<operands>>{});
  }
  static auto adjoint_row() {
    return []<std::size_t... F>(std::index_sequence<F...>) {
      if constexpr (sizeof...(F) == 0) return std::type_identity<void>{};
      else return row<C, C, gather_adjoints<kernel, writers[F]...>, output_set<C, sizeof...(F)>, C>();
    }(std::make_index_sequence<writers.size()>{});
  }
  template <class S>
  static auto one_pass_row() {
    return []<std::size_t... F>(std::index_sequence<F...>) {
      return row<S, S, value_then_adjoints<kernel, wanted[F]...>, output_set<S, 1 + sizeof...(F)>>();
    }(std::make_index_sequence<wanted.size()>{});
  }

  using forward = typename decltype(row<T, C, kernel, T*>())::type;
  using adjoint = typename decltype(adjoint_row())::type;
  template <class S>
  using summed = typename decltype(row<S, S, kernel, S*>())::type;
  template <class S>
  using summed_with_adjoints = typename decltype(one_pass_row<S>())::type;
};

// Whether fused summation N may run its group's backward in the same pass
// as its forward (where its output is seeded with ones).
template <class Root, class N>
inline constexpr bool summation_may_run_one_pass =
    edge_count_v<Root, N> == 1 && std::is_floating_point_v<value_of_t<N>> &&
    group_rows<Root, std::tuple_element_t<0, children_of<N>>>::wanted.size() > 0;

// visit(std::type_identity<row_signature<...>>{}) for every row a run of the
// graph of root Root may ask for: forward and backward of each fused group
// and fused summation. (A control-flow construct's sub-graphs are graphs of
// their own: their rows are not among these.)
template <class Root, class Visit>
constexpr void for_each_graph_row(Visit&& visit) {
  auto adjoint = [&]<class Rows, class Value>(std::type_identity<Rows>, std::type_identity<Value>) {
    if constexpr (std::is_floating_point_v<Value> && !std::is_void_v<typename Rows::adjoint>)
      visit(std::type_identity<typename Rows::adjoint>{});
  };
  for_each_type<all_classes<Root>>([&]<class N>(std::type_identity<N>) {
    using S = value_of_t<N>;
    if constexpr (fused_summation<Root, N>()) {
      using rows = group_rows<Root, std::tuple_element_t<0, children_of<N>>>;
      visit(std::type_identity<typename rows::template summed<S>>{});
      if constexpr (summation_may_run_one_pass<Root, N>)
        visit(std::type_identity<typename rows::template summed_with_adjoints<S>>{});
      adjoint(std::type_identity<rows>{}, std::type_identity<S>{});
    } else if constexpr (materialized_v<Root, N>) {
      using rows = group_rows<Root, N>;
      visit(std::type_identity<typename rows::forward>{});
      adjoint(std::type_identity<rows>{}, std::type_identity<S>{});
    }
  });
}

}  // namespace tandem::detail
