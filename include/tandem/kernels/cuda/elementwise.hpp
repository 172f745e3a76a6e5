#pragma once
// The GPU's elementwise kernel (compiled only by nvcc): out = op(in...) over
// an index space of up to cuda_max_axes axes, each operand read through its
// own strides (0 along broadcast axes) or as a scalar. The op is the same
// struct the CPU kernels run: its scalar operator() is host and device code.
// Axes that are contiguous in every array are merged first, so a dense
// tensor is one flat axis and its loop needs no index arithmetic.

#ifndef __CUDACC__
#error "tandem/kernels/cuda/elementwise.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "tandem/core/shape.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/kernels/cuda/divisor.hpp"
#include "tandem/kernels/cuda/runtime.hpp"

namespace tandem::detail::cuda {

// An index space of up to cuda_max_axes axes, row-major. `narrow`: fewer
// than 2^31 positions, so an index is split into the axes' indices with
// 32-bit divisions by multiplication (axis_divisor).
struct index_space {
  int rank;
  bool narrow;
  std::int64_t extents[cuda_max_axes];
  axis_divisor divisors[cuda_max_axes];
};

// Fills in `narrow` and the divisors once the extents are set.
inline index_space with_divisors(index_space space) {
  std::int64_t count = 1;
  for (int axis = 0; axis < space.rank; ++axis) count *= space.extents[axis];
  space.narrow = count < (std::int64_t{1} << 31);
  // An empty space has no position to divide (and an extent of 0 no divisor).
  if (space.narrow && count > 0)
    for (int axis = 0; axis < space.rank; ++axis)
      space.divisors[axis] = axis_divisor(static_cast<std::uint32_t>(space.extents[axis]));
  return space;
}

// visit(axis, index) for every axis of position `flat` of `space`. What is
// left of `flat` after the inner axes is the first axis's index, so a
// single axis divides nothing.
template <class Visit>
__device__ __forceinline__ void for_each_axis_index(std::int64_t flat, const index_space& space, const Visit& visit) {
  if (space.narrow) {
    auto rest = static_cast<std::uint32_t>(flat);
#pragma unroll
    for (int axis = static_cast<int>(cuda_max_axes) - 1; axis > 0; --axis) {
      if (axis >= space.rank) continue;
      const std::uint32_t quotient = space.divisors[axis].quotient(rest);
      visit(axis, static_cast<std::int64_t>(rest - quotient * static_cast<std::uint32_t>(space.extents[axis])));
      rest = quotient;
    }
    if (space.rank > 0) visit(0, static_cast<std::int64_t>(rest));
  } else {
    std::int64_t rest = flat;
#pragma unroll
    for (int axis = static_cast<int>(cuda_max_axes) - 1; axis > 0; --axis) {
      if (axis >= space.rank) continue;
      visit(axis, rest % space.extents[axis]);
      rest /= space.extents[axis];
    }
    if (space.rank > 0) visit(0, rest);
  }
}

template <class T>
struct strided_input {
  const T* data;  // null: read `scalar`
  std::int64_t strides[cuda_max_axes];
  T scalar;
};

struct strided_output {
  std::int64_t strides[cuda_max_axes];
};

// Merges axes that every array walks contiguously (stride[a] ==
// stride[a+1] * extent[a+1] for all of them) and drops axes of extent 1.
// `strides` holds the output's first, then each operand's; they come back
// merged.
template <std::size_t Arrays>
index_space merge_axes(const shape& extents, std::array<dims, Arrays>& strides, const char* op) {
  index_space space{0, false, {}, {}};
  std::array<std::array<std::int64_t, cuda_max_axes>, Arrays> merged{};
  int rank = 0;
  for (std::size_t axis = 0; axis < extents.size(); ++axis) {
    if (extents[axis] == 1) continue;
    bool joins = rank > 0;
    for (std::size_t a = 0; a < Arrays && joins; ++a) joins = merged[a][rank - 1] == strides[a][axis] * extents[axis];
    if (joins) {
      space.extents[rank - 1] *= extents[axis];
      for (std::size_t a = 0; a < Arrays; ++a) merged[a][rank - 1] = strides[a][axis];
      continue;
    }
    if (rank == static_cast<int>(cuda_max_axes))
      throw device_error(std::string("tandem::") + op + ": a GPU kernel indexes at most " +
                         std::to_string(cuda_max_axes) + " axes that cannot be merged, and shape " +
                         to_string(extents) + " with these strides has more");
    space.extents[rank] = extents[axis];
    for (std::size_t a = 0; a < Arrays; ++a) merged[a][rank] = strides[a][axis];
    ++rank;
  }
  space.rank = rank;
  for (std::size_t a = 0; a < Arrays; ++a) strides[a].assign(merged[a].begin(), merged[a].begin() + rank);
  return with_divisors(space);
}

template <class T>
__device__ __forceinline__ T read(const strided_input<T>& in, const std::int64_t* offsets, int k) {
  return in.data ? in.data[offsets[k]] : in.scalar;
}

// M outputs at once (a group's adjoints): op returns an array of M values,
// output k is written at the same offset of its own array.
template <class R, std::size_t M>
struct output_arrays {
  R* data[M];
};

template <class R, class V>
__device__ __forceinline__ void store(R* out, std::int64_t offset, const V& value) {
  out[offset] = static_cast<R>(value);
}
template <class R, std::size_t M, class V>
__device__ __forceinline__ void store(const output_arrays<R, M>& out, std::int64_t offset, const V& values) {
  for (std::size_t k = 0; k < M; ++k) out.data[k][offset] = static_cast<R>(values[k]);
}

// Four consecutive elements of one dense array, read or written by one
// access (16 bytes for 4-byte elements): the flat loop's unit where every
// array's address is a multiple of the pack's size. One element at a time,
// a kernel reaches about 80% of a GPU's copy bandwidth; four, as a copy does.
inline constexpr int pack_size = 4;
template <class T>
struct alignas(sizeof(T) * pack_size) pack {
  T element[pack_size];
};

// In the flat loop an array's one stride is 1, or 0 where one element is
// broadcast over all (a loss's seed, a bias of one value).
template <class T>
__device__ __forceinline__ T read_flat(const strided_input<T>& in, std::int64_t i) {
  return in.data ? in.data[i * in.strides[0]] : in.scalar;
}

template <class T>
__device__ __forceinline__ pack<T> read_pack(const strided_input<T>& in, std::int64_t p) {
  if (in.data && in.strides[0] != 0) return reinterpret_cast<const pack<T>*>(in.data)[p];
  const T value = in.data ? in.data[0] : in.scalar;
  pack<T> all;
  for (int e = 0; e < pack_size; ++e) all.element[e] = value;
  return all;
}

template <class R, class V>
__device__ __forceinline__ void store_pack(R* out, std::int64_t p, const V (&values)[pack_size]) {
  pack<R> result;
  for (int e = 0; e < pack_size; ++e) result.element[e] = static_cast<R>(values[e]);
  reinterpret_cast<pack<R>*>(out)[p] = result;
}
template <class R, std::size_t M, class V>
__device__ __forceinline__ void store_pack(const output_arrays<R, M>& out, std::int64_t p,
                                           const V (&values)[pack_size]) {
  for (std::size_t k = 0; k < M; ++k) {
    pack<R> result;
    for (int e = 0; e < pack_size; ++e) result.element[e] = static_cast<R>(values[e][k]);
    reinterpret_cast<pack<R>*>(out.data[k])[p] = result;
  }
}

// One thread per element (or per pack of elements) of a grid-stride loop.
// Flat: the output is dense over one axis, so element i is at offset i, and
// each operand at i or at 0 (read_flat); `packed`: in packs, the last
// count % pack_size elements one by one. `Out` is R* or output_arrays.
template <bool Flat, class C, class Op, class Out, class... In, std::size_t... K>
__device__ void elementwise_body(const Op& op, const index_space& space, const Out& out,
                                 const strided_output& out_strides, std::int64_t count, bool packed,
                                 std::index_sequence<K...>, const strided_input<In>&... in) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (Flat) {
    std::int64_t done = 0;
    if (packed) {
      const std::int64_t packs = count / pack_size;
      for (std::int64_t p = first; p < packs; p += step) {
        const auto inputs = std::tuple{read_pack(in, p)...};
        decltype(op(static_cast<C>(in.scalar)...)) values[pack_size];
        for (int e = 0; e < pack_size; ++e) values[e] = op(static_cast<C>(std::get<K>(inputs).element[e])...);
        store_pack(out, p, values);
      }
      done = packs * pack_size;
    }
    for (std::int64_t i = done + first; i < count; i += step) store(out, i, op(static_cast<C>(read_flat(in, i))...));
  } else {
    for (std::int64_t i = first; i < count; i += step) {
      std::int64_t offsets[sizeof...(In) + 1] = {};
      for_each_axis_index(i, space, [&](int axis, std::int64_t index) {
        offsets[0] += index * out_strides.strides[axis];
        ((offsets[K + 1] += index * in.strides[axis]), ...);
      });
      store(out, offsets[0], op(static_cast<C>(read(in, offsets, K + 1))...));
    }
  }
}

