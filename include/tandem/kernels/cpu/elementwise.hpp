#pragma once
// The one elementwise loop for the CPU. It runs any op over N typed operands
// with arbitrary strides (0 for a broadcast axis, negative for a reversed
// view) into an output of any strides. Axes that are contiguous together are
// merged first, so most calls become one flat loop; where the innermost
// strides are 0 or 1 and all operands share the compute type, the body runs
// on SIMD batches with a scalar tail. Work is split across the thread pool
// in chunks of whole elements, so results do not depend on the thread count.
// An op may also return std::array<V, M> and write M outputs of one layout
// in the same pass (a fused backward writes every operand's gradient so).

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "tandem/core/config.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

// A read-only operand of an elementwise loop: its first element and its
// strides over the output's axes.
template <class T>
struct operand {
  const T* data;
  dims strides;
};

// Ops opt out of the SIMD body (for instance when their scalar form branches
// on a bool) by declaring `static constexpr bool vectorizable = false`.
template <class Op>
constexpr bool op_is_vectorizable() {
  if constexpr (requires { Op::vectorizable; }) return Op::vectorizable;
  else return true;
}

inline constexpr std::int64_t elementwise_grain = 32768;

// M outputs sharing one layout, written by an op that returns
// std::array<V, M>; a single output is a plain pointer.
template <class R, std::size_t M>
struct output_set {
  std::array<R*, M> data;
};

template <class R>
TANDEM_ALWAYS_INLINE R* shifted(R* out, std::int64_t by) {
  return out + by;
}
template <class R, std::size_t M>
TANDEM_ALWAYS_INLINE output_set<R, M> shifted(output_set<R, M> out, std::int64_t by) {
  for (R*& p : out.data) p += by;
  return out;
}

template <class R, class V>
TANDEM_ALWAYS_INLINE void put(R* out, std::int64_t at, const V& value) {
  out[at] = static_cast<R>(value);
}
template <class R, std::size_t M, class V>
TANDEM_ALWAYS_INLINE void put(const output_set<R, M>& out, std::int64_t at, const std::array<V, M>& value) {
  for (std::size_t k = 0; k < M; ++k) out.data[k][at] = static_cast<R>(value[k]);
}

// The iteration space after merging axes: sizes[i] and, for each of the N
// operands (the output first), its stride along axis i.
template <std::size_t N>
struct loop_space {
  dims sizes;
  std::array<dims, N> strides;
};

template <std::size_t N>
loop_space<N> merge_axes(const shape& extent, const std::array<const dims*, N>& strides) {
  loop_space<N> space;
  for (std::size_t axis = 0; axis < extent.size(); ++axis) {
    if (extent[axis] == 1) continue;
    bool merges = !space.sizes.empty();
    for (std::size_t k = 0; k < N && merges; ++k)
      merges = space.strides[k].back() == (*strides[k])[axis] * extent[axis];
    if (merges) {
      space.sizes.back() *= extent[axis];
      for (std::size_t k = 0; k < N; ++k) space.strides[k].back() = (*strides[k])[axis];
    } else {
      space.sizes.push_back(extent[axis]);
      for (std::size_t k = 0; k < N; ++k) space.strides[k].push_back((*strides[k])[axis]);
    }
  }
  if (space.sizes.empty()) {
    space.sizes.push_back(1);
    for (auto& s : space.strides) s.push_back(0);
  }
  return space;
}

template <class C, class Op, class Out, class... In, std::size_t... K>
TANDEM_ALWAYS_INLINE void scalar_row(const Op& op, std::int64_t n, Out out, std::int64_t out_stride,
                                     const std::tuple<const In*...>& in, const std::array<std::int64_t, sizeof...(In)>& stride,
                                     std::index_sequence<K...>) {
  for (std::int64_t i = 0; i < n; ++i) put(out, i * out_stride, op(static_cast<C>(std::get<K>(in)[i * stride[K]])...));
}

template <class... In, std::size_t... K>
TANDEM_ALWAYS_INLINE std::tuple<const In*...> advance(const std::tuple<const In*...>& p,
                                                      const std::array<std::int64_t, sizeof...(In)>& stride,
                                                      std::int64_t by, std::index_sequence<K...>) {
  return {(std::get<K>(p) + by * stride[K])...};
}

template <class... In, std::size_t N, std::size_t... K>
TANDEM_ALWAYS_INLINE std::tuple<const In*...> row_start(const std::tuple<const In*...>& base,
                                                        const std::array<std::int64_t, N>& offset,
                                                        std::index_sequence<K...>) {
  return {(std::get<K>(base) + offset[K + 1])...};
}

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
template <class C, class B>
TANDEM_ALWAYS_INLINE void put_batch(C* out, std::int64_t at, const B& value) {
  simd::store(out + at, value);
}
template <class C, std::size_t M, class B>
TANDEM_ALWAYS_INLINE void put_batch(const output_set<C, M>& out, std::int64_t at, const std::array<B, M>& value) {
  for (std::size_t k = 0; k < M; ++k) simd::store(out.data[k] + at, value[k]);
}

