#pragma once
// The GPU's reduction kernels (compiled only by nvcc): sum, prod, max, min
// (and mean, a sum divided by its count) over any axes of a strided tensor,
// a fused summation's group summed in the same pass, and argmax, argmin.
// The input comes as two index spaces, the kept axes and the reduced ones,
// each with its strides. Each output is the work of one block, or, where
// the outputs are too few to fill the GPU, of several, whose partial
// results a second kernel combines (plan_device_reduction says how many,
// and in which order: the same for every reduction, so a fused summation
// rounds as the two passes would).

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

__device__ __forceinline__ std::int64_t offset_over(std::int64_t flat, const index_space& space,
                                                    const std::int64_t* strides) {
  std::int64_t offset = 0;
  for_each_axis_index(flat, space, [&](int axis, std::int64_t index) { offset += index * strides[axis]; });
  return offset;
}

__device__ __forceinline__ std::int64_t offset_in(std::int64_t flat, const strided_space& s) {
  return offset_over(flat, s.space, s.strides);
}

// Thread t of an output's block s folds its share of the output's elements
// (in the plan's order) into partial[t]. The block's result, its threads'
// partials combined by halves, is the output itself where one block has it
// (splits == 1), else partials[o * splits + s] for the second pass.
template <class A, class Fold>
__device__ __forceinline__ void fold_share(const Fold& fold, A* partial, A identity, std::int64_t s,
                                           std::int64_t splits, std::int64_t length) {
  A folded = identity;
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * splits;
  for (std::int64_t j = s * blockDim.x + threadIdx.x; j < length; j += step) folded = fold(folded, j);
  partial[threadIdx.x] = folded;
  __syncthreads();
}

template <class A, class Combine>
__device__ __forceinline__ A combine_by_halves(const Combine& combine, A* partial) {
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] = combine(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  return partial[0];
}

template <class A, class R>
__device__ __forceinline__ R finished(A total, bool divide, std::int64_t length) {
  return static_cast<R>(divide ? total / static_cast<A>(length) : total);
}

template <class A, class R, class T, class Reducer>
__global__ void reduce_kernel(Reducer reducer, const T* in, strided_space kept, strided_space reduced, R* out,
                              A* partials, std::int64_t outputs, std::int64_t splits, std::int64_t length,
                              bool divide) {
  extern __shared__ unsigned char shared_bytes[];
  A* partial = reinterpret_cast<A*>(shared_bytes);
  for (std::int64_t w = blockIdx.x; w < outputs * splits; w += gridDim.x) {
    const std::int64_t o = w / splits;
    const T* base = in + offset_in(o, kept);
    fold_share(
        [&](A folded, std::int64_t j) { return reducer(folded, static_cast<A>(base[offset_in(j, reduced)])); }, partial,
        Reducer::template identity<A>(), w % splits, splits, length);
    const A total = combine_by_halves(reducer, partial);
    if (threadIdx.x == 0) {
      if (splits == 1) out[o] = finished<A, R>(total, divide, length);
      else partials[w] = total;
    }
    __syncthreads();
  }
}

// The plan's many short outputs (threads == 1): thread t folds output t's
// elements in order, the order of a one-thread block above.
template <class A, class R, class T, class Reducer>
__global__ void reduce_each_kernel(Reducer reducer, const T* in, strided_space kept, strided_space reduced, R* out,
                                   std::int64_t outputs, std::int64_t length, bool divide) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += step) {
    const T* base = in + offset_in(o, kept);
    A folded = Reducer::template identity<A>();
    for (std::int64_t j = 0; j < length; ++j) folded = reducer(folded, static_cast<A>(base[offset_in(j, reduced)]));
    out[o] = finished<A, R>(folded, divide, length);
  }
}

// A grid of each_output_threads-thread blocks, a thread for each of `outputs`.
inline constexpr unsigned each_output_threads = 256;
inline unsigned blocks_for_each(std::int64_t outputs) {
  return static_cast<unsigned>(
      std::min<std::int64_t>((outputs + each_output_threads - 1) / each_output_threads, std::int64_t{1} << 20));
}

// The second pass of a split reduction: each output's partials, combined by
// halves over a power of two of threads.
template <class A, class R, class Combine>
__global__ void combine_partials_kernel(Combine combine, A identity, const A* partials, R* out, std::int64_t outputs,
                                        std::int64_t splits, std::int64_t length, bool divide) {
  extern __shared__ unsigned char shared_bytes[];
  A* partial = reinterpret_cast<A*>(shared_bytes);
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    partial[threadIdx.x] = threadIdx.x < splits ? partials[o * splits + threadIdx.x] : identity;
    __syncthreads();
    const A total = combine_by_halves(combine, partial);
    if (threadIdx.x == 0) out[o] = finished<A, R>(total, divide, length);
    __syncthreads();
  }
}

