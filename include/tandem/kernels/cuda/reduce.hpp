#pragma once
// The GPU's reduction kernels (compiled only by nvcc): sum, prod, max, min
// (and mean, a sum divided by its count) over any axes of a strided tensor,
// a fused summation's group summed in the same pass, and argmax, argmin.
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
#include <string>
#include <type_traits>

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

// The launch of a kernel that gives each output a block (a grid-stride loop
// over outputs past 2^20): the fewest threads, a power of two from 32 to
// 256 (for the halving), that cover the reduced length.
struct reduction_launch {
  unsigned threads, blocks;
};
inline reduction_launch block_per_output(std::int64_t outputs, std::int64_t length) {
  unsigned threads = 32;
  while (threads < 256 && threads < length) threads *= 2;
  return {threads, static_cast<unsigned>(std::min<std::int64_t>(outputs, 1 << 20))};
}

template <class A, class R, class T, class Reducer>
void launch_reduce(const Reducer& reducer, int device_index, const T* in, const shape& kept_shape,
                   const dims& kept_strides, const shape& reduced_shape, const dims& reduced_strides, R* out,
                   bool divide, const char* op) {
  const std::int64_t outputs = numel(kept_shape), length = numel(reduced_shape);
  if (outputs == 0) return;
  const strided_space kept = merged_space(kept_shape, kept_strides, op);
  const strided_space reduced = merged_space(reduced_shape, reduced_strides, op);
  const auto [threads, blocks] = block_per_output(outputs, length);
  device_scope on(device_index, op);
  reduce_kernel<A, R, T><<<blocks, threads, threads * sizeof(A), stream(device_index)>>>(reducer, in, kept, reduced, out,
                                                                                       outputs, length, divide);
  check_launch(op);
}


template <class T>
struct split_input {
  const T* data;  // null: read `scalar`
  std::int64_t kept_strides[cuda_max_axes];
  std::int64_t reduced_strides[cuda_max_axes];
  T scalar;
};

__device__ __forceinline__ std::int64_t offset_over(std::int64_t flat, const index_space& space,
                                                    const std::int64_t* strides) {
  std::int64_t offset = 0;
  for (int axis = space.rank - 1; axis >= 0; --axis) {
    offset += flat % space.extents[axis] * strides[axis];
    flat /= space.extents[axis];
  }
  return offset;
}

template <class T>
__device__ __forceinline__ T read_split(const split_input<T>& in, std::int64_t kept_flat, std::int64_t reduced_flat,
                                        const index_space& kept, const index_space& reduced) {
  if (!in.data) return in.scalar;
  return in.data[offset_over(kept_flat, kept, in.kept_strides) + offset_over(reduced_flat, reduced, in.reduced_strides)];
}

// A fused summation's one pass: each output is one block's, whose threads
// sum op(in...) at every blockDim-th position, then combine by halves: the
// order of the reduction kernel above over the group's values, so one pass
// and two round alike.
template <class R, class Op, class... In>
__global__ void group_sum_kernel(Op op, index_space kept, index_space reduced, R* out, std::int64_t outputs,
                                 std::int64_t length, bool divide, split_input<In>... in) {
  extern __shared__ unsigned char shared_bytes[];
  R* partial = reinterpret_cast<R*>(shared_bytes);
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    R folded = R(0);
    for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x)
      folded = folded + static_cast<R>(op(static_cast<R>(read_split(in, o, j, kept, reduced))...));
    partial[threadIdx.x] = folded;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] = partial[threadIdx.x] + partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = divide ? partial[0] / static_cast<R>(length) : partial[0];
    __syncthreads();
  }
}

inline index_space plain_space(const shape& extents, const char* op) {
  if (extents.size() > cuda_max_axes)
    throw device_error(std::string("tandem::") + op + ": a GPU kernel indexes at most " +
                       std::to_string(cuda_max_axes) + " axes, and shape " + to_string(extents) + " has more");
  index_space space{static_cast<int>(extents.size()), {}};
  std::copy(extents.begin(), extents.end(), space.extents);
  return space;
}

