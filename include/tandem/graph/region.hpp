#pragma once
// A region of a traced graph run on values of one's own: the elementwise
// ops under a node (its map subtree, down to the first node that is not
// elementwise), rebuilt over new leaves and run as a static graph of its
// own, so that the region is one fused loop whatever its leaves are. A
// sharded graph (dist/shard.hpp) runs each region so on a rank's blocks.
//
// The leaves are the region's non-scalar nodes below its elementwise ops
// (inputs, captured tensors, the results of other ops), in depth-first
// order, each reached once per path: scalars stay in the region as the
// values the trace gave them.

#include <array>
#include <cstddef>
#include <memory>
#include <tuple>
#include <utility>

#include "tandem/graph/plan.hpp"
#include "tandem/graph/static_graph.hpp"
#include "tandem/graph/symbol.hpp"

namespace tandem::detail {

template <class N>
inline constexpr std::size_t region_leaves = 1;
template <class T>
inline constexpr std::size_t region_leaves<constant_node<T>> = 0;
template <class Op, class... C>
inline constexpr std::size_t region_leaves<map_node<Op, C...>> = (std::size_t{0} + ... + region_leaves<C>);

// The elementwise ops a region holds.
template <class N>
inline constexpr std::size_t region_ops = 0;
template <class Op, class... C>
inline constexpr std::size_t region_ops<map_node<Op, C...>> = (std::size_t{1} + ... + region_ops<C>);

// The leaves' tensor types, as a std::tuple.
template <class N>
struct region_leaf_types {
  using type = std::tuple<tensor<typename N::value_type>>;
};
template <class T>
struct region_leaf_types<constant_node<T>> {
  using type = std::tuple<>;
};
template <class Op, class... C>
struct region_leaf_types<map_node<Op, C...>> {
  using type = decltype(std::tuple_cat(std::declval<typename region_leaf_types<C>::type>()...));
};

// f(leaf) for each leaf of the region at s, in order.
template <class N, class F>
void for_each_region_leaf(const sym<N>& s, F&& f) {
  if constexpr (node_traits<N>::is_map)
    apply_operands([&](const auto&... c) { (for_each_region_leaf(c, f), ...); }, s.node().children);
  else if constexpr (!node_traits<N>::is_constant)
    f(s);
}

// How many leaves the operands before the I-th hold.
template <std::size_t I, class... C>
constexpr std::size_t leaves_before() {
  constexpr std::array<std::size_t, sizeof...(C) + 1> widths{region_leaves<C>..., 0};
  std::size_t at = 0;
  for (std::size_t j = 0; j < I; ++j) at += widths[j];
  return at;
}

template <std::size_t K, class N, class Leaves>
auto rebuild_region(const sym<N>& s, const Leaves& leaves);

template <std::size_t K, class Op, class... C, class Leaves>
auto rebuild_map(const map_node<Op, C...>& node, const Leaves& leaves) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return map(node.op, rebuild_region<K + leaves_before<I, C...>()>(operand_at<I>(node.children), leaves)...);
  }(std::index_sequence_for<C...>{});
}

// The region at s over `leaves` (a tuple of references, the K-th leaf of s
// first): symbolic values give a graph, tensors the value now.
template <std::size_t K, class N, class Leaves>
auto rebuild_region(const sym<N>& s, const Leaves& leaves) {
  if constexpr (node_traits<N>::is_map) return rebuild_map<K>(s.node(), leaves);
  else if constexpr (node_traits<N>::is_constant) return s.node().value;
  else return std::get<K>(leaves);
}

// `then` of the region at `root`, as the function of a static graph.
template <class Root, class Then>
struct region_function {
  const sym<Root>* root;
  Then then;
  template <class... L>
  auto operator()(const L&... leaves) const {
    return then(rebuild_region<0>(*root, std::forward_as_tuple(leaves...)));
  }
};

// then(region at root) over the given leaves, as one static graph: the
// plans of each region and `then` are kept across calls, by signature.
template <class Root, class Then, class... T>
auto run_region(const sym<Root>& root, Then then, const tensor<T>&... leaves) {
  static const std::shared_ptr<plan_cache> plans = std::make_shared<plan_cache>();
  static_graph<region_function<Root, Then>> graph(region_function<Root, Then>{&root, std::move(then)}, plans);
  return graph(leaves...);
}

}  // namespace tandem::detail
