#pragma once
// The GPU's fused attention (compiled only by nvcc): one thread per query
// row for the forward and the backward's dQ, one per key row for dK and dV,
// each running the row functions of kernels/cuda/attention_rows.hpp. The
// two backward passes run in order on the device's stream, the second
// reading the first's delta.
//
// Threads of a warp hold neighbouring rows of one head and walk the other
// side's rows in the same order, so each row they read is one broadcast
// load shared by the warp, served from the L1 cache.

#ifndef __CUDACC__
#error "tandem/kernels/cuda/attention.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <cstdint>

#include "tandem/kernels/cuda/attention_rows.hpp"
#include "tandem/kernels/cuda/runtime.hpp"

namespace tandem::detail::cuda {

inline constexpr int attention_threads = 128;

// Rows of every head, `rows` per head, one thread each, numbered head by
// head.
inline unsigned attention_blocks(std::int64_t heads, std::int64_t rows) {
  return static_cast<unsigned>((heads * rows + attention_threads - 1) / attention_threads);
}

__device__ inline std::int64_t attention_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

template <std::int64_t Width, class T>
__global__ void attention_forward_kernel(device_attention<T> p, device_attention_rows<T*> out, T* logsumexp) {
  const std::int64_t t = attention_thread();
  if (t < p.heads * p.tq) device_attention_forward_row<Width>(p, t / p.tq, t % p.tq, out, logsumexp);
}

template <std::int64_t Width, class T>
__global__ void attention_query_gradient_kernel(device_attention<T> p, device_attention_gradients<T> a,
                                                const T* logsumexp) {
  const std::int64_t t = attention_thread();
  if (t < p.heads * p.tq) device_attention_query_gradient_row<Width>(p, a, t / p.tq, t % p.tq, logsumexp);
}

template <std::int64_t Width, class T>
__global__ void attention_key_gradient_kernel(device_attention<T> p, device_attention_gradients<T> a,
                                              const T* logsumexp) {
  const std::int64_t t = attention_thread();
  if (t < p.heads * p.tk) device_attention_key_gradient_row<Width>(p, a, t / p.tk, t % p.tk, logsumexp);
}

// The slots' functions (cuda_attention_forward_slot, cuda_attention_backward_slot).
template <class T>
void launch_attention_forward(int device_index, const device_attention<T>& p, const device_attention_rows<T*>& out,
                              T* logsumexp) {
  if (p.heads == 0 || p.tq == 0) return;
  device_scope on(device_index, "scaled_dot_product_attention");
  with_device_attention_width(p.d, p.dv, [&](auto width) {
    attention_forward_kernel<width()><<<attention_blocks(p.heads, p.tq), attention_threads, 0, stream(device_index)>>>(
        p, out, logsumexp);
  });
  check_launch("scaled_dot_product_attention");
}

template <class T>
void launch_attention_backward(int device_index, const device_attention<T>& p, const device_attention_gradients<T>& a,
                               const T* logsumexp) {
  if (p.heads == 0) return;
  device_scope on(device_index, "scaled_dot_product_attention");
  with_device_attention_width(p.d, p.dv, [&](auto width) {
    if (p.tq > 0)
      attention_query_gradient_kernel<width()>
          <<<attention_blocks(p.heads, p.tq), attention_threads, 0, stream(device_index)>>>(p, a, logsumexp);
    if (p.tk > 0)
      attention_key_gradient_kernel<width()>
          <<<attention_blocks(p.heads, p.tk), attention_threads, 0, stream(device_index)>>>(p, a, logsumexp);
  });
  check_launch("scaled_dot_product_attention");
}

}  // namespace tandem::detail::cuda
