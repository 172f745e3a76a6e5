#pragma once
// The GPU kernels as the host sees them: slots that a translation unit
// compiled by nvcc fills (kernels/cuda/elementwise.hpp, installed by
// <tandem/cuda.hpp>), read by every translation unit. This header needs no
// CUDA headers, so the eager ops test a tensor's device and reach its kernel
// the same way whether nvcc compiled them or not.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/core/device.hpp"
#include "tandem/core/device_runtime.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/shape.hpp"

namespace tandem::detail {

// The most axes a GPU kernel indexes, after contiguous axes are merged.
inline constexpr std::size_t cuda_max_axes = 8;

// An operand as a GPU kernel reads it: device memory with strides over the
// output's axes (0 along broadcast axes), or, where `data` is null, a
// scalar passed by value.
template <class T>
struct device_operand {
  const T* data;
  dims strides;
  T scalar;
};

template <class T>
device_operand<T> device_scalar(T value) {
  return {nullptr, {}, value};
}

// out = op(in...) elementwise over `out_shape`, out written with `out_strides`,
// computed in C. Runs on the device's stream; returns before it finishes.
template <class R, class C, class Op, class... In>
using cuda_elementwise_kernel = void (*)(const Op& op, int device_index, const shape& out_shape, R* out,
                                         const dims& out_strides, const device_operand<In>&... in);

template <class R, class C, class Op, class... In>
inline std::atomic<cuda_elementwise_kernel<R, C, Op, In...>> cuda_elementwise_slot{nullptr};

// out[k] = op(in...)[k] for each of M outputs that share `out_strides`: a
// fused group's adjoint loop (graph/execute/on_device.hpp).
template <class R, class C, class Op, std::size_t M, class... In>
using cuda_elementwise_outputs_kernel = void (*)(const Op& op, int device_index, const shape& out_shape,
                                                 const std::array<R*, M>& out, const dims& out_strides,
                                                 const device_operand<In>&... in);

template <class R, class C, class Op, std::size_t M, class... In>
inline std::atomic<cuda_elementwise_outputs_kernel<R, C, Op, M, In...>> cuda_elementwise_outputs_slot{nullptr};

[[noreturn]] inline void throw_missing_elementwise_kernel(const char* op) {
  throw device_error(std::string("tandem::") + op + ": no CUDA kernel for these element types in this program "
                     "(a translation unit compiled by nvcc that includes <tandem/cuda.hpp> compiles the built-in "
                     "ops' kernels; tandem::cuda::compile_elementwise<Op, T...>() compiles another op's)");
}

template <class R, class C, class Op, class... In>
void run_cuda_elementwise(const char* op_name, const Op& op, device where, const shape& out_shape, R* out,
                          const dims& out_strides, const device_operand<In>&... in) {
  runtime_for(where, op_name);
  auto kernel = cuda_elementwise_slot<R, C, Op, In...>.load(std::memory_order_acquire);
  if (!kernel) throw_missing_elementwise_kernel(op_name);
  kernel(op, where.index(), out_shape, out, out_strides, in...);
}

[[noreturn]] inline void throw_missing_kernel(const char* op, const char* what) {
  throw device_error(std::string("tandem::") + op + ": no CUDA kernel for " + what +
                     " in this program (a translation unit compiled by nvcc that includes <tandem/cuda.hpp> compiles "
                     "them)");
}

// How the GPU spreads a reduction of `outputs` results over `length`
// elements each (kernels/cuda/reduce.hpp; the emulated GPU of the tests
// follows the same order): blocks of `threads` (a power of two from 32 to
// 256, for the halving), and, where the outputs are too few to fill a
// GPU, `splits` blocks per output. Thread t of block s folds element
// s * threads + t and every (threads * splits)-th after it; the block's
// threads then combine by halves; a second kernel combines an output's
// `splits` partial results by halves too, over `combine_threads` (a power
// of two, the missing ones the identity). One block per output would run
// a sum over all of a large tensor on one multiprocessor of a hundred.
struct device_reduction_plan {
  std::int64_t threads, splits, combine_threads;
};

inline device_reduction_plan plan_device_reduction(std::int64_t outputs, std::int64_t length) {
  // Many short outputs (pooling windows, a small last axis): one thread
  // folds each output whole, in order (threads == 1: the kernels give a
  // block of threads as many outputs). A block per output would idle most
  // of its threads, and the GPU would schedule hundreds of thousands of
  // blocks (a max pool's 400k windows of 4: 0.4 ms on an H100).
  constexpr std::int64_t many_outputs = 1024, short_length = 32;
  if (outputs >= many_outputs && length <= short_length) return {1, 1, 1};
  std::int64_t threads = 32;
  while (threads < 256 && threads < length) threads *= 2;
  // About a thousand blocks fill the largest GPUs several times over; each
  // thread folds at least 16 elements, so the partials stay few.
  constexpr std::int64_t enough_blocks = 1024, least_per_thread = 16;
  std::int64_t splits = 1;
  if (outputs > 0 && outputs < enough_blocks) {
    const std::int64_t by_blocks = (enough_blocks + outputs - 1) / outputs;
    const std::int64_t by_work = length / (threads * least_per_thread);
    splits = std::max<std::int64_t>(1, std::min(by_blocks, by_work));
  }
  std::int64_t combine_threads = 1;
  while (combine_threads < splits) combine_threads *= 2;
  return {threads, splits, combine_threads};
}

// A reduction: out[i] (row-major over the kept axes) = the fold of the
// input over the reduced axes; `divide` makes it a mean. The input is read
// through its strides over each index space.
template <class A, class R, class T, class Reducer>
using cuda_reduce_kernel = void (*)(const Reducer& reducer, int device_index, const T* in, const shape& kept_shape,
                                    const dims& kept_strides, const shape& reduced_shape, const dims& reduced_strides,
                                    R* out, bool divide, const char* op);

template <class A, class R, class T, class Reducer>
inline std::atomic<cuda_reduce_kernel<A, R, T, Reducer>> cuda_reduce_slot{nullptr};

// A fused summation's operand: the group's leaf read through its strides
// over the kept axes and over the reduced ones (0 along broadcast axes),
// or, where `data` is null, a scalar.
template <class T>
struct split_operand {
  const T* data;
  dims kept_strides, reduced_strides;
  T scalar;
};

// A fused summation in one pass: out[i] (row-major over the kept axes) =
// the sum, over the reduced axes, of op(in...) at each position, computed
// and summed in R as the two passes (the group's values into a tensor,
// then sum) would; `divide` makes it a mean.
template <class R, class Op, class... In>
using cuda_group_sum_kernel = void (*)(const Op& op, int device_index, const shape& kept_shape,
                                       const shape& reduced_shape, R* out, bool divide,
                                       const split_operand<In>&... in);

template <class R, class Op, class... In>
inline std::atomic<cuda_group_sum_kernel<R, Op, In...>> cuda_group_sum_slot{nullptr};

// The same summation and its group's adjoints in one pass, at an output
// whose backward is seeded with ones and whose value is read
// (value_and_grad, a training step's loss): op returns the value, then M
// adjoints; adjoint k is written to adjoints[k] at each position, the
// arrays dense over the group's extent and, like the operands, addressed
// by their strides over the kept and the reduced axes.
template <class R, class Op, std::size_t M, class... In>
using cuda_group_sum_adjoints_kernel = void (*)(const Op& op, int device_index, const shape& kept_shape,
                                                const shape& reduced_shape, R* out, bool divide,
                                                const std::array<R*, M>& adjoints, const dims& adjoint_kept_strides,
                                                const dims& adjoint_reduced_strides, const split_operand<In>&... in);

template <class R, class Op, std::size_t M, class... In>
inline std::atomic<cuda_group_sum_adjoints_kernel<R, Op, M, In...>> cuda_group_sum_adjoints_slot{nullptr};

// The position of each extreme (argmax, argmin) over the reduced axes, as
// a flat row-major index among them, read as a reduction is: the first NaN
// wins, then the first of equal values, as on the host.
template <class T, bool Largest>
using cuda_arg_extreme_kernel = void (*)(int device_index, const T* in, const shape& kept_shape,
                                         const dims& kept_strides, const shape& reduced_shape,
                                         const dims& reduced_strides, std::int64_t* out, const char* op);

template <class T, bool Largest>
inline std::atomic<cuda_arg_extreme_kernel<T, Largest>> cuda_arg_extreme_slot{nullptr};

// The index ops (index_select, gather, index_add, scatter_add) as one
// kernel. For each position p of `space` (row-major), q is p with q[axis]
// replaced by the index read at p through `index_strides` (0 off the axis
// for a 1-d index; the indices come checked and non-negative). Reading:
// out at p = in at q. Scattering: out at q += in at p, atomically, since
// indices may repeat.
template <class T>
using cuda_index_kernel = void (*)(int device_index, const shape& space, std::int64_t axis,
                                   const std::int64_t* index, const dims& index_strides, const T* in,
                                   const dims& in_strides, T* out, const dims& out_strides, bool scatter,
                                   const char* op);

template <class T>
inline std::atomic<cuda_index_kernel<T>> cuda_index_slot{nullptr};

// A random draw (core/random.hpp): out[i] = law(philox(seed, first + i)) for
// i < count, out dense.
template <class T, class Law>
using cuda_random_kernel = void (*)(const Law& law, int device_index, T* out, std::int64_t count, std::uint64_t seed,
                                    std::uint64_t first);

template <class T, class Law>
inline std::atomic<cuda_random_kernel<T, Law>> cuda_random_slot{nullptr};

// Matrix products c[i] = a[i] b[i] of row-major m x k and k x n matrices
// read through their steps, batch i at the given offsets; c is dense.
template <class T>
struct gemm_batch {
  std::int64_t m, n, k;
  const T* a;
  std::int64_t a_row_step, a_column_step;
  std::vector<std::int64_t> a_offsets;
  const T* b;
  std::int64_t b_row_step, b_column_step;
  std::vector<std::int64_t> b_offsets;
  T* c;
};

template <class T>
using cuda_gemm_kernel = void (*)(int device_index, const gemm_batch<T>& work);

template <class T>
inline std::atomic<cuda_gemm_kernel<T>> cuda_gemm_slot{nullptr};

// Whether a rows x columns matrix with these steps is dense along its rows
// (cuBLAS reads it as its transpose), or, swapping the roles, along its
// columns.
inline bool blas_row_major(std::int64_t rows, std::int64_t columns, std::int64_t row_step, std::int64_t column_step) {
  return column_step == 1 && (rows == 1 || row_step >= columns);
}
// Whether cuBLAS reads the matrix as it is, one way or the other.
inline bool blas_readable(std::int64_t rows, std::int64_t columns, std::int64_t row_step, std::int64_t column_step) {
  return blas_row_major(rows, columns, row_step, column_step) || blas_row_major(columns, rows, column_step, row_step);
}

// An optimizer's update in place: op(parameter, gradient, state...) gives
// the new parameter and state, written to `out` (the parameter first), over
// `count` dense elements.
template <class T, std::size_t S, class Op>
using cuda_update_kernel = void (*)(const Op& op, int device_index, std::int64_t count,
                                    const std::array<T*, 1 + S>& out, const T* parameter, const T* gradient,
                                    const std::array<const T*, S>& state);

template <class T, std::size_t S, class Op>
inline std::atomic<cuda_update_kernel<T, S, Op>> cuda_update_slot{nullptr};

}  // namespace tandem::detail