inline strided_space merged_space(const shape& extents, const dims& strides, const char* op) {
  std::array<dims, 1> arrays{strides};
  strided_space s{merge_axes(extents, arrays, op), {}};
  std::copy(arrays[0].begin(), arrays[0].end(), s.strides);
  return s;
}

inline unsigned grid_of(std::int64_t blocks) { return static_cast<unsigned>(std::min<std::int64_t>(blocks, 1 << 20)); }

// A reduction's launches on the device's stream: `first(partials)` queues
// the first pass with the plan's grid; where the plan splits outputs, the
// partials live in scratch memory until the second pass has read them.
template <class A, class R, class Combine, class First>
void launch_planned(const device_reduction_plan& plan, int device_index, std::int64_t outputs, std::int64_t length,
                    R* out, bool divide, const Combine& combine, A identity, const char* op, const First& first) {
  device_scope on(device_index, op);
  if (plan.splits == 1) {
    first(static_cast<A*>(nullptr));
    check_launch(op);
    return;
  }
  scratch partials(device_index, static_cast<std::size_t>(outputs * plan.splits) * sizeof(A));
  first(partials.as<A>());
  check_launch(op);
  const auto threads = static_cast<unsigned>(plan.combine_threads);
  combine_partials_kernel<A, R><<<grid_of(outputs), threads, threads * sizeof(A), stream(device_index)>>>(
      combine, identity, partials.as<A>(), out, outputs, plan.splits, length, divide);
  check_launch(op);
}

template <class A, class R, class T, class Reducer>
void launch_reduce(const Reducer& reducer, int device_index, const T* in, const shape& kept_shape,
                   const dims& kept_strides, const shape& reduced_shape, const dims& reduced_strides, R* out,
                   bool divide, const char* op) {
  const std::int64_t outputs = numel(kept_shape), length = numel(reduced_shape);
  if (outputs == 0) return;
  const strided_space kept = merged_space(kept_shape, kept_strides, op);
  const strided_space reduced = merged_space(reduced_shape, reduced_strides, op);
  const device_reduction_plan plan = plan_device_reduction(outputs, length);
  if (plan.threads == 1) {
    device_scope on(device_index, op);
    reduce_each_kernel<A, R, T><<<blocks_for_each(outputs), each_output_threads, 0, stream(device_index)>>>(
        reducer, in, kept, reduced, out, outputs, length, divide);
    check_launch(op);
    return;
  }
  const auto threads = static_cast<unsigned>(plan.threads);
  launch_planned<A>(plan, device_index, outputs, length, out, divide, reducer, Reducer::template identity<A>(), op,
                    [&](A* partials) {
                      reduce_kernel<A, R, T><<<grid_of(outputs * plan.splits), threads, threads * sizeof(A),
                                               stream(device_index)>>>(reducer, in, kept, reduced, out, partials,
                                                                       outputs, plan.splits, length, divide);
                    });
}

template <class T>
struct split_input {
  const T* data;  // null: read `scalar`
  std::int64_t kept_strides[cuda_max_axes];
  std::int64_t reduced_strides[cuda_max_axes];
  T scalar;
};

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
// What a fused summation's pass stores besides its sum: nothing, or the
// group's adjoints at every position (cuda_group_sum_adjoints_slot).
struct no_adjoints {};
template <class R, std::size_t M>
struct split_outputs {
  R* data[M];
  std::int64_t kept_strides[cuda_max_axes];
  std::int64_t reduced_strides[cuda_max_axes];
};

template <class R, class V>
__device__ __forceinline__ R summand(const no_adjoints&, const V& value, std::int64_t, std::int64_t, const index_space&,
                                     const index_space&) {
  return static_cast<R>(value);
}
template <class R, std::size_t M, class V>
__device__ __forceinline__ R summand(const split_outputs<R, M>& adjoints, const V& values, std::int64_t o,
                                     std::int64_t j, const index_space& kept, const index_space& reduced) {
  const std::int64_t at =
      offset_over(o, kept, adjoints.kept_strides) + offset_over(j, reduced, adjoints.reduced_strides);
  for (std::size_t k = 0; k < M; ++k) adjoints.data[k][at] = static_cast<R>(values[k + 1]);
  return static_cast<R>(values[0]);
}

template <class R, class Op, class Adjoints, class... In>
__global__ void group_sum_kernel(Op op, index_space kept, index_space reduced, R* out, R* partials, Adjoints adjoints,
                                 std::int64_t outputs, std::int64_t splits, std::int64_t length, bool divide,
                                 split_input<In>... in) {
  extern __shared__ unsigned char shared_bytes[];
  R* partial = reinterpret_cast<R*>(shared_bytes);
  for (std::int64_t w = blockIdx.x; w < outputs * splits; w += gridDim.x) {
    const std::int64_t o = w / splits;
    fold_share(
        [&](R folded, std::int64_t j) {
          return folded + summand<R>(adjoints, op(static_cast<R>(read_split(in, o, j, kept, reduced))...), o, j, kept,
                                     reduced);
        },
        partial, R(0), w % splits, splits, length);
    const R total = combine_by_halves(sum_reducer{}, partial);
    if (threadIdx.x == 0) {
      if (splits == 1) out[o] = finished<R, R>(total, divide, length);
      else partials[w] = total;
    }
    __syncthreads();
  }
}

