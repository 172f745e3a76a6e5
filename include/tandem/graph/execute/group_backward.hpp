#pragma once
// A group's backward: one pass writes the adjoint of every floating
// operand, each then summed over the axes its operand was broadcast along.

#include "tandem/graph/execute/executor.hpp"

namespace tandem::detail {

// One pass over the group's output writes the adjoint of every floating
// operand (the forward is recomputed in registers, never stored), once for
// operands whose adjoints are equal (the two sides of an addition); each
// is then summed over the axes its operand was broadcast along. On a device,
// the pass is one launch of the group's adjoint kernel (on_device.hpp).
template <class Root, class Inputs, bool OnDevice>
template <class Kernel, class G, class Operands>
void executor<Root, Inputs, OnDevice>::group_backward(const Kernel& kernel, const G& g, const Operands& operands, const operand_keys& keys,
                                            const shape& out_shape) {
  using C = typename Kernel::compute_type;
  profile_range range(profile_category::backward, "fused ", Kernel::name, " backward");
  range.names_tasks(Kernel::name);
  constexpr auto wanted = floating_operand_positions<Operands>();
  constexpr auto writers = adjoint_writers<Kernel, Operands>();
  constexpr std::size_t m = writers.size();
  if constexpr (m > 0) {
    tensor<C> seed = converted<C>(g);
    std::array<tensor<C>, m> adjoint;
    for (std::size_t k = 0; k < m; ++k) adjoint[k] = tensor<C>(out_shape, device_);
    [&]<std::size_t... F, std::size_t... J, std::size_t... W>(std::index_sequence<F...>, std::index_sequence<J...>,
                                                              std::index_sequence<W...>) {
      // (`writers[F]` here stops GCC 12 with an internal compiler error.)
      gather_adjoints<Kernel, adjoint_writers<Kernel, Operands>()[F]...> op{kernel};
      static_assert(std::is_same_v<row_signature<C, C, decltype(op), output_set<C, m>, C,
                                                 value_of_t_tensor<std::tuple_element_t<J, Operands>>...>,
                                   typename group_rows<Root, typename Kernel::group_class>::adjoint>,
                    "tandem internal: graph/execute/rows.hpp must name the row a group's backward runs");
      if constexpr (OnDevice) {
        launch_adjoints<C>(op, adjoint, out_shape, seed, std::get<J>(operands)...);
      } else {
        output_set<C, m> outs;
        for (std::size_t k = 0; k < m; ++k) outs.data[k] = adjoint[k].data();
        if (common_contiguous_shape(seed, std::get<J>(operands)...))
          elementwise_flat<C, C>(op, numel(out_shape), outs, flat_operand<C>{seed.data(), 1},
                                 flat_operand<value_of_t_tensor<std::tuple_element_t<J, Operands>>>{
                                     std::get<J>(operands).data(), 1}...);
        else
          elementwise<C, C>(op, out_shape, outs, contiguous_strides(out_shape),
                            operand<C>{seed.data(), broadcast_strides(seed, out_shape)},
                            operand<value_of_t_tensor<std::tuple_element_t<J, Operands>>>{
                                std::get<J>(operands).data(), broadcast_strides(std::get<J>(operands), out_shape)}...);
      }
      // Operands sharing an adjoint share its tensor: accumulate_gradient
      // adds into a gradient in place only where nothing else holds it.
      (send_adjoint<wanted[W]>(adjoint[adjoint_written_at<Kernel, Operands>(wanted[W])], operands, keys), ...);
    }(std::make_index_sequence<m>{}, std::make_index_sequence<std::tuple_size_v<Operands>>{},
      std::make_index_sequence<wanted.size()>{});
  }
}

// Operand J's gradient from a group-shaped adjoint: summed over the axes
// the operand was broadcast along, in the operand's own type.
template <class Root, class Inputs, bool OnDevice>
template <std::size_t J, class C, class Operands>
void executor<Root, Inputs, OnDevice>::send_adjoint(const tensor<C>& adjoint, const Operands& operands, const operand_keys& keys) {
  const auto& leaf = std::get<J>(operands);
  add_gradient(keys[J], converted<value_of_t_tensor<decltype(leaf)>>(sum_to(adjoint, leaf.shape())));
}

}  // namespace tandem::detail
