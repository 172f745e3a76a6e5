#pragma once
// The GPU's index kernel (compiled only by nvcc): index_select, gather,
// index_add and scatter_add as one loop over a space of positions, each
// reading its index, then copying from the indexed position (reading) or
// adding into it (scattering; atomically, since indices may repeat). The
// host checked and normalized the indices (ops/shape.hpp).

#ifndef __CUDACC__
#error "tandem/kernels/cuda/index.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/kernels/cuda/elementwise.hpp"
#include "tandem/kernels/cuda/runtime.hpp"

namespace tandem::detail::cuda {

struct index_geometry {
  index_space space;
  int axis;
  std::int64_t index_strides[cuda_max_axes];
  std::int64_t in_strides[cuda_max_axes];
  std::int64_t out_strides[cuda_max_axes];
};

// bool adds as the host's bool += does: true once anything true arrives,
// which every writer agrees on, so plain stores do.
template <class T>
__device__ __forceinline__ void add_atomically(T* at, T value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (value) *at = true;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(value));
  } else {
    atomicAdd(at, value);
  }
}

template <class T>
__global__ void index_kernel(index_geometry g, const std::int64_t* index, const T* in, T* out, std::int64_t count,
                             bool scatter) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < count; p += step) {
    std::int64_t at_index = 0, at_in = 0, at_out = 0, along = 0;
    for_each_axis_index(p, g.space, [&](int axis, std::int64_t c) {
      at_index += c * g.index_strides[axis];
      at_in += c * g.in_strides[axis];
      at_out += c * g.out_strides[axis];
      if (axis == g.axis) along = c;
    });
    const std::int64_t moved = index[at_index] - along;
    if (scatter) add_atomically(out + at_out + moved * g.out_strides[g.axis], in[at_in]);
    else out[at_out] = in[at_in + moved * g.in_strides[g.axis]];
  }
}

// The slot's function (cuda_index_slot).
template <class T>
void launch_index(int device_index, const shape& space, std::int64_t axis, const std::int64_t* index,
                  const dims& index_strides, const T* in, const dims& in_strides, T* out, const dims& out_strides,
                  bool scatter, const char* op) {
  const std::int64_t count = numel(space);
  if (count == 0) return;
  if (space.size() > cuda_max_axes)
    throw device_error(std::string("tandem::") + op + ": a GPU kernel indexes at most " +
                       std::to_string(cuda_max_axes) + " axes, and shape " + to_string(space) + " has more");
  index_geometry g{{static_cast<int>(space.size()), false, {}, {}}, static_cast<int>(axis), {}, {}, {}};
  for (std::size_t a = 0; a < space.size(); ++a) {
    g.space.extents[a] = space[a];
    g.index_strides[a] = index_strides[a];
    g.in_strides[a] = in_strides[a];
    g.out_strides[a] = out_strides[a];
  }
  g.space = with_divisors(g.space);
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((count + threads - 1) / threads, 1 << 20));
  device_scope on(device_index, op);
  index_kernel<T><<<blocks, threads, 0, stream(device_index)>>>(g, index, in, out, count, scatter);
  check_launch(op);
}

}  // namespace tandem::detail::cuda