// The plan's many short outputs (threads == 1), a thread for each.
template <class R, class Op, class Adjoints, class... In>
__global__ void group_sum_each_kernel(Op op, index_space kept, index_space reduced, R* out, Adjoints adjoints,
                                      std::int64_t outputs, std::int64_t length, bool divide, split_input<In>... in) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += step) {
    R folded = R(0);
    for (std::int64_t j = 0; j < length; ++j)
      folded = folded + summand<R>(adjoints, op(static_cast<R>(read_split(in, o, j, kept, reduced))...), o, j, kept,
                                   reduced);
    out[o] = finished<R, R>(folded, divide, length);
  }
}

inline index_space plain_space(const shape& extents, const char* op) {
  if (extents.size() > cuda_max_axes)
    throw device_error(std::string("tandem::") + op + ": a GPU kernel indexes at most " +
                       std::to_string(cuda_max_axes) + " axes, and shape " + to_string(extents) + " has more");
  index_space space{static_cast<int>(extents.size()), false, {}, {}};
  std::copy(extents.begin(), extents.end(), space.extents);
  return with_divisors(space);
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

template <class R, class Op, class Adjoints, class... In>
void launch_summing(const Op& op, int device_index, const shape& kept_shape, const shape& reduced_shape, R* out,
                    bool divide, const Adjoints& adjoints, const split_operand<In>&... in) {
  const std::int64_t outputs = numel(kept_shape), length = numel(reduced_shape);
  if (outputs == 0) return;
  const index_space kept = plain_space(kept_shape, Op::name), reduced = plain_space(reduced_shape, Op::name);
  const device_reduction_plan plan = plan_device_reduction(outputs, length);
  if (plan.threads == 1) {
    device_scope on(device_index, Op::name);
    group_sum_each_kernel<R><<<blocks_for_each(outputs), each_output_threads, 0, stream(device_index)>>>(
        op, kept, reduced, out, adjoints, outputs, length, divide, to_split_input(in)...);
    check_launch(Op::name);
    return;
  }
  const auto threads = static_cast<unsigned>(plan.threads);
  launch_planned<R>(plan, device_index, outputs, length, out, divide, sum_reducer{}, R(0), Op::name, [&](R* partials) {
    group_sum_kernel<R><<<grid_of(outputs * plan.splits), threads, threads * sizeof(R), stream(device_index)>>>(
        op, kept, reduced, out, partials, adjoints, outputs, plan.splits, length, divide, to_split_input(in)...);
  });
}

// The slot's function (cuda_group_sum_slot).
template <class R, class Op, class... In>
void launch_group_sum(const Op& op, int device_index, const shape& kept_shape, const shape& reduced_shape, R* out,
                      bool divide, const split_operand<In>&... in) {
  launch_summing(op, device_index, kept_shape, reduced_shape, out, divide, no_adjoints{}, in...);
}

// The slot's function (cuda_group_sum_adjoints_slot).
template <class R, class Op, std::size_t M, class... In>
void launch_group_sum_adjoints(const Op& op, int device_index, const shape& kept_shape, const shape& reduced_shape,
                               R* out, bool divide, const std::array<R*, M>& adjoints,
                               const dims& adjoint_kept_strides, const dims& adjoint_reduced_strides,
                               const split_operand<In>&... in) {
  split_outputs<R, M> written{};
  for (std::size_t k = 0; k < M; ++k) written.data[k] = adjoints[k];
  std::copy(adjoint_kept_strides.begin(), adjoint_kept_strides.end(), written.kept_strides);
  std::copy(adjoint_reduced_strides.begin(), adjoint_reduced_strides.end(), written.reduced_strides);
  launch_summing(op, device_index, kept_shape, reduced_shape, out, divide, written, in...);
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
  // One block per output in any case: the winner does not depend on the
  // order, and a block of at least a warp halves its candidates.
  const auto threads = static_cast<unsigned>(std::max<std::int64_t>(plan_device_reduction(outputs, length).threads, 32));
  device_scope on(device_index, op);
  arg_extreme_kernel<T, Largest><<<grid_of(outputs), threads, threads * (sizeof(std::int64_t) + sizeof(T)),
                                   stream(device_index)>>>(in, kept, reduced, out, outputs, length);
  check_launch(op);
}

}  // namespace tandem::detail::cuda