template <class T>
split_input<T> to_split_input(const split_operand<T>& operand) {
  split_input<T> in{operand.data, {}, {}, operand.scalar};
  if (operand.data) {
    std::copy(operand.kept_strides.begin(), operand.kept_strides.end(), in.kept_strides);
    std::copy(operand.reduced_strides.begin(), operand.reduced_strides.end(), in.reduced_strides);
  }
  return in;
}

// The slot's function (cuda_group_sum_slot).
template <class R, class Op, class... In>
void launch_group_sum(const Op& op, int device_index, const shape& kept_shape, const shape& reduced_shape, R* out,
                      bool divide, const split_operand<In>&... in) {
  const std::int64_t outputs = numel(kept_shape), length = numel(reduced_shape);
  if (outputs == 0) return;
  const index_space kept = plain_space(kept_shape, Op::name), reduced = plain_space(reduced_shape, Op::name);
  const auto [threads, blocks] = block_per_output(outputs, length);
  device_scope on(device_index, Op::name);
  group_sum_kernel<R><<<blocks, threads, threads * sizeof(R), stream(device_index)>>>(
      op, kept, reduced, out, outputs, length, divide, to_split_input(in)...);
  check_launch(Op::name);
}

// Whether value a at index ia wins over value b at index ib: the first NaN,
// else the larger (or smaller), else the first of equals. A total order, so
// the result does not depend on which thread folds what.
template <bool Largest, class T>
__device__ __forceinline__ bool wins(T a, std::int64_t ia, T b, std::int64_t ib) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool a_nan = a != a, b_nan = b != b;
    if (a_nan || b_nan) return a_nan && (!b_nan || ia < ib);
  }
  if (Largest ? a > b : a < b) return true;
  return a == b && ia < ib;
}

template <class T, bool Largest>
__global__ void arg_extreme_kernel(const T* in, strided_space kept, strided_space reduced, std::int64_t* out,
                                   std::int64_t outputs, std::int64_t length) {
  extern __shared__ unsigned char shared_bytes[];
  std::int64_t* best_index = reinterpret_cast<std::int64_t*>(shared_bytes);
  T* best_value = reinterpret_cast<T*>(best_index + blockDim.x);
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    const T* base = in + offset_in(o, kept);
    std::int64_t index = -1;
    T value{};
    for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      const T v = base[offset_in(j, reduced)];
      if (index < 0 || wins<Largest>(v, j, value, index)) value = v, index = j;
    }
    best_index[threadIdx.x] = index;
    best_value[threadIdx.x] = value;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        const std::int64_t other = best_index[threadIdx.x + half];
        if (other >= 0 && (best_index[threadIdx.x] < 0 || wins<Largest>(best_value[threadIdx.x + half], other,
                                                                          best_value[threadIdx.x],
                                                                          best_index[threadIdx.x]))) {
          best_index[threadIdx.x] = other;
          best_value[threadIdx.x] = best_value[threadIdx.x + half];
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = best_index[0];
    __syncthreads();
  }
}

// The slot's function (cuda_arg_extreme_slot); the host made sure that
// every output has elements to choose from.
template <class T, bool Largest>
void launch_arg_extreme(int device_index, const T* in, const shape& kept_shape, const dims& kept_strides,
                        const shape& reduced_shape, const dims& reduced_strides, std::int64_t* out, const char* op) {
  const std::int64_t outputs = numel(kept_shape), length = numel(reduced_shape);
  if (outputs == 0) return;
  const strided_space kept = merged_space(kept_shape, kept_strides, op);
  const strided_space reduced = merged_space(reduced_shape, reduced_strides, op);
  const auto [threads, blocks] = block_per_output(outputs, length);
  device_scope on(device_index, op);
  arg_extreme_kernel<T, Largest><<<blocks, threads, threads * (sizeof(std::int64_t) + sizeof(T)), stream(device_index)>>>(
      in, kept, reduced, out, outputs, length);
  check_launch(op);
}

}  // namespace tandem::detail::cuda
