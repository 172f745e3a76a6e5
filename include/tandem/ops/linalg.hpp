#pragma once
// matmul with NumPy's rules: 1-d operands become a row (left) or a column
// (right) and that axis is dropped again; leading axes are batch axes and
// broadcast. Each product runs the packed GEMM kernel through the operands'
// own strides, so transposed and sliced views are not copied; on a GPU,
// cuBLAS does, through the same strides where it can.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/gemm.hpp"
#include "tandem/kernels/cpu/gemm_bf16.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/ops/elementwise/map.hpp"
#include "tandem/ops/rounded_for_products.hpp"

namespace tandem {

// dA = g B^T and dB = A^T g, with 1-d operands lifted to matrices and batch
// axes summed back to each operand's shape.
struct matmul_op {
  static constexpr const char* name = "matmul";
  template <std::size_t I, class G, class Y, class A, class B>
  auto derivative(const G& g, const Y&, const A& a, const B& b) const {
    auto a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
    auto b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    auto g2 = g;
    if (a.dim() == 1 && b.dim() == 1) g2 = g.reshape({1, 1});
    else if (a.dim() == 1) g2 = g.unsqueeze(-2);
    else if (b.dim() == 1) g2 = g.unsqueeze(-1);
    if constexpr (I == 0) {
      return sum_to(matmul(g2, b2.transpose(-1, -2)), a2.shape()).reshape(a.shape());
    } else {
      // A matrix shared by every batch (a layer's weight): its gradient is
      // one product as deep as all the batches' rows together, not a
      // product per batch summed afterwards.
      if (b2.dim() == 2 && a2.dim() > 2)
        return matmul(a2.reshape({-1, a2.shape(-1)}).transpose(0, 1), g2.reshape({-1, g2.shape(-1)})).reshape(b.shape());
      return sum_to(matmul(a2.transpose(-1, -2), g2), b2.shape()).reshape(b.shape());
    }
  }
};

namespace detail {

// Whether x's leading axes fold into its row axis (the one before last):
// x is then a matrix of all its rows, read in place with the row axis's
// stride.
template <class T>
bool rows_fold(const tensor<T>& x) {
  if (x.dim() < 2) return true;
  // Axes of one element may have any stride: each other axis must step
  // over the whole of the axes after it.
  std::int64_t span = x.strides()[x.dim() - 2] * x.shape(x.dim() - 2);
  for (std::int64_t axis = x.dim() - 3; axis >= 0; --axis) {
    if (x.shape(axis) == 1) continue;
    if (x.strides()[axis] != span) return false;
    span *= x.shape(axis);
  }
  return true;
}

// Where batch `index` (row-major over the batch axes) starts in a and in b.
template <class T>
std::pair<std::int64_t, std::int64_t> batch_offsets(std::int64_t index, const shape& batch, const tensor<T>& a,
                                                    const tensor<T>& b) {
  std::int64_t off_a = 0, off_b = 0, rest = index;
  for (std::size_t axis = batch.size(); axis-- > 0;) {
    std::int64_t i = rest % batch[axis];
    rest /= batch[axis];
    off_a += i * a.strides()[axis];
    off_b += i * b.strides()[axis];
  }
  return {off_a, off_b};
}

// One product on the host: bfloat16's sums in float, rounded once into a
// bfloat16 C or stored into a float one (kernels/cpu/gemm_bf16.hpp), the
// other types' in their own type.
template <class T, class P>
void host_gemm(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<P> a, strided_matrix<P> b, T* c,
               std::int64_t ldc) {
  if constexpr (std::is_same_v<P, bfloat16>) gemm_bf16(m, n, k, a, b, c, ldc);
  else gemm<T>(m, n, k, a, b, c, ldc);
}

// The batched product on the host: the gemm kernel per batch, batches
// shared among the threads when each is small. Operands of type P, C of
// type T (float sums of bfloat16 operands under autocast).
template <class T, class P>
tensor<T> host_matmul(const tensor<P>& a, const tensor<P>& b, const shape& batch, std::int64_t m, std::int64_t n,
                      std::int64_t k, const shape& out_shape) {
  tensor<T> out(out_shape);
  std::int64_t batches = numel(batch);
  // One matrix against a batch whose rows fold together (x W for x [B, T,
  // K]): one product of all the rows, which packs the matrix once.
  const bool shared_b = std::all_of(b.strides().begin(), b.strides().end() - 2, [](std::int64_t s) { return s == 0; });
  if (batches > 1 && shared_b && rows_fold(a)) {
    host_gemm<T, P>(batches * m, n, k, {a.data(), a.strides()[a.dim() - 2], a.strides()[a.dim() - 1]},
                    {b.data(), b.strides()[b.dim() - 2], b.strides()[b.dim() - 1]}, out.data(), n);
    return out;
  }
  auto run_one = [&](std::int64_t index) {
    auto [off_a, off_b] = batch_offsets(index, batch, a, b);
    host_gemm<T, P>(m, n, k, {a.data() + off_a, a.strides()[a.dim() - 2], a.strides()[a.dim() - 1]},
                    {b.data() + off_b, b.strides()[b.dim() - 2], b.strides()[b.dim() - 1]}, out.data() + index * m * n,
                    n);
  };
  std::int64_t work = m * n * std::max<std::int64_t>(k, 1);
  if (batches > 1 && work < (1 << 18)) {
    parallel_for(batches, std::max<std::int64_t>(1, (1 << 18) / std::max<std::int64_t>(work, 1)),
                 [&](std::int64_t first, std::int64_t last) {
                   for (std::int64_t i = first; i < last; ++i) run_one(i);
                 });
  } else {
    for (std::int64_t i = 0; i < batches; ++i) run_one(i);
  }
  return out;
}

// C (m x n, row stride n) = A B for A whose rows fold ([..., m, k]) and a
// matrix B (k x n), with the epilogue called on C's blocks: a static
// graph's product. Under autocast, float operands are rounded first (a
// bfloat16 product on its own kernel, the epilogue then run over C's rows
// by the threads).
template <class P, class Epilogue>
void host_product_then(std::int64_t m, std::int64_t n, std::int64_t k, const tensor<P>& a_in, const tensor<P>& b_in,
                       P* c, const Epilogue& epilogue) {
  if constexpr (std::is_same_v<P, float>) {
    if (autocast_dtype() == dtype::bfloat16) {
      const tensor<bfloat16> a = a_in.detach().template astype<bfloat16>(), b = b_in.detach().template astype<bfloat16>();
      gemm_bf16<float>(m, n, k, {a.data(), k, 1}, {b.data(), n, 1}, c, n);
      if (n > 0)
        parallel_for(m, std::max<std::int64_t>(1, 16384 / n), [&](std::int64_t first, std::int64_t last) {
          epilogue(gemm_block{first, last - first, 0, n});
        });
      return;
    }
  }
  const tensor<P> a = rounded_for_products(a_in), b = rounded_for_products(b_in);
  gemm<P>(m, n, k, {a.data(), a.strides()[a.dim() - 2], a.strides()[a.dim() - 1]},
          {b.data(), b.strides()[0], b.strides()[1]}, c, n, epilogue);
}

// The batched product on the GPU that holds both operands (cuBLAS through
// kernels/cuda/gemm.hpp). An operand cuBLAS cannot read in place (neither
// step 1, or broadcast rows) is copied dense first.
template <class T>
tensor<T> device_matmul(tensor<T> a, tensor<T> b, const shape& batch, std::int64_t m, std::int64_t n, std::int64_t k,
                        const shape& out_shape) {
  const device where = operands_device<matmul_op>(a, b);
  if constexpr (!std::is_floating_point_v<T>) {
    throw device_error("tandem::matmul: the GPU multiplies float and double matrices; convert these " +
                       std::string(dtype_name(dtype_of<T>)) + " operands with astype<float>() first");
  } else {
    runtime_for(where, "matmul");
    constexpr std::int64_t largest = std::numeric_limits<int>::max();
    if (m > largest || n > largest || k > largest)
      throw device_error("tandem::matmul: cuBLAS takes matrices of at most " + std::to_string(largest) +
                         " rows and columns (shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) + ")");
    tensor<T> out(out_shape, where);
    if (out.numel() == 0) return out;
    if (k == 0) return out.fill(0);
    auto steps = [](const tensor<T>& x) { return std::pair{x.strides()[x.dim() - 2], x.strides()[x.dim() - 1]}; };
    if (auto [rows, columns] = steps(a); !blas_readable(m, k, rows, columns)) a = a.contiguous();
    if (auto [rows, columns] = steps(b); !blas_readable(k, n, rows, columns)) b = b.contiguous();
    auto kernel = cuda_gemm_slot<T>.load(std::memory_order_acquire);
    if (!kernel) throw_missing_kernel("matmul", "matrix products");
    gemm_batch<T> work{m, n, k, a.device_data(), steps(a).first, steps(a).second, {},
                       b.device_data(), steps(b).first, steps(b).second, {}, out.device_data()};
    const std::int64_t batches = numel(batch);
    for (std::int64_t index = 0; index < batches; ++index) {
      auto [off_a, off_b] = batch_offsets(index, batch, a, b);
      work.a_offsets.push_back(off_a);
      work.b_offsets.push_back(off_b);
    }
    kernel(where.index(), work);
    return out;
  }
}

template <class T>
tensor<T> matmul_same(const tensor<T>& a_in, const tensor<T>& b_in) {
  profile_range range(profile_category::op, "matmul");
  if (a_in.dim() == 0 || b_in.dim() == 0)
    throw shape_error("tandem::matmul: operands must have at least one axis (shapes " + to_string(a_in.shape()) +
                      " and " + to_string(b_in.shape()) + ")");
  tensor<T> a = a_in.dim() == 1 ? a_in.detach().unsqueeze(0) : a_in.detach();
  tensor<T> b = b_in.dim() == 1 ? b_in.detach().unsqueeze(1) : b_in.detach();
  std::int64_t m = a.shape(-2), k = a.shape(-1), n = b.shape(-1);
  if (b.shape(-2) != k)
    throw shape_error("tandem::matmul: inner dimensions must agree (shapes " + to_string(a_in.shape()) + " and " +
                      to_string(b_in.shape()) + ")");

  shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
  shape batch = batch_a;
  if (!try_broadcast(batch, batch_b))
    throw shape_error("tandem::matmul: batch dimensions do not broadcast (shapes " + to_string(a_in.shape()) +
                      " and " + to_string(b_in.shape()) + ")");
  shape full_a = batch, full_b = batch;
  full_a.push_back(m), full_a.push_back(k);
  full_b.push_back(k), full_b.push_back(n);
  shape out_shape = batch;
  out_shape.push_back(m), out_shape.push_back(n);
  const bool on_host = a.device().is_cpu() && b.device().is_cpu();
  tensor<T> out = [&] {
    if (!on_host) refuse_autocast_on_device<T>("matmul");
    // Under autocast, rounded before they are broadcast (a weight shared
    // by the batches is rounded once); bfloat16 operands on their kernel.
    if constexpr (std::is_same_v<T, float>) {
      if (autocast_dtype() == dtype::bfloat16)
        return host_matmul<float, bfloat16>(a.template astype<bfloat16>().expand(full_a),
                                            b.template astype<bfloat16>().expand(full_b), batch, m, n, k, out_shape);
    }
    a = rounded_for_products(a).expand(full_a);
    b = rounded_for_products(b).expand(full_b);
    return on_host ? host_matmul<T, T>(a, b, batch, m, n, k, out_shape) : device_matmul(a, b, batch, m, n, k, out_shape);
  }();
  if (a_in.dim() == 1 && b_in.dim() == 1) out = out.reshape({});
  else if (a_in.dim() == 1) out = out.squeeze(-2);
  else if (b_in.dim() == 1) out = out.squeeze(-1);
  if (range.recording()) {
    describe_op(range, out, a_in, b_in);
    range.describe([&](profile_event& e) { e.flops = 2 * m * n * k * numel(batch); });
  }
  record(matmul_op{}, out, a_in, b_in);
  return out;
}

}  // namespace detail

template <element A, element B>
tensor<promote_t<A, B>> matmul(const tensor<A>& a, const tensor<B>& b) {
  static_assert(!std::is_same_v<A, bool> && !std::is_same_v<B, bool>,
                "tandem::matmul: bool tensors cannot be multiplied as matrices; convert them with astype<T>() first");
  using T = promote_t<A, B>;
  // 16-bit floats sum in float and round the product once: bfloat16 in its
  // own kernel, float16 as float, its values as they are (a float16
  // tensor's product is not one autocast rounds).
  if constexpr (std::is_same_v<T, float16>) {
    const autocast exact(dtype::float32);
    return detail::matmul_same(a.template astype<float>(), b.template astype<float>()).template astype<T>();
  }
  else if constexpr (std::is_same_v<A, T> && std::is_same_v<B, T>) return detail::matmul_same(a, b);
  else return detail::matmul_same(a.template astype<T>(), b.template astype<T>());
}

}  // namespace tandem
