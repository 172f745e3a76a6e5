#pragma once
// A matmul whose reader's group runs inside the GEMM, block by block, as
// its epilogue; its backward is the eager matmul rule.

#include "tandem/graph/execute/executor.hpp"

namespace tandem::detail {

// The matmul read by a group, run by the GEMM with the group as its
// epilogue where the group has the product's shape: each block of the
// product goes through the group as soon as it is final, while it is in
// cache. In a run without gradients the product is written into the
// group's output (when that has the product's type) and updated in place.
// Returns the group's value, or nothing where the group must still run on
// its own (a product other than of two matrices or of a batch of rows
// and one matrix; a group broadcasting the product to a larger shape):
// the product is then the eager kernel's.
template <class Root, class Inputs, bool OnDevice>
template <std::size_t At, class T, class Kernel, class P, class Operands>
std::optional<tensor<T>> executor<Root, Inputs, OnDevice>::multiply_then_group(const Kernel& kernel, const product_operands<P>& product,
                                                                     Operands& operands, const void* key, shape& out_shape) {
  using C = typename Kernel::compute_type;
  ++counters_.eager_kernels;
  const tensor<P>& a = product.a;
  const tensor<P>& b = product.b;
  // A batch of rows against one matrix (x W for x [B, T, K]) is one
  // product of all the rows, laid out as the batched product is.
  bool fits = a.dim() >= 2 && b.dim() == 2 && a.shape(-1) == b.shape(0) && rows_fold(a);
  shape product_shape;
  if (fits) {
    product_shape = a.shape();
    product_shape.back() = b.shape(1);
    out_shape = extent_with<Kernel, At>(operands, product_shape);
    fits = out_shape == product_shape;
  }
  std::optional<tensor<T>> result;
  tensor<P> p;
  if (!fits) {
    no_grad plain;
    p = matmul(a, b);
    std::get<At>(operands) = p;
    out_shape = std::apply([](const auto&... t) { return broadcast_all<Kernel>(t...); }, operands);
  } else {
    ++counters_.matmul_epilogues;
    tensor<T> out(out_shape);
    if constexpr (std::is_same_v<T, P>) p = for_backward_ ? tensor<P>(product_shape) : out;
    else p = tensor<P>(product_shape);
    std::get<At>(operands) = p;
    std::apply(
        [&](const auto&... t) {
          dims out_strides = contiguous_strides(out_shape);
          std::array<dims, sizeof...(t)> strides{broadcast_strides(t, out_shape)...};
          auto space = [&]<std::size_t... K>(std::index_sequence<K...>) {
            return merge_axes<1 + sizeof...(t)>(out_shape, {&out_strides, &strides[K]...});
          }(std::index_sequence_for<decltype(t)...>{});
          const std::tuple<const value_of_t_tensor<decltype(t)>*...> bases{t.data()...};
          static_assert(std::is_same_v<row_signature<T, C, Kernel, T*, value_of_t_tensor<decltype(t)>...>,
                                       typename group_rows<Root, typename Kernel::group_class>::forward>,
                        "tandem internal: graph/execute/rows.hpp must name the row an epilogue runs");
          const std::int64_t n = product_shape.back(), m = n == 0 ? 0 : numel(product_shape) / n;
          auto group = [&](const gemm_block& block) {
            if (block.cols == n)
              elementwise_range<T, C>(kernel, space, out.data() + block.row * n, bases, block.row * n,
                                      (block.row + block.rows) * n);
            else
              elementwise_block<T, C>(kernel, space, out.data(), bases, n, block.row, block.rows, block.col,
                                      block.cols);
          };
          host_product_then(m, n, a.shape(-1), a, b, p.data(), group);
        },
        operands);
    result = out;
  }
  if (for_backward_) record_product(p, product, key);
  return result;
}

// The group's shape, with the product's shape in place of operand At
// (not computed yet).
template <class Root, class Inputs, bool OnDevice>
template <class Kernel, std::size_t At, class Operands>
shape executor<Root, Inputs, OnDevice>::extent_with(const Operands& operands, const shape& product_shape) {
  auto shape_at = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) -> const shape& {
    if constexpr (J == At) return product_shape;
    else return std::get<J>(operands).shape();
  };
  return [&]<std::size_t... J>(std::index_sequence<J...>) {
    shape out;
    if ((try_broadcast(out, shape_at(std::integral_constant<std::size_t, J>{})) && ...)) return out;
    std::string all;
    ((all += (all.empty() ? "" : ", ") + to_string(shape_at(std::integral_constant<std::size_t, J>{}))), ...);
    throw shape_error(std::string("tandem::") + Kernel::name + ": shapes " + all + " cannot be broadcast together");
  }(std::make_index_sequence<std::tuple_size_v<Operands>>{});
}

// The product's backward: the eager matmul rule, recorded on fresh leaves
// standing for its operands, as run_apply does for every eager kernel.
template <class Root, class Inputs, bool OnDevice>
template <class P>
void executor<Root, Inputs, OnDevice>::record_product(const tensor<P>& p, const product_operands<P>& product, const void* key) {
  enable_grad recording;
  tensor<P> a = fresh_leaf(product.a, product.grad_a), b = fresh_leaf(product.b, product.grad_b);
  if (!product.grad_a && !product.grad_b) return;
  tensor<P> tracked = p.detach();
  record(matmul_op{}, tracked, a, b);
  steps_.push_back({key, [tracked, a, b, key_a = product.key_a, key_b = product.key_b](executor& self,
                                                                                       const any_tensor& g) {
                      tracked.backward(std::get<tensor<P>>(g));
                      self.send_leaf(a, key_a);
                      self.send_leaf(b, key_b);
                    }});
}

}  // namespace tandem::detail