// Full batches for unit output stride and input strides of 0 or 1; returns
// how many elements it wrote. One loop serves both strides, so that a fused
// group's body is generated once here: an operand broadcast along the row
// is read from a batch of its value, by a pointer that does not move.
template <class C, class Op, class Out, class... In, std::size_t... K>
TANDEM_ALWAYS_INLINE std::int64_t simd_row(const Op& op, std::int64_t n, Out out, const std::tuple<const In*...>& in,
                                           const std::array<std::int64_t, sizeof...(In)>& stride,
                                           std::index_sequence<K...>) {
  using batch = simd::batch<C>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  alignas(64) std::array<std::array<C, batch::size>, sizeof...(In)> splats;
  std::array<const C*, sizeof...(In)> at{(stride[K] == 1 ? std::get<K>(in) : splats[K].data())...};
  const std::array<std::int64_t, sizeof...(In)> step{(stride[K] == 1 ? w : 0)...};
  ((stride[K] == 1 ? void() : splats[K].fill(*std::get<K>(in))), ...);
  std::int64_t i = 0;
  for (; i + w <= n; i += w) {
    put_batch(out, i, op(simd::load(at[K])...));
    ((at[K] += step[K]), ...);
  }
  return i;
}

// Any strides, any count: elements are gathered into batches (a short last
// batch padded with its first element), so that tails and strided rows go
// through the same SIMD math as contiguous ones and every element gets the
// same bits whatever the layout or the split across threads.
template <class C, class B>
TANDEM_ALWAYS_INLINE void put_lanes(C* out, std::int64_t at, std::int64_t stride, std::int64_t m, const B& value) {
  alignas(64) std::array<C, B::size> lanes;
  value.store_aligned(lanes.data());
  for (std::int64_t l = 0; l < m; ++l) out[(at + l) * stride] = lanes[l];
}
template <class C, std::size_t M, class B>
TANDEM_ALWAYS_INLINE void put_lanes(const output_set<C, M>& out, std::int64_t at, std::int64_t stride, std::int64_t m,
                                    const std::array<B, M>& value) {
  for (std::size_t k = 0; k < M; ++k) put_lanes(out.data[k], at, stride, m, value[k]);
}

template <class C, class Op, class Out, class... In, std::size_t... K>
void gathered_row(const Op& op, std::int64_t n, Out out, std::int64_t out_stride, const std::tuple<const In*...>& in,
                  const std::array<std::int64_t, sizeof...(In)>& stride, std::index_sequence<K...>) {
  using batch = simd::batch<C>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  alignas(64) std::array<std::array<C, batch::size>, sizeof...(In)> lanes;
  for (std::int64_t i = 0; i < n; i += w) {
    std::int64_t m = std::min(w, n - i);
    for (std::int64_t l = 0; l < w; ++l) {
      std::int64_t from = i + (l < m ? l : 0);
      ((lanes[K][l] = std::get<K>(in)[from * stride[K]]), ...);
    }
    put_lanes(out, i, out_stride, m, op(simd::load(lanes[K].data())...));
  }
}
#endif

template <class R, class C, class Op, class Out, class... In>
TANDEM_ALWAYS_INLINE void row_body(const Op& op, std::int64_t n, Out out, std::int64_t out_stride,
                                   std::tuple<const In*...> in, const std::array<std::int64_t, sizeof...(In)>& stride) {
  constexpr auto seq = std::index_sequence_for<In...>{};
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_same_v<R, C> && (std::is_same_v<In, C> && ...) && simd::supported<C> &&
                op_is_vectorizable<Op>()) {
    bool unit = out_stride == 1;
    for (auto s : stride) unit = unit && (s == 0 || s == 1);
    std::int64_t done = unit ? simd_row<C>(op, n, out, in, stride, seq) : 0;
    if (done < n)
      gathered_row<C>(op, n - done, shifted(out, done * out_stride), out_stride, advance(in, stride, done, seq), stride,
                      seq);
  } else
#endif
  {
    scalar_row<C>(op, n, out, out_stride, in, stride, seq);
  }
}

// Ops that are a whole fused group declare `static constexpr bool flatten =
// true` and get their row flattened (TANDEM_FLATTEN, core/config.hpp). A
// single eager op gains little from it, and flattening every eager op costs
// compile time in every translation unit.
template <class Op>
constexpr bool op_wants_flattening() {
  if constexpr (requires { Op::flatten; }) return Op::flatten;
  else return false;
}

