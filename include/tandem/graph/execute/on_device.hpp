#pragma once
// The strategies of an executor OnDevice (a static graph on a GPU): a
// fused group is one launch of its kernel over the group's leaves, read
// through their strides; its backward, one launch of its adjoint kernel
// writing every floating leaf's adjoint, each then summed to its leaf's
// shape by the eager ops. A fused summation is one launch that sums its
// group's values as it computes them (no temporary), and its backward the
// group's adjoint launch; a product read by a group is cuBLAS's, then one
// more operand of the group. The kernels are the ones tandem::cuda::compile installed for the
// graph (kernels/cuda/install.hpp); the rows are those of
// graph/execute/rows.hpp, so the host's and the device's runs agree on
// what they launch.

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <utility>

#include "tandem/graph/execute/binding.hpp"
#include "tandem/graph/execute/executor.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"

namespace tandem::detail {

[[noreturn]] inline void throw_missing_graph_kernel(const char* op) {
  throw device_error(std::string("tandem::jit: the fused kernel of ") + op +
                     " was not compiled for the GPU in this program (tandem::cuda::compile(graph, arguments...) in a "
                     "translation unit compiled by nvcc compiles a graph's kernels)");
}

template <class T>
device_operand<T> strided_device_operand(const tensor<T>& t, const shape& out_shape) {
  return {t.device_data(), broadcast_strides(t, out_shape), T()};
}

template <class Root, class Inputs, bool OnDevice>
template <class R, class C, class Kernel, class Operands>
void executor<Root, Inputs, OnDevice>::launch_group(const Kernel& kernel, const tensor<R>& out, const Operands& operands) {
  std::apply(
      [&](const auto&... t) {
        // A tensor the graph captured may live elsewhere than its inputs.
        common_device(Kernel::name, {place_of(out), place_of(t)...});
        auto launch =
            cuda_elementwise_slot<R, C, Kernel, value_of_t_tensor<decltype(t)>...>.load(std::memory_order_acquire);
        if (!launch) throw_missing_graph_kernel(Kernel::name);
        tensor<R> target = out;
        launch(kernel, device_.index(), out.shape(), target.device_data(), dims(out.strides().begin(), out.strides().end()),
               strided_device_operand(t, out.shape())...);
      },
      operands);
}

template <class Root, class Inputs, bool OnDevice>
template <class R>
tensor<value_of_t<R>> executor<Root, Inputs, OnDevice>::run_group_on_device(const sym<R>& s, const void* key) {
  using kernel_type = group_kernel<Root, R>;
  using C = typename kernel_type::compute_type;
  using T = value_of_t<R>;
  ++counters_.fused_loops;
  kernel_type kernel;
  group_operand_tensors_t<Root, R> operands;
  operand_keys keys;
  constexpr std::size_t product_slot = kernel_type::layout::product;
  if constexpr (product_slot != no_product) {
    constexpr std::size_t at = kernel_type::n_pure + product_slot;
    using P = value_of_t_tensor<std::tuple_element_t<at, decltype(operands)>>;
    product_operands<P> product;
    bind_leaves<at>(s, kernel, operands, keys, product);
    ++counters_.eager_kernels;
    tensor<P> p;
    {
      no_grad plain;
      p = matmul(product.a, product.b);
    }
    std::get<at>(operands) = p;
    if (for_backward_) record_product(p, product, keys[at]);
  } else {
    bind_leaves(s, kernel, operands, keys);
  }
  shape out_shape = std::apply([](const auto&... t) { return broadcast_all<kernel_type>(t...); }, operands);
  tensor<T> out = output_of_group<T>(key, out_shape, operands);
  launch_group<T, C>(kernel, out, operands);
  if constexpr (std::is_floating_point_v<T>) {
    if (for_backward_) {
      require_derivatives<kernel_type>();
      steps_.push_back({key, [kernel, operands, keys, out_shape](executor& self, const any_tensor& g) {
                          self.group_backward(kernel, std::get<tensor<T>>(g), operands, keys, out_shape);
                        }});
    }
  }
  return out;
}

template <class Root, class Inputs, bool OnDevice>
template <class N>
tensor<value_of_t<N>> executor<Root, Inputs, OnDevice>::run_summation_on_device(const sym<N>& s, const void* key) {
  using R = std::tuple_element_t<0, typename node_traits<N>::children>;
  using kernel_type = group_kernel<Root, R>;
  using T = value_of_t<N>;
  ++counters_.fused_loops;
  const N& node = s.node();
  kernel_type kernel;
  group_operand_tensors_t<Root, R> operands;
  operand_keys keys;
  bind_leaves(operand_at<0>(node.children), kernel, operands, keys);
  shape extent = std::apply([](const auto&... t) { return broadcast_all<kernel_type>(t...); }, operands);
  reduction_shape plan = plan_reduction(extent, node.fn.ax, node.fn.keepdims, node.name);
  if (for_backward_) require_derivatives<kernel_type>();
  constexpr bool is_mean = N::fn_type::is_mean;
  const T seed_scale = is_mean ? T(1) / static_cast<T>(plan.length) : T(1);
  // At a unit seed, as on the host: the backward alone where the value is
  // not read (grad), else the sum and the adjoints in one launch
  // (value_and_grad, a training step's loss).
  constexpr bool may_run_one_pass = std::is_floating_point_v<T> && summation_may_run_one_pass<Root, N>;
  const bool one_pass = may_run_one_pass && for_backward_ && key == unit_seed_;
  if (one_pass) ++counters_.forward_backward_passes;
  if constexpr (may_run_one_pass) {
    if (one_pass && !unit_seed_value_read_)
      return summation_backward_alone(kernel, operands, keys, extent,
                                      plan_reduction(extent, node.fn.ax, true, node.name).out_shape, plan.out_shape,
                                      seed_scale);
  }
  tensor<T> out(plan.out_shape, device_);
  if constexpr (may_run_one_pass) {
    if (one_pass) {
      static constexpr auto wanted = floating_operand_positions<decltype(operands)>();
      [&]<std::size_t... F>(std::index_sequence<F...>) {
        std::array<tensor<T>, wanted.size()> adjoints{(static_cast<void>(F), tensor<T>(extent, device_))...};
        const value_then_adjoints<kernel_type, wanted[F]...> op{kernel, seed_scale};
        launch_group_sum(op, out, adjoints, extent, node.fn.ax, node.fn.keepdims, is_mean, operands);
        (send_adjoint<wanted[F]>(adjoints[F], operands, keys), ...);
      }(std::make_index_sequence<wanted.size()>{});
      return out;
    }
  }
  std::array<tensor<T>, 0> no_adjoints;
  launch_group_sum(kernel, out, no_adjoints, extent, node.fn.ax, node.fn.keepdims, is_mean, operands);
  if constexpr (std::is_floating_point_v<T>) {
    if (for_backward_)
      push_summation_backward(kernel, operands, keys, extent,
                              plan_reduction(extent, node.fn.ax, true, node.name).out_shape, seed_scale, key);
  }
  return out;
}

// The group's values, computed in T (rows.hpp: summed<T>), summed over the
// axes into `out` in the same launch (cuda_group_sum_slot); with M
// adjoints, op is the group's value_then_adjoints (rows.hpp:
// summed_with_adjoints<T>), and they are written over the group's extent,
// dense, in the same launch too (cuda_group_sum_adjoints_slot).
template <class Root, class Inputs, bool OnDevice>
template <class T, class Op, std::size_t M, class Operands>
void executor<Root, Inputs, OnDevice>::launch_group_sum(const Op& op, tensor<T>& out,
                                                        std::array<tensor<T>, M>& adjoints, const shape& extent,
                                                        const axes& ax, bool keepdims, bool is_mean,
                                                        const Operands& operands) {
  auto split_strides = [&](const dims& strides) {
    return split_axes(extent, std::span<const std::int64_t>(strides.data(), strides.size()), ax, keepdims, Op::name);
  };
  std::apply(
      [&](const auto&... t) {
        common_device(Op::name, {place_of(out), place_of(t)...});
        auto split = [&](const auto& operand) {
          using E = value_of_t_tensor<decltype(operand)>;
          const strided_reduction s = split_strides(broadcast_strides(operand, extent));
          return split_operand<E>{operand.device_data(), s.kept_strides, s.reduced_strides, E()};
        };
        const strided_reduction dense = split_strides(contiguous_strides(extent));
        if constexpr (M == 0) {
          auto launch = cuda_group_sum_slot<T, Op, value_of_t_tensor<decltype(t)>...>.load(std::memory_order_acquire);
          if (!launch) throw_missing_graph_kernel(Op::name);
          launch(op, device_.index(), dense.kept_shape, dense.reduced_shape, out.device_data(), is_mean, split(t)...);
        } else {
          auto launch = cuda_group_sum_adjoints_slot<T, Op, M, value_of_t_tensor<decltype(t)>...>.load(
              std::memory_order_acquire);
          if (!launch) throw_missing_graph_kernel(Op::name);
          std::array<T*, M> written{};
          for (std::size_t k = 0; k < M; ++k) written[k] = adjoints[k].device_data();
          launch(op, device_.index(), dense.kept_shape, dense.reduced_shape, out.device_data(), is_mean, written,
                 dense.kept_strides, dense.reduced_strides, split(t)...);
        }
      },
      operands);
}

// The adjoint row (gather_adjoints) over the group's shape: one launch
// writing every adjoint, the seed and the operands read through their
// strides.
template <class Root, class Inputs, bool OnDevice>
template <class C, class Op, std::size_t M, class... In>
void executor<Root, Inputs, OnDevice>::launch_adjoints(const Op& op, std::array<tensor<C>, M>& adjoints,
                                                       const shape& out_shape, const tensor<C>& seed,
                                                       const tensor<In>&... operands) {
  auto launch = cuda_elementwise_outputs_slot<C, C, Op, M, C, In...>.load(std::memory_order_acquire);
  if (!launch) throw_missing_graph_kernel(decltype(Op::kernel)::name);
  std::array<C*, M> outs{};
  for (std::size_t k = 0; k < M; ++k) outs[k] = adjoints[k].device_data();
  launch(op, device_.index(), out_shape, outs, contiguous_strides(out_shape), strided_device_operand(seed, out_shape),
         strided_device_operand(operands, out_shape)...);
}

}  // namespace tandem::detail
