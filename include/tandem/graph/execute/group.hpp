#pragma once
// A fused group's loop: one elementwise pass over its leaves (or the GEMM
// of a matmul running it as its epilogue), and the step that runs its
// fused adjoint loop.

#include "tandem/graph/execute/executor.hpp"
#include "tandem/graph/execute/binding.hpp"
#include "tandem/graph/execute/epilogue.hpp"
#include "tandem/graph/execute/group_backward.hpp"

namespace tandem::detail {

template <class Root, class Inputs, bool OnDevice>
template <class R>
tensor<value_of_t<R>> executor<Root, Inputs, OnDevice>::run_group(const sym<R>& s, const void* key) {
  using kernel_type = group_kernel<Root, R>;
  using C = typename kernel_type::compute_type;
  using T = value_of_t<R>;
  ++counters_.fused_loops;
  profile_range range(profile_category::group, "fused ", kernel_type::name);
  range.names_tasks(kernel_type::name);
  kernel_type kernel;
  using operands_type = group_operand_tensors_t<Root, R>;
  constexpr std::size_t product_slot = kernel_type::layout::product;
  constexpr bool only_pure_leaves = product_slot == no_product && kernel_type::n_operands == kernel_type::n_pure;
  operand_keys keys;
  // A group reads the graph's inputs and captured tensors in place; a copy
  // of each is taken only for a backward step. (A product's operands are
  // bound as tensors: the product is assigned into its slot.)
  constexpr bool bound_in_place = !only_pure_leaves && product_slot == no_product;
  std::conditional_t<bound_in_place, group_bound_operands_t<Root, R>, std::tuple<>> bound;
  auto operands = [&] {
    if constexpr (only_pure_leaves) {
      return pure_operands<kernel_type>();
    } else if constexpr (bound_in_place) {
      bind_leaves(s, kernel, bound, keys);
      return bound_tensors(bound);
    } else {
      return operands_type{};
    }
  }();
  // The output's shape: an operand's where all have one (referred to, as a
  // copy per call was half of what jit(x + y) still added to the eager
  // op), else out_shape.
  shape out_shape;
  const shape* extent = &out_shape;
  // Where every operand is contiguous and of one shape, the loop runs flat.
  bool flat = false;
  // A product's result, where the group ran as its epilogue.
  std::conditional_t<product_slot != no_product, std::optional<tensor<T>>, no_product_result> done;
  if constexpr (product_slot != no_product) {
    constexpr std::size_t at = kernel_type::n_pure + product_slot;
    product_operands<value_of_t_tensor<std::tuple_element_t<at, decltype(operands)>>> product;
    bind_leaves<at>(s, kernel, operands, keys, product);
    done = multiply_then_group<at, T>(kernel, product, operands, keys[at], out_shape);
    if (!done) flat = std::apply([](const auto&... t) { return common_contiguous_shape(t...) != nullptr; }, operands);
  } else {
    if constexpr (only_pure_leaves) {
      no_product_operands none;
      bind_group<no_product>(s, kernel, operands, keys, none);
    }
    // Operands of one shape, the common case, need no broadcast (as in eager_map).
    std::apply(
        [&](const auto&... t) {
          if (const shape* common = common_contiguous_shape(t...)) {
            flat = true;
            extent = common;
          } else {
            out_shape = broadcast_all<kernel_type>(t...);
          }
        },
        operands);
  }
  tensor<T> out = [&] {
    if constexpr (product_slot != no_product)
      if (done) return std::move(*done);
    return output_of_group<T>(key, *extent, operands);
  }();
  if (!done) {
    std::apply(
        [&](const auto&... t) {
          static_assert(std::is_same_v<row_signature<T, C, kernel_type, T*, value_of_t_tensor<decltype(t)>...>,
                                       typename group_rows<Root, R>::forward>,
                        "tandem internal: graph/execute/rows.hpp must name the row a group runs");
          // Only into()'s destination may be a strided view.
          if (flat && (key != destination_key_ || out.is_contiguous()))
            elementwise_flat<T, C>(kernel, out.numel(), out.data(), flat_operand<value_of_t_tensor<decltype(t)>>{t.data(), 1}...);
          else
            elementwise<T, C>(kernel, *extent, out.data(), dims(out.strides().begin(), out.strides().end()),
                              operand<value_of_t_tensor<decltype(t)>>{t.data(), broadcast_strides(t, *extent)}...);
        },
        operands);
  }
  if (range.recording()) describe_group<kernel_type>(range, operands, out);
  if constexpr (std::is_floating_point_v<T>) {
    if (for_backward_) {
      require_derivatives<kernel_type>();
      if constexpr (only_pure_leaves) keys = pure_keys<kernel_type>();
      // Copied before the operands move: extent may point into one of them.
      shape result_shape = *extent;
      steps_.push_back({key, [kernel, operands = operands_type(std::move(operands)), keys, result_shape](
                                 executor& self, const any_tensor& g) {
                          self.group_backward(kernel, std::get<tensor<T>>(g), operands, keys, result_shape);
                        }});
    }
  }
  return out;
}

}  // namespace tandem::detail
