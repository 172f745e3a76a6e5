#pragma once
// A control-flow construct (graph/control.hpp): its node runs the construct
// on its operands' values and keeps the outputs aside; each output node
// reads one. When gradients are wanted, an output's step hands its gradient
// to the construct, and the construct's step, which runs after all of them,
// sends them through its sub-graphs' runs to its operands and to the
// tensors its sub-graphs captured.

#include "tandem/graph/execute/executor.hpp"

namespace tandem::detail {

template <class Root, class Inputs, bool OnDevice>
template <class N>
void executor<Root, Inputs, OnDevice>::run_control(const sym<N>& s, const void* key) {
  const N& node = s.node();
  using impl_type = typename N::fn_type::impl_type;
  if constexpr (requires { impl_type::forward_only_typed; }) {
    // A branch on a forward-only run: its operands and outputs as typed
    // tensors, and its branch's executor on the stack.
    if (!for_backward_) {
      auto outputs =
          apply_operands([&](const auto&... c) { return node.fn.impl.forward(value_or_input(c)...); }, node.children);
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (memo_.emplace(control_output_key(key, K), std::move(std::get<K>(outputs))), ...);
      }(std::make_index_sequence<std::tuple_size_v<decltype(outputs)>>{});
      return;
    }
  }
  std::vector<any_tensor> operands = apply_operands(
      [&](const auto&... c) {
        return std::vector<any_tensor>{
            (for_backward_ ? any_tensor(fresh_leaf(value(c), needs_gradient(c))) : any_tensor(value(c)))...};
      },
      node.children);
  control_run run = node.fn.impl.run(operands, for_backward_);
  if (keeps_captured_)
    for (auto& [captured_key, value] : run.captured) captured_.emplace(captured_key, value);
  std::size_t outputs = run.outputs.size();
  for (std::size_t k = 0; k < outputs; ++k) memo_.emplace(control_output_key(key, k), std::move(run.outputs[k]));
  if (!for_backward_ || !run.backward) return;
  auto keys = apply_operands([](const auto&... c) { return std::vector<const void*>{key_of(c)...}; }, node.children);
  steps_.push_back({key, [backward = std::move(*run.backward), keys = std::move(keys), key, outputs](
                               executor& self, const any_tensor&) mutable {
                        std::vector<std::optional<any_tensor>> seeds(outputs);
                        if (auto* found = self.control_seeds_.find(key))
                          for (std::size_t k = 0; k < found->size() && k < outputs; ++k) seeds[k] = std::move((*found)[k]);
                        keyed_gradients captured;
                        std::vector<std::optional<any_tensor>> gradients = backward(seeds, captured);
                        for (std::size_t k = 0; k < gradients.size() && k < keys.size(); ++k)
                          if (gradients[k]) self.add_any_gradient(keys[k], *gradients[k]);
                        for (auto& [captured_key, g] : captured) self.add_any_gradient(captured_key, g);
                      }});
}

template <class Root, class Inputs, bool OnDevice>
template <class N>
tensor<value_of_t<N>> executor<Root, Inputs, OnDevice>::read_control_output(const sym<N>& s, const void* key) {
  using T = value_of_t<N>;
  constexpr std::size_t index = N::fn_type::index;
  const auto& construct = operand_at<0>(s.node().children);
  static_assert(index + 1 < sizeof(construct.node()), "tandem internal: a construct's output keys leave its node");
  value(construct);
  const void* construct_key = key_of(construct);
  tensor<T> out = std::get<tensor<T>>(*memo_.find(control_output_key(construct_key, index)));
  if constexpr (std::is_floating_point_v<T>) {
    if (for_backward_)
      steps_.push_back({key, [construct_key](executor& self, const any_tensor& g) {
                          auto [seeds, fresh] = self.control_seeds_.try_emplace(construct_key);
                          if (seeds->size() <= index) seeds->resize(index + 1);
                          (*seeds)[index] = g;
                          // The construct's step runs when a gradient is there.
                          self.gradients_.try_emplace(construct_key, any_tensor(tensor<bool>()));
                        }});
  }
  return out;
}

}  // namespace tandem::detail
