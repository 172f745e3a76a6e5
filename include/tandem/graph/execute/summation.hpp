#pragma once
// A sum or mean computed inside the loop of the group feeding it, and its
// backward: the group's adjoint loop with a broadcast seed, or, at a
// unit-seeded output, the same pass as the forward (or the backward alone,
// where the output's value is not read).

#include <limits>

#include "tandem/graph/execute/executor.hpp"
#include "tandem/graph/execute/binding.hpp"
#include "tandem/graph/execute/group_backward.hpp"

namespace tandem::detail {

// A sum or mean computed inside the loop of the group feeding it: the
// group runs a tile at a time into a per-thread buffer that the reduction
// reads while it is in cache, so the group's value never reaches memory.
// Its backward is the group's adjoint loop with the reduction's gradient
// as a broadcast seed; at a unit-seeded output it runs in the same pass.
template <class Root, class Inputs, bool OnDevice>
template <class N>
tensor<value_of_t<N>> executor<Root, Inputs, OnDevice>::run_summation(const sym<N>& s, const void* key) {
  using R = std::tuple_element_t<0, typename node_traits<N>::children>;
  using kernel_type = group_kernel<Root, R>;
  using T = value_of_t<N>;
  ++counters_.fused_loops;
  const N& node = s.node();
  profile_range range(profile_category::group, "fused ", kernel_type::name, " into a sum or mean");
  range.names_tasks(kernel_type::name);
  kernel_type kernel;
  group_operand_tensors_t<Root, R> operands;
  operand_keys keys;
  bind_leaves(operand_at<0>(node.children), kernel, operands, keys);
  shape extent = std::apply([](const auto&... t) { return broadcast_all<kernel_type>(t...); }, operands);
  reduction_shape plan = plan_reduction(extent, node.fn.ax, node.fn.keepdims, node.name);

  // Rows ([kept..., reduced...]) unless every reduced axis comes before
  // every kept one: then columns, so the group's loop still runs along
  // its innermost axis.
  bool columns = !plan.kept_order.empty() && !plan.reduced_order.empty() &&
                 plan.reduced_order.back() < plan.kept_order[0];
  dims order = columns ? plan.reduced_order : plan.kept_order;
  for (auto axis : columns ? plan.kept_order : plan.reduced_order) order.push_back(axis);
  shape arranged;
  for (auto axis : order) arranged.push_back(extent[axis]);
  auto arrange_strides = [&](const dims& strides) {
    dims result;
    for (auto axis : order) result.push_back(strides[axis]);
    return result;
  };

  // Only an output read by nothing else is seeded with exactly ones.
  constexpr bool may_run_one_pass = summation_may_run_one_pass<Root, N>;
  bool one_pass = may_run_one_pass && for_backward_ && key == unit_seed_;
  if (for_backward_) require_derivatives<kernel_type>();
  if (one_pass) ++counters_.forward_backward_passes;
  constexpr bool is_mean = N::fn_type::is_mean;
  T seed_scale = is_mean ? T(1) / static_cast<T>(plan.length) : T(1);

  // A value nobody reads (grad, not value_and_grad): the backward alone.
  // Summing the value cost a third of such a gradient's time.
  if constexpr (std::is_floating_point_v<T>) {
    if (one_pass && !unit_seed_value_read_)
      return summation_backward_alone(kernel, operands, keys, extent,
                                      plan_reduction(extent, node.fn.ax, true, node.name).out_shape, plan.out_shape,
                                      seed_scale);
  }
  auto finish = [&] {
    if constexpr (is_mean)
      return [length = static_cast<T>(plan.length)](T total) { return total / length; };
    else
      return [](T total) { return total; };
  }();

  tensor<T> out(plan.out_shape);
  std::apply(
      [&](const auto&... t) {
        dims tile_strides = contiguous_strides(arranged);
        std::array<dims, sizeof...(t)> strides{arrange_strides(broadcast_strides(t, extent))...};
        auto space = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return merge_axes<1 + sizeof...(t)>(arranged, {&tile_strides, &strides[K]...});
        }(std::index_sequence_for<decltype(t)...>{});
        auto reduce = [&](const auto& source) {
          if (columns)
            reduce_columns_from<sum_reducer, T>(sum_reducer{}, source, plan.kept, plan.length, out.data(), finish);
          else
            reduce_rows_from<sum_reducer, T>(sum_reducer{}, source, plan.kept, plan.length, out.data(), finish);
        };
        using bases_type = std::tuple<const value_of_t_tensor<decltype(t)>*...>;
        static_assert(std::is_same_v<row_signature<T, T, kernel_type, T*, value_of_t_tensor<decltype(t)>...>,
                                     typename group_rows<Root, R>::template summed<T>>,
                      "tandem internal: graph/execute/rows.hpp must name the row a fused summation runs");
        if (!one_pass) {
          reduce(fused_source<T, 0, kernel_type, 1 + sizeof...(t), value_of_t_tensor<decltype(t)>...>{
              kernel, space, bases_type{t.data()...}});
          return;
        }
        if constexpr (may_run_one_pass) {
          static constexpr auto wanted = floating_operand_positions<decltype(operands)>();
          [&]<std::size_t... F>(std::index_sequence<F...>) {
            std::array<tensor<T>, wanted.size()> adjoint{(static_cast<void>(F), tensor<T>(arranged))...};
            value_then_adjoints<kernel_type, wanted[F]...> op{kernel, seed_scale};
            static_assert(std::is_same_v<row_signature<T, T, decltype(op), output_set<T, 1 + wanted.size()>,
                                                       value_of_t_tensor<decltype(t)>...>,
                                         typename group_rows<Root, R>::template summed_with_adjoints<T>>,
                          "tandem internal: graph/execute/rows.hpp must name the row a fused summation runs");
            reduce(fused_source<T, wanted.size(), decltype(op), 1 + sizeof...(t), value_of_t_tensor<decltype(t)>...>{
                op, space, bases_type{t.data()...}, {adjoint[F].data()...}});
            dims back(order.size());
            for (std::size_t i = 0; i < order.size(); ++i) back[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
            auto in_place = [&](const tensor<T>& a) { return a.permute(std::span<const std::int64_t>(back.data(), back.size())); };
            (send_adjoint<wanted[F]>(in_place(adjoint[F]), operands, keys), ...);
          }(std::make_index_sequence<wanted.size()>{});
        }
      },
      operands);
  if (range.recording()) describe_group<kernel_type>(range, operands, out);

  if constexpr (std::is_floating_point_v<T>) {
    if (for_backward_ && !one_pass)
      push_summation_backward(kernel, operands, keys, extent,
                              plan_reduction(extent, node.fn.ax, true, node.name).out_shape, seed_scale, key);
  }
  return out;
}

// The backward alone, from the seed broadcast over the summed axes (kept as
// axes of 1 in `kept_dims`); the value, which nobody reads, is NaN, so that
// a read would not pass unnoticed.
template <class Root, class Inputs, bool OnDevice>
template <class T, class Kernel, class Operands>
tensor<T> executor<Root, Inputs, OnDevice>::summation_backward_alone(const Kernel& kernel, const Operands& operands,
                                                                     const operand_keys& keys, const shape& extent,
                                                                     const shape& kept_dims, const shape& out_shape,
                                                                     T seed_scale) {
  group_backward(kernel, full<T>(kept_dims, seed_scale, device_), operands, keys, extent);
  return full<T>(out_shape, std::numeric_limits<T>::quiet_NaN(), device_);
}

// The backward's step: the group's adjoint pass from the gradient that
// reaches the summation, broadcast over the summed axes (a mean's scaled).
template <class Root, class Inputs, bool OnDevice>
template <class T, class Kernel, class Operands>
void executor<Root, Inputs, OnDevice>::push_summation_backward(const Kernel& kernel, const Operands& operands,
                                                               const operand_keys& keys, const shape& extent,
                                                               const shape& kept_dims, T seed_scale, const void* key) {
  steps_.push_back({key, [kernel, operands, keys, extent, kept_dims, seed_scale](executor& self, const any_tensor& g) {
                      tensor<T> seed = std::get<tensor<T>>(g).reshape(kept_dims);
                      if (seed_scale != T(1)) seed = seed * seed_scale;
                      self.group_backward(kernel, seed, operands, keys, extent);
                    }});
}

}  // namespace tandem::detail