template <class R, class C, class Op, class Out, class... In>
TANDEM_FLATTEN void flattened_row(const Op& op, std::int64_t n, Out out, std::int64_t out_stride,
                                  std::tuple<const In*...> in, const std::array<std::int64_t, sizeof...(In)>& stride) {
  row_body<R, C>(op, n, out, out_stride, in, stride);
}

template <class R, class C, class Op, class Out, class... In>
void run_row(const Op& op, std::int64_t n, Out out, std::int64_t out_stride, std::tuple<const In*...> in,
             const std::array<std::int64_t, sizeof...(In)>& stride) {
  if constexpr (op_wants_flattening<Op>()) flattened_row<R, C>(op, n, out, out_stride, in, stride);
  else row_body<R, C>(op, n, out, out_stride, in, stride);
}

// The common case without index arithmetic: out and every input contiguous
// over the same n elements, or (stride 0) one value broadcast to all.
template <class T>
struct flat_operand {
  const T* data;
  std::int64_t stride;
};

template <class R, class C, class Op, class Out, class... In>
void elementwise_flat(const Op& op, std::int64_t n, Out out, const flat_operand<In>&... in) {
  const std::array<std::int64_t, sizeof...(In)> stride{in.stride...};
  parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    run_row<R, C>(op, end - begin, shifted(out, begin), 1, std::tuple<const In*...>{in.data + begin * in.stride...}, stride);
  });
}

// Where linear position `pos` of `space` (row-major over its sizes) is: its
// index along each axis, and each operand's offset.
template <std::size_t N>
TANDEM_ALWAYS_INLINE void locate(const loop_space<N>& space, std::int64_t pos, dims& index,
                                 std::array<std::int64_t, N>& offset) {
  const std::size_t rank = space.sizes.size();
  index = dims(rank, 0);
  offset.fill(0);
  for (std::size_t axis = rank; axis-- > 0;) {
    index[axis] = pos % space.sizes[axis];
    pos /= space.sizes[axis];
    for (std::size_t k = 0; k < N; ++k) offset[k] += index[axis] * space.strides[k][axis];
  }
}

// Runs op over positions [begin, end) of `space`, whose operand 0 is the
// output and the rest are `bases`. The output is addressed relative to
// `begin`: `out` is where the result for `begin` goes. A fused reduction
// runs a group into a small tile so, one span at a time.
template <class R, class C, class Op, class Out, std::size_t N, class... In>
void elementwise_range(const Op& op, const loop_space<N>& space, Out out, const std::tuple<const In*...>& bases,
                       std::int64_t begin, std::int64_t end) {
  static_assert(N == sizeof...(In) + 1);
  const std::size_t rank = space.sizes.size();
  const std::int64_t inner = space.sizes.back();
  dims index;
  std::array<std::int64_t, N> offset;
  locate(space, begin, index, offset);
  const std::int64_t out_origin = offset[0];
  std::array<std::int64_t, sizeof...(In)> inner_stride;
  for (std::size_t k = 0; k < sizeof...(In); ++k) inner_stride[k] = space.strides[k + 1][rank - 1];

  for (std::int64_t pos = begin; pos < end;) {
    std::int64_t n = std::min(inner - index[rank - 1], end - pos);
    run_row<R, C>(op, n, shifted(out, offset[0] - out_origin), space.strides[0][rank - 1],
                  row_start(bases, offset, std::index_sequence_for<In...>{}), inner_stride);
    pos += n;
    for (std::size_t j = 0; j < N; ++j) offset[j] += n * space.strides[j][rank - 1];
    index[rank - 1] += n;
    for (std::size_t axis = rank - 1; axis > 0 && index[axis] == space.sizes[axis]; --axis) {
      for (std::size_t j = 0; j < N; ++j)
        offset[j] += space.strides[j][axis - 1] - space.sizes[axis] * space.strides[j][axis];
      index[axis] = 0;
      ++index[axis - 1];
    }
  }
}

// out[i] = R(op(C(in_0[i]), ..., C(in_k[i]))) over `extent`, with out and
// each input addressed through its own strides.
template <class R, class C, class Op, class Out, class... In>
void elementwise(const Op& op, const shape& extent, Out out, const dims& out_strides, const operand<In>&... in) {
  constexpr std::size_t n_operands = sizeof...(In) + 1;
  std::int64_t total = numel(extent);
  if (total == 0) return;
  loop_space<n_operands> space = merge_axes<n_operands>(extent, {&out_strides, &in.strides...});
  const std::tuple<const In*...> bases{in.data...};
  parallel_for(total, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    dims index;
    std::array<std::int64_t, n_operands> offset;
    locate(space, begin, index, offset);
    elementwise_range<R, C>(op, space, shifted(out, offset[0]), bases, begin, end);
  });
}

}  // namespace tandem::detail
