#pragma once
// The one elementwise loop for the CPU. It runs any op over N typed operands
// with arbitrary strides (0 for a broadcast axis, negative for a reversed
// view) into an output of any strides. Axes that are contiguous together are
// merged first, so most calls become one flat loop; where the innermost
// strides are 0 or 1 and all operands share the compute type, the body runs
// on SIMD batches with a scalar tail; where some operands or the result are
// 16-bit floats computed in float, blocks of them are widened into float
// buffers and the results rounded as they are stored. Work is split across the thread pool
// in chunks of whole elements, so results do not depend on the thread count.
// An op may also return std::array<V, M> and write M outputs of one layout
// in the same pass (a fused backward writes every operand's gradient so).

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <tuple>
#include <utility>

#include "tandem/core/config.hpp"
#include "tandem/core/reduced_float.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/kernels/cpu/cache.hpp"
#include "tandem/kernels/cpu/isa.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/subnormals.hpp"
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

// An op's arithmetic per SIMD batch, roughly, in instructions: 1 unless it
// says (`static constexpr int instructions_per_batch`). An op that computes
// a transcendental function says transcendental_instructions for each:
// xsimd's float exp is 34 instructions on AVX-512, its log 60.
inline constexpr int transcendental_instructions = 40;

template <class Op>
constexpr int op_instructions_per_batch() {
  if constexpr (requires { Op::instructions_per_batch; }) return Op::instructions_per_batch;
  else return 1;
}

inline constexpr std::int64_t elementwise_grain = 32768;

// How a loop may write its output: through the caches, or around them with
// streaming stores, for an output larger than streaming_output_bytes()
// (kernels/cpu/cache.hpp says why), where its row's arithmetic is light
// enough (streaming_pays). Either way every element gets the same bits.
enum class output_writes : bool { cached, streaming };

inline output_writes output_writes_for(std::int64_t bytes) {
  return bytes > streaming_output_bytes() ? output_writes::streaming : output_writes::cached;
}

// Whether a streaming row prefetches its inputs (simd_row says why).
inline bool prefetches_streamed_inputs() { return intel_cpu(); }

// The most instructions per line moved at which a row in batches of
// `batches` streams (streaming_pays). The bound differs by CPU. On
// Zen 4, 16M floats, hand loops written both ways as tandem's rows write
// them (bench/streaming.cpp): -x (0.5 per line) and the 8-op polynomial
// chain (4 per line in AVX-512 batches, 8 in AVX2's) ran 1.2-1.7x faster
// streamed, exp and the tanh chain of bench/chain.hpp (20 and more)
// 1.15-1.4x slower, on one thread and on two
// (docs/benchmarks/cpu_kernels.md). So 12. Intel's
// Xeons gain from streaming far longer, and their points fit a bound per
// batch, not per line: the tanh chain (about 24 per batch and line
// moved, in either ISA's batches) ran 1.05-2x faster streamed, the six-op
// static gradient (about 43 per batch and line moved: sin, cos and exp,
// two inputs, two outputs) 1.15-1.3x slower, in AVX2 and AVX-512 batches,
// on one thread and on two. So 32 per batch there.
inline std::int64_t streamed_instructions_per_line(std::int64_t batches) {
  return intel_cpu() ? 32 * batches : 12;
}

// M outputs sharing one layout, written by an op that returns
// std::array<V, M>; a single output is a plain pointer.
template <class R, std::size_t M>
struct output_set {
  std::array<R*, M> data;
};

inline namespace TANDEM_KERNEL_ISA {

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

}  // inline namespace TANDEM_KERNEL_ISA

// The iteration space after merging axes: sizes[i] and, for each of the N
// operands (the output first), its stride along axis i.
template <std::size_t N>
struct loop_space {
  dims sizes;
  std::array<dims, N> strides;
};

// Merges the axes of `extent` that every one of `count` operands walks
// contiguously together, dropping axes of size 1: `sizes` gets the merged
// extents and `merged[k]` operand k's strides along them.
void merge_axes_into(const shape& extent, const dims* const* strides, std::size_t count,
                     dims& sizes, dims* merged);

