#pragma once
// The GPU's random draw (compiled only by nvcc): element i is the law (core/
// random.hpp) applied to Philox's words for counter first + i, the same
// host-and-device code the host's draw runs, so a seed gives the same
// numbers on either device.

#ifndef __CUDACC__
#error "tandem/kernels/cuda/random.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <algorithm>
#include <cstdint>

#include "tandem/core/random.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/kernels/cuda/runtime.hpp"

namespace tandem::detail::cuda {

template <class T, class Law>
__global__ void random_kernel(Law law, T* out, std::int64_t count, std::uint64_t seed, std::uint64_t first) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step)
    out[i] = law(philox(seed, first + static_cast<std::uint64_t>(i)));
}

// The slot's function (cuda_random_slot).
template <class T, class Law>
void launch_random(const Law& law, int device_index, T* out, std::int64_t count, std::uint64_t seed,
                   std::uint64_t first) {
  if (count == 0) return;
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((count + threads - 1) / threads, 1 << 20));
  device_scope on(device_index, "random");
  random_kernel<T><<<blocks, threads, 0, stream(device_index)>>>(law, out, count, seed, first);
  check_launch("random");
}

}  // namespace tandem::detail::cuda
