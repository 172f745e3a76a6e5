#pragma once
// The GPU's in-place optimizer update (compiled only by nvcc): one pass over
// a parameter, its gradient and its state, writing the parameter and its
// state, with the same op struct the host's fused update runs
// (nn/optimizer.hpp).

#ifndef __CUDACC__
#error "tandem/kernels/cuda/update.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/kernels/cuda/runtime.hpp"

namespace tandem::detail::cuda {

template <class T, std::size_t S, class Op>
__global__ void update_kernel(Op op, std::int64_t count, std::array<T*, 1 + S> out, const T* parameter,
                              const T* gradient, std::array<const T*, S> state) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    const std::array<T, 1 + S> next = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return op(parameter[i], gradient[i], state[K][i]...);
    }(std::make_index_sequence<S>{});
    for (std::size_t k = 0; k < 1 + S; ++k) out[k][i] = next[k];
  }
}

template <class T, std::size_t S, class Op>
void launch_update(const Op& op, int device_index, std::int64_t count, const std::array<T*, 1 + S>& out,
                   const T* parameter, const T* gradient, const std::array<const T*, S>& state) {
  if (count == 0) return;
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((count + threads - 1) / threads, 1 << 20));
  device_scope on(device_index, Op::name);
  update_kernel<T, S><<<blocks, threads, 0, stream(device_index)>>>(op, count, out, parameter, gradient, state);
  check_launch(Op::name);
}

}  // namespace tandem::detail::cuda