template <std::size_t N>
loop_space<N> merge_axes(const shape& extent, const std::array<const dims*, N>& strides) {
  loop_space<N> space;
  merge_axes_into(extent, strides.data(), N, space.sizes, space.strides.data());
  return space;
}

inline namespace TANDEM_KERNEL_ISA {

template <class C, class Op, class Out, class... In, std::size_t... K>
TANDEM_ALWAYS_INLINE void scalar_row(const Op& op, std::int64_t n, Out out, std::int64_t out_stride,
                                     const std::tuple<const In*...>& in, const std::array<std::int64_t, sizeof...(In)>& stride,
                                     output_writes, std::index_sequence<K...>) {
  for (std::int64_t i = 0; i < n; ++i) put(out, i * out_stride, op(static_cast<C>(std::get<K>(in)[i * stride[K]])...));
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

// The outputs of a row while it is staged: each output's own buffer.
template <class C, std::size_t Staged>
TANDEM_ALWAYS_INLINE C* staged_outputs(C*, std::array<std::array<C, Staged>, 1>& buffers) {
  return buffers[0].data();
}
template <class C, std::size_t M, std::size_t Staged>
TANDEM_ALWAYS_INLINE output_set<C, M> staged_outputs(const output_set<C, M>&,
                                                      std::array<std::array<C, Staged>, M>& buffers) {
  output_set<C, M> staged;
  for (std::size_t k = 0; k < M; ++k) staged.data[k] = buffers[k].data();
  return staged;
}

template <class Out>
inline constexpr std::size_t output_count = 1;
template <class C, std::size_t M>
inline constexpr std::size_t output_count<output_set<C, M>> = M;

// Elements from `out` to the next 64-byte line, the same for every output,
// or -1 where the outputs are not equally placed within their lines.
template <class C>
TANDEM_ALWAYS_INLINE std::int64_t elements_to_line(C* out) {
  const auto into_line = reinterpret_cast<std::uintptr_t>(out) % 64;
  if (into_line % sizeof(C) != 0) return -1;
  return static_cast<std::int64_t>((64 - into_line) % 64 / sizeof(C));
}
template <class C, std::size_t M>
TANDEM_ALWAYS_INLINE std::int64_t elements_to_line(const output_set<C, M>& out) {
  for (std::size_t k = 1; k < M; ++k)
    if (reinterpret_cast<std::uintptr_t>(out.data[k]) % 64 != reinterpret_cast<std::uintptr_t>(out.data[0]) % 64)
      return -1;
  return elements_to_line(out.data[0]);
}

template <class C, std::size_t Staged>
TANDEM_ALWAYS_INLINE void stream_out(C* out, std::int64_t n, const std::array<std::array<C, Staged>, 1>& buffers) {
  simd::stream_batches(out, buffers[0].data(), n);
}
template <class C, std::size_t M, std::size_t Staged>
TANDEM_ALWAYS_INLINE void stream_out(const output_set<C, M>& out, std::int64_t n,
                                     const std::array<std::array<C, Staged>, M>& buffers) {
  for (std::size_t k = 0; k < M; ++k) simd::stream_batches(out.data[k], buffers[k].data(), n);
}

template <class C, std::size_t Staged>
TANDEM_ALWAYS_INLINE void unstage(C* out, std::int64_t stride, std::int64_t n,
                                  const std::array<std::array<C, Staged>, 1>& buffers) {
  for (std::int64_t l = 0; l < n; ++l) out[l * stride] = buffers[0][l];
}
template <class C, std::size_t M, std::size_t Staged>
TANDEM_ALWAYS_INLINE void unstage(const output_set<C, M>& out, std::int64_t stride, std::int64_t n,
                                  const std::array<std::array<C, Staged>, M>& buffers) {
  for (std::size_t k = 0; k < M; ++k)
    for (std::int64_t l = 0; l < n; ++l) out.data[k][l * stride] = buffers[k][l];
}

template <class Batch>
inline constexpr std::int64_t batches_per_line = std::max<std::int64_t>(1, 64 / std::int64_t{sizeof(Batch)});

// Streaming stores pay where a row waits on memory, and cost where it waits
// on its arithmetic: a row streams where its op's instructions per 64-byte
// line it reads or writes are at most `bound`.
template <class Op, class Batch, std::size_t Outputs, std::size_t Inputs>
TANDEM_ALWAYS_INLINE bool streaming_pays(const std::array<std::int64_t, Inputs>& stride, std::int64_t bound) {
  std::int64_t lines = Outputs;
  for (const std::int64_t s : stride) lines += s != 0;
  return op_instructions_per_batch<Op>() * batches_per_line<Batch> <= bound * lines;
}

// A row on SIMD batches, in blocks. Where the output's stride is 1 and each
// input's is 0 or 1, a block is every full batch left, read in place (an
// operand broadcast along the row from a batch of its value, by a pointer
// that does not move). Any other block (strided, or the row's tail) is
// first gathered into contiguous buffers, padded to whole batches with its
// first element, and its results scattered after. Both kinds run the one
// batch loop below, so an op's body (a whole fused group) is generated once
// per row function, and every element gets the same bits whatever the
// layout or the split across threads.
//
// Streaming writes stage the in-place blocks too (the op's loop stays one)
// and copy each out with streaming stores, whole lines from the first line
// boundary on: the elements before it are a gathered block of their own.
// A block is at least 1 KiB: AVX2's eight batches are 256 bytes, and on
// Zen 4, one thread, light streamed loops in AVX2 batches ran 5-15% faster
// in blocks of 1 KiB (the block's bookkeeping and its copy's call are per
// four lines, not one). On Intel's CPUs their inputs, as large, are
// prefetched 4 KiB ahead (simd::prefetch_ahead); on Zen 4 the same
// prefetch made them 10-20% slower on one thread (AVX-512 batches), and
// its own prefetchers keep up.
template <class C, class Op, class Out, class... In, std::size_t... K>
TANDEM_ALWAYS_INLINE void simd_row(const Op& op, std::int64_t n, Out out, std::int64_t out_stride,
                                   const std::tuple<const In*...>& in,
                                   const std::array<std::int64_t, sizeof...(In)>& stride, output_writes writes,
                                   std::index_sequence<K...>) {
  using batch = simd::batch<C>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  constexpr std::size_t staged = std::max<std::size_t>(8 * batch::size, 1024 / sizeof(C));
  if (n <= 0) return;
  bool unit = out_stride == 1;
  for (auto s : stride) unit = unit && (s == 0 || s == 1);
  const std::int64_t lead = unit && writes == output_writes::streaming && n >= 32 * w &&
                                    streaming_pays<Op, batch, output_count<Out>>(
                                        stride, streamed_instructions_per_line(batches_per_line<batch>))
                                ? elements_to_line(out)
                                : -1;
  const bool streams = lead >= 0;
  const bool prefetches = streams && prefetches_streamed_inputs();
  alignas(64) std::array<std::array<C, batch::size>, sizeof...(In)> splats;
  ((stride[K] == 0 ? splats[K].fill(*std::get<K>(in)) : void()), ...);
  alignas(64) std::array<std::array<C, staged>, sizeof...(In)> inputs;
  alignas(64) std::array<std::array<C, staged>, output_count<Out>> outputs;
  for (std::int64_t begin = 0; begin < n;) {
    const bool in_place = unit && n - begin >= w && !(streams && begin < lead);
    std::int64_t count = std::min<std::int64_t>(staged, n - begin);
    if (streams && begin < lead) count = lead;
    else if (in_place) count = streams ? std::min(count, (n - begin) / w * w) : (n - begin) / w * w;
    std::array<const C*, sizeof...(In)> at;
    std::array<std::int64_t, sizeof...(In)> step;
    if (in_place) {
      ((at[K] = stride[K] == 1 ? std::get<K>(in) + begin : splats[K].data()), ...);
      ((step[K] = stride[K] == 1 ? w : 0), ...);
      if (prefetches)
        ((stride[K] == 1 ? simd::prefetch_ahead(at[K], 4096, count * std::int64_t{sizeof(C)}) : void()), ...);
    } else {
      for (std::int64_t l = 0; l < (count + w - 1) / w * w; ++l) {
        const std::int64_t from = begin + (l < count ? l : 0);
        ((inputs[K][l] = std::get<K>(in)[from * stride[K]]), ...);
      }
      ((at[K] = inputs[K].data()), ...);
      ((step[K] = w), ...);
    }
    const Out to = in_place && !streams ? shifted(out, begin) : staged_outputs(out, outputs);
    for (std::int64_t i = 0; i < count; i += w) {
      put_batch(to, i, op(simd::load(at[K])...));
      ((at[K] += step[K]), ...);
    }
    if (!in_place) unstage(shifted(out, begin * out_stride), out_stride, count, outputs);
    else if (streams) stream_out(shifted(out, begin), count, outputs);
    begin += count;
  }
  if (streams) simd::store_fence();
}
#endif

// 16-bit floats (bfloat16, float16) computed in float: a row whose result
// and operands are each C or such a type, at least one of them 16-bit.
template <class C, class R, class... In>
inline constexpr bool widens_to_compute =
    std::is_same_v<C, float> && (std::is_same_v<R, C> || is_reduced_float_v<R>) &&
    ((std::is_same_v<In, C> || is_reduced_float_v<In>) && ...) && (is_reduced_float_v<R> || (is_reduced_float_v<In> || ...));

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
// `count` elements of an operand widened into `to`, padded to whole batches
// (`padded`) with the first. A whole block of contiguous elements is one
// loop of fixed length, which compilers vectorize.
template <std::size_t Block, class C, class T>
TANDEM_ALWAYS_INLINE void widen_block(C* to, const T* from, std::int64_t stride, std::int64_t count,
                                      std::int64_t padded) {
  if (stride == 1 && count == static_cast<std::int64_t>(Block)) {
    for (std::size_t l = 0; l < Block; ++l) to[l] = static_cast<C>(from[l]);
    return;
  }
  for (std::int64_t l = 0; l < count; ++l) to[l] = static_cast<C>(from[l * stride]);
  for (std::int64_t l = count; l < padded; ++l) to[l] = to[0];
}

// `count` results rounded into the output.
template <std::size_t Block, class R, class C>
TANDEM_ALWAYS_INLINE void narrow_block(R* to, std::int64_t stride, const C* from, std::int64_t count) {
  if (stride == 1 && count == static_cast<std::int64_t>(Block)) {
#if defined(__F16C__) && defined(__AVX__)
    // F16C rounds float to float16 as float16's constructor does (to
    // nearest even, subnormals kept, a NaN quiet with its payload's top
    // bits), 8 at a time.
    if constexpr (std::is_same_v<R, float16> && std::is_same_v<C, float> && Block % 8 == 0) {
      for (std::size_t l = 0; l < Block; l += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(to + l),
                         _mm256_cvtps_ph(_mm256_loadu_ps(from + l), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      return;
    }
#endif
    for (std::size_t l = 0; l < Block; ++l) to[l] = static_cast<R>(from[l]);
    return;
  }
  for (std::int64_t l = 0; l < count; ++l) to[l * stride] = static_cast<R>(from[l]);
}

// A row of 16-bit floats on SIMD batches of C: each block of operands
// widened, the op run on its batches, the results rounded once as they are
// stored, so every element gets the scalar loop's bits.
template <class C, class Op, class R, class... In, std::size_t... K>
TANDEM_ALWAYS_INLINE void widening_simd_row(const Op& op, std::int64_t n, R* out, std::int64_t out_stride,
                                            const std::tuple<const In*...>& in,
                                            const std::array<std::int64_t, sizeof...(In)>& stride,
                                            std::index_sequence<K...>) {
  using batch = simd::batch<C>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  constexpr std::size_t block = std::max<std::size_t>(8 * batch::size, 1024 / sizeof(C));
  alignas(64) std::array<std::array<C, block>, sizeof...(In)> inputs;
  alignas(64) std::array<C, block> outputs;
  for (std::int64_t begin = 0; begin < n; begin += static_cast<std::int64_t>(block)) {
    const std::int64_t count = std::min<std::int64_t>(static_cast<std::int64_t>(block), n - begin);
    const std::int64_t padded = (count + w - 1) / w * w;
    (widen_block<block>(inputs[K].data(), std::get<K>(in) + begin * stride[K], stride[K], count, padded), ...);
    for (std::int64_t i = 0; i < padded; i += w) simd::store(outputs.data() + i, op(simd::load(inputs[K].data() + i)...));
    narrow_block<block>(out + begin * out_stride, out_stride, outputs.data(), count);
  }
}
#endif

template <class R, class C, class Op, class Out, class... In>
TANDEM_ALWAYS_INLINE void row_body(const Op& op, std::int64_t n, Out out, std::int64_t out_stride,
                                   std::tuple<const In*...> in, const std::array<std::int64_t, sizeof...(In)>& stride,
                                   output_writes writes) {
  constexpr auto seq = std::index_sequence_for<In...>{};
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_same_v<R, C> && (std::is_same_v<In, C> && ...) && simd::supported<C> &&
                op_is_vectorizable<Op>()) {
    simd_row<C>(op, n, out, out_stride, in, stride, writes, seq);
  } else if constexpr (std::is_same_v<Out, R*> && widens_to_compute<C, R, In...> && simd::supported<C> &&
                       op_is_vectorizable<Op>()) {
    widening_simd_row<C>(op, n, out, out_stride, in, stride, seq);
  } else
#endif
  {
    scalar_row<C>(op, n, out, out_stride, in, stride, writes, seq);
  }
}

}  // inline namespace TANDEM_KERNEL_ISA

// Ops that are a whole fused group declare `static constexpr bool flatten =
// true` and get their row flattened (TANDEM_FLATTEN, core/config.hpp). A
// single eager op gains little from it, and flattening every eager op costs
// compile time in every translation unit.
template <class Op>
constexpr bool op_wants_flattening() {
  if constexpr (requires { Op::flatten; }) return Op::flatten;
  else return false;
}

// A loop's typed part is one row: n elements of the output from `out[m]` +
// out_at (m < M, one layout) in steps of out_stride, input k from `in[k]` +
// in_at[k] in steps of in_stride[k] (without in_at, from out_at times its
// stride: the flat loop's rows, which so need no offsets of their own),
// written as `writes` says. Everything around it (splitting the
// work across threads, walking the axes, the offsets) has no types and is
// compiled once (elementwise-inl.hpp): a fused group instantiates its row
// function and nothing else.
using row_function = void (*)(const void* op, std::int64_t n, void* const* out, std::int64_t out_at,
                              std::int64_t out_stride, const void* const* in, const std::int64_t* in_at,
                              const std::int64_t* in_stride, output_writes writes);

struct row_loop {
  row_function row;
  const void* op;
  void* const* out;
  const void* const* in;
  std::size_t inputs;
  output_writes writes = output_writes::cached;
};

template <class R>
std::array<void*, 1> erased_outputs(R* out) {
  return {out};
}
template <class R, std::size_t M>
std::array<void*, M> erased_outputs(const output_set<R, M>& out) {
  std::array<void*, M> erased;
  for (std::size_t k = 0; k < M; ++k) erased[k] = out.data[k];
  return erased;
}

template <class Out>
struct typed_outputs;
template <class R>
struct typed_outputs<R*> {
  static TANDEM_ALWAYS_INLINE R* at(void* const* out, std::int64_t by) { return static_cast<R*>(out[0]) + by; }
};
template <class R, std::size_t M>
struct typed_outputs<output_set<R, M>> {
  static TANDEM_ALWAYS_INLINE output_set<R, M> at(void* const* out, std::int64_t by) {
    output_set<R, M> typed;
    for (std::size_t k = 0; k < M; ++k) typed.data[k] = static_cast<R*>(out[k]) + by;
    return typed;
  }
};

inline namespace TANDEM_KERNEL_ISA {

template <class R, class C, class Op, class Out, class... In, std::size_t... K>
TANDEM_ALWAYS_INLINE void typed_row(const void* op, std::int64_t n, void* const* out, std::int64_t out_at,
                                    std::int64_t out_stride, const void* const* in, const std::int64_t* in_at,
                                    const std::int64_t* in_stride, output_writes writes, std::index_sequence<K...>) {
  const std::array<std::int64_t, sizeof...(In)> stride{in_stride[K]...};
  auto run = [&] {
    row_body<R, C>(*static_cast<const Op*>(op), n, typed_outputs<Out>::at(out, out_at), out_stride,
                   std::tuple<const In*...>{static_cast<const In*>(in[K]) + (in_at ? in_at[K] : out_at * stride[K])...},
                   stride, writes);
  };
  if constexpr (op_flushes_subnormals<Op>()) {
    const subnormals_flushed flushed;
    run();
  } else {
    run();
  }
}

template <class R, class C, class Op, class Out, class... In>
void row_of(const void* op, std::int64_t n, void* const* out, std::int64_t out_at, std::int64_t out_stride,
            const void* const* in, const std::int64_t* in_at, const std::int64_t* in_stride, output_writes writes) {
  typed_row<R, C, Op, Out, In...>(op, n, out, out_at, out_stride, in, in_at, in_stride, writes,
                                  std::index_sequence_for<In...>{});
}

template <class R, class C, class Op, class Out, class... In>
TANDEM_FLATTEN void flattened_row_of(const void* op, std::int64_t n, void* const* out, std::int64_t out_at,
                                     std::int64_t out_stride, const void* const* in, const std::int64_t* in_at,
                                     const std::int64_t* in_stride, output_writes writes) {
  typed_row<R, C, Op, Out, In...>(op, n, out, out_at, out_stride, in, in_at, in_stride, writes,
                                  std::index_sequence_for<In...>{});
}

// This translation unit's own row function.
template <class R, class C, class Op, class Out, class... In>
constexpr row_function native_row_function() {
  if constexpr (op_wants_flattening<Op>()) return &flattened_row_of<R, C, Op, Out, In...>;
  else return &row_of<R, C, Op, Out, In...>;
}

}  // inline namespace TANDEM_KERNEL_ISA

// The row function chosen at run time among tandem::compiled's builds for
// several instruction sets (kernels/cpu/dispatch.hpp), for the ops those
// builds hold; null for any other op, and until a choice is made.
template <class R, class C, class Op, class Out, class... In>
inline constinit std::atomic<row_function> dispatched_row{nullptr};

inline namespace TANDEM_KERNEL_ISA {

// The row function a loop runs: the dispatched one where there is one. A
// header-only program has only its own.
template <class R, class C, class Op, class Out, class... In>
TANDEM_ALWAYS_INLINE row_function row_function_for() {
#if !TANDEM_HEADER_ONLY
  if (const row_function chosen = dispatched_row<R, C, Op, Out, In...>.load(std::memory_order_relaxed)) return chosen;
#endif
  return native_row_function<R, C, Op, Out, In...>();
}

}  // inline namespace TANDEM_KERNEL_ISA

// The loops, compiled once: contiguous operands over n elements (input
// strides 0 or 1); positions [begin, end) of a merged space whose operand 0
// is the output, written from out_at onwards; any extent and strides.
void run_flat(const row_loop& loop, std::int64_t n, const std::int64_t* in_stride);
void run_span(const row_loop& loop, const dims& sizes, const dims* strides, std::int64_t out_at,
              std::int64_t begin, std::int64_t end);
void run_strided(const row_loop& loop, const shape& extent, const dims* const* strides);
void run_block(const row_loop& loop, const dims& sizes, const dims* strides, std::int64_t row_length, std::int64_t row,
               std::int64_t rows, std::int64_t col, std::int64_t cols);

// The common case without index arithmetic: out and every input contiguous
// over the same n elements, or (stride 0) one value broadcast to all.
template <class T>
struct flat_operand {
  const T* data;
  std::int64_t stride;
};

inline namespace TANDEM_KERNEL_ISA {

template <class R, class C, class Op, class Out, class... In>
void elementwise_flat(const Op& op, std::int64_t n, Out out, const flat_operand<In>&... in) {
  const auto outs = erased_outputs(out);
  const std::array<const void*, sizeof...(In)> bases{in.data...};
  const std::array<std::int64_t, sizeof...(In)> stride{in.stride...};
  const output_writes writes = output_writes_for(n * static_cast<std::int64_t>(sizeof(R) * outs.size()));
  run_flat({row_function_for<R, C, Op, Out, In...>(), &op, outs.data(), bases.data(), sizeof...(In), writes}, n,
           stride.data());
}

// Runs op over positions [begin, end) of `space`, whose operand 0 is the
// output and the rest are `bases`. The output is addressed relative to
// `begin`: `out` is where the result for `begin` goes. A fused reduction
// runs a group into a small tile so, one span at a time.
template <class R, class C, class Op, class Out, std::size_t N, class... In>
void elementwise_range(const Op& op, const loop_space<N>& space, Out out, const std::tuple<const In*...>& bases,
                       std::int64_t begin, std::int64_t end) {
  static_assert(N == sizeof...(In) + 1);
  const auto outs = erased_outputs(out);
  const auto inputs = std::apply([](const In*... p) { return std::array<const void*, sizeof...(In)>{p...}; }, bases);
  run_span({row_function_for<R, C, Op, Out, In...>(), &op, outs.data(), inputs.data(), sizeof...(In)}, space.sizes,
           space.strides.data(), 0, begin, end);
}

// Rows [row, row + rows), columns [col, col + cols) of a matrix's positions
// (rows of `row_length`), as merge_axes gives them for a space of two axes:
// [m * n], [m, n], or one axis where the other has one position. Operand 0
// is the output, at `out` for position 0. A GEMM's epilogue runs a block of
// the product so: one row call per row, no search for where a row starts.
template <class R, class C, class Op, class Out, std::size_t N, class... In>
void elementwise_block(const Op& op, const loop_space<N>& space, Out out, const std::tuple<const In*...>& bases,
                       std::int64_t row_length, std::int64_t row, std::int64_t rows, std::int64_t col,
                       std::int64_t cols) {
  static_assert(N == sizeof...(In) + 1);
  const auto outs = erased_outputs(out);
  const auto inputs = std::apply([](const In*... p) { return std::array<const void*, sizeof...(In)>{p...}; }, bases);
  run_block({row_function_for<R, C, Op, Out, In...>(), &op, outs.data(), inputs.data(), sizeof...(In)}, space.sizes,
            space.strides.data(), row_length, row, rows, col, cols);
}

// out[i] = R(op(C(in_0[i]), ..., C(in_k[i]))) over `extent`, with out and
// each input addressed through its own strides.
template <class R, class C, class Op, class Out, class... In>
void elementwise(const Op& op, const shape& extent, Out out, const dims& out_strides, const operand<In>&... in) {
  const auto outs = erased_outputs(out);
  const std::array<const void*, sizeof...(In)> bases{in.data...};
  const std::array<const dims*, sizeof...(In) + 1> strides{&out_strides, &in.strides...};
  // Rows whose output is contiguous and long stream where the whole output
  // is large: a broadcast over rows (`x + bias`) as a flat loop would.
  const output_writes writes = output_writes_for(numel(extent) * static_cast<std::int64_t>(sizeof(R) * outs.size()));
  run_strided({row_function_for<R, C, Op, Out, In...>(), &op, outs.data(), bases.data(), sizeof...(In), writes}, extent,
              strides.data());
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail

#if TANDEM_HEADER_ONLY
#include "tandem/kernels/cpu/elementwise-inl.hpp"
#endif
