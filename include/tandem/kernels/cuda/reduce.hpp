#pragma once
// The GPU's reduction kernel (compiled only by nvcc): sum, prod, max, min
// (and mean, a sum divided by its count) over any axes of a strided tensor.
// The input comes as two index spaces, the kept axes and the reduced ones,
// each with its strides; every output element is one block's work: its
// threads fold every blockDim-th element in A, then combine their partial
// results in shared memory by halves.

#ifndef __CUDACC__
#error "tandem/kernels/cuda/reduce.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <algorithm>
#include <array>
#include <cstdint>

#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/kernels/cuda/elementwise.hpp"
#include "tandem/kernels/cuda/runtime.hpp"

namespace tandem::detail::cuda {

struct strided_space {
  index_space space;
  std::int64_t strides[cuda_max_axes];
};

__device__ __forceinline__ std::int64_t offset_in(std::int64_t flat, const strided_space& s) {
  std::int64_t offset = 0;
  for (int axis = s.space.rank - 1; axis >= 0; --axis) {
    offset += flat % s.space.extents[axis] * s.strides[axis];
    flat /= s.space.extents[axis];
  }
  return offset;
}

template <class A, class R, class T, class Reducer>
__global__ void reduce_kernel(Reducer reducer, const T* in, strided_space kept, strided_space reduced, R* out,
                              std::int64_t outputs, std::int64_t length, bool divide) {
  extern __shared__ unsigned char shared_bytes[];
  A* partial = reinterpret_cast<A*>(shared_bytes);
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    const T* base = in + offset_in(o, kept);
    A folded = Reducer::template identity<A>();
    for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x)
      folded = reducer(folded, static_cast<A>(base[offset_in(j, reduced)]));
    partial[threadIdx.x] = folded;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] = reducer(partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = static_cast<R>(divide ? partial[0] / static_cast<A>(length) : partial[0]);
    __syncthreads();
  }
}

inline strided_space merged_space(const shape& extents, const dims& strides, const char* op) {
  std::array<dims, 1> arrays{strides};
  strided_space s{merge_axes(extents, arrays, op), {}};
  std::copy(arrays[0].begin(), arrays[0].end(), s.strides);
  return s;
}

template <class A, class R, class T, class Reducer>
void launch_reduce(const Reducer& reducer, int device_index, const T* in, const shape& kept_shape,
                   const dims& kept_strides, const shape& reduced_shape, const dims& reduced_strides, R* out,
                   bool divide, const char* op) {
  const std::int64_t outputs = numel(kept_shape), length = numel(reduced_shape);
  if (outputs == 0) return;
  const strided_space kept = merged_space(kept_shape, kept_strides, op);
  const strided_space reduced = merged_space(reduced_shape, reduced_strides, op);
  unsigned threads = 32;
  while (threads < 256 && threads < length) threads *= 2;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(outputs, 1 << 20));
  device_scope on(device_index, op);
  reduce_kernel<A, R, T><<<blocks, threads, threads * sizeof(A), stream(device_index)>>>(reducer, in, kept, reduced, out,
                                                                                       outputs, length, divide);
  check_launch(op);
}


}  // namespace tandem::detail::cuda
