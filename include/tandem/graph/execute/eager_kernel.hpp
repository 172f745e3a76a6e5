#pragma once
// A non-elementwise op (a reduction, softmax, a shape op) run by its eager
// kernel; when gradients are wanted the kernel records its own backward on
// fresh leaves standing for its operands, and the step runs it.

#include "tandem/graph/execute/executor.hpp"

namespace tandem::detail {

template <class Root, class Inputs, bool OnDevice>
template <class N>
auto executor<Root, Inputs, OnDevice>::run_apply(const sym<N>& s, const void* key) {
  ++counters_.eager_kernels;
  const N& node = s.node();
  auto operands = apply_operands([&](const auto&... c) { return std::tuple{value(c)...}; }, node.children);
  if (!for_backward_) {
    no_grad plain;
    return std::apply(node.fn, operands);
  }
  // The eager kernel records its own backward on fresh leaves standing for
  // the operands; the step runs it and hands the leaves' gradients on.
  enable_grad recording;
  auto wanted = apply_operands(
      [&](const auto&... c) { return std::array<bool, sizeof...(c)>{needs_gradient(c)...}; }, node.children);
  auto leaves = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple{fresh_leaf(std::get<K>(operands), wanted[K])...};
  }(std::make_index_sequence<std::tuple_size_v<decltype(operands)>>{});
  auto result = std::apply(node.fn, leaves);
  // The tensors the function holds reach their gradients through its own
  // backward; as captured tensors, they are edges of the call's autograd
  // node, which then leads to them (a grad that must record its backward
  // for them finds them there: reaches_other_leaves).
  if constexpr (holds_parameters<N>)
    if (keeps_captured_)
      for (const auto& held : node.fn.held_parameters())
        if (held.requires_grad()) captured_.emplace(edge_of(held).get(), any_tensor(held));
  auto keys = apply_operands([](const auto&... c) { return std::array<const void*, sizeof...(c)>{key_of(c)...}; },
                             node.children);
  if constexpr (std::is_floating_point_v<value_of_t<N>>) {
    if (result.requires_grad())
      steps_.push_back({key, [result, leaves, keys](executor& self, const any_tensor& g) {
                          const auto gradients = backward_within_run(
                              result, std::get<tensor<value_of_t<N>>>(g),
                              std::apply([](const auto&... leaf) { return std::vector<tandem::detail::node*>{edge_of(leaf).get()...}; },
                                         leaves));
                          std::size_t k = 0;
                          std::apply([&](const auto&... leaf) { ((self.send_gradient(leaf, gradients[k], keys[k]), ++k), ...); },
                                     leaves);
                        }});
  }
  return result.detach();
}

}  // namespace tandem::detail