template <bool Flat, class C, class Op, class Out, class... In>
__global__ void elementwise_kernel(Op op, index_space space, Out out, strided_output out_strides, std::int64_t count,
                                   bool packed, strided_input<In>... in) {
  elementwise_body<Flat, C>(op, space, out, out_strides, count, packed, std::index_sequence_for<In...>{}, in...);
}

template <class T>
bool pack_aligned(const T* data) {
  return reinterpret_cast<std::uintptr_t>(data) % alignof(pack<T>) == 0;
}
template <class R>
bool outputs_pack_aligned(R* out) {
  return pack_aligned(out);
}
template <class R, std::size_t M>
bool outputs_pack_aligned(const output_arrays<R, M>& out) {
  for (std::size_t k = 0; k < M; ++k)
    if (!pack_aligned(out.data[k])) return false;
  return true;
}

template <class T>
strided_input<T> to_strided_input(const device_operand<T>& operand, const dims& merged) {
  strided_input<T> in{operand.data, {}, operand.scalar};
  if (operand.data) std::copy(merged.begin(), merged.end(), in.strides);
  return in;
}

// Merges the axes and launches the kernel writing `out` (R* or
// output_arrays, every output with `out_strides`) on the device's stream.
template <class C, class Op, class Out, class... In>
void launch_over(const Op& op, int device_index, const shape& out_shape, const Out& out, const dims& out_strides,
                 const device_operand<In>&... in) {
  const std::int64_t count = numel(out_shape);
  if (count == 0) return;
  std::array<dims, sizeof...(In) + 1> strides{out_strides, (in.data ? in.strides : dims(out_shape.size(), 0))...};
  const index_space space = merge_axes(out_shape, strides, Op::name);
  // Flat: one axis (or none) that the output steps by 1, and every operand
  // read from memory by 1 or by 0 (one element broadcast).
  const std::array<bool, sizeof...(In) + 1> in_memory{true, (in.data != nullptr)...};
  bool flat = space.rank <= 1;
  for (std::size_t a = 0; a < strides.size() && flat && space.rank == 1; ++a)
    flat = !in_memory[a] || strides[a][0] == 1 || (a > 0 && strides[a][0] == 0);
  strided_output out_arg{};
  std::copy(strides[0].begin(), strides[0].end(), out_arg.strides);
  auto inputs = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple{to_strided_input(in, strides[K + 1])...};
  }(std::index_sequence_for<In...>{});

  auto read_in_packs = [](const auto&... args) {
    return ((!args.data || args.strides[0] == 0 || pack_aligned(args.data)) && ...);
  };
  const bool packed = flat && outputs_pack_aligned(out) && std::apply(read_in_packs, inputs);
  const std::int64_t units = packed ? (count + pack_size - 1) / pack_size : count;
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((units + threads - 1) / threads, 1 << 20));
  device_scope on(device_index, Op::name);
  cudaStream_t s = stream(device_index);
  std::apply(
      [&](const auto&... args) {
        if (flat)
          elementwise_kernel<true, C><<<blocks, threads, 0, s>>>(op, space, out, out_arg, count, packed, args...);
        else
          elementwise_kernel<false, C><<<blocks, threads, 0, s>>>(op, space, out, out_arg, count, false, args...);
      },
      inputs);
  check_launch(Op::name);
}

// The slot's function (cuda_elementwise_slot).
template <class R, class C, class Op, class... In>
void launch_elementwise(const Op& op, int device_index, const shape& out_shape, R* out, const dims& out_strides,
                        const device_operand<In>&... in) {
  launch_over<C>(op, device_index, out_shape, out, out_strides, in...);
}

// The multi-output slot's function (cuda_elementwise_outputs_slot).
template <class R, class C, class Op, std::size_t M, class... In>
void launch_elementwise_outputs(const Op& op, int device_index, const shape& out_shape, const std::array<R*, M>& out,
                                const dims& out_strides, const device_operand<In>&... in) {
  output_arrays<R, M> outputs{};
  for (std::size_t k = 0; k < M; ++k) outputs.data[k] = out[k];
  launch_over<C>(op, device_index, out_shape, outputs, out_strides, in...);
}

}  // namespace tandem::detail::cuda
