#pragma once
// Reduction loops for the CPU over a [K, M] problem: K outputs, each
// combining M inputs. Two layouts cover every case once the caller has
// arranged the axes:
//   rows:    input[k * M + m]  (the reduced axes are innermost)
//   columns: input[m * K + k]  (the kept axes are innermost)
// Rows longer than a fixed block are cut into blocks whose partial results
// are combined in block order, and SIMD lanes are combined in lane order, so
// the bits of a result never depend on the number of threads.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "tandem/core/deferred.hpp"
#include "tandem/core/dtype.hpp"
#include "tandem/kernels/cpu/dispatch_slot.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {

inline constexpr std::int64_t reduce_block = 16384;

// Combines `n` contiguous inputs, converted to A, starting from `acc`: on
// SIMD batches where they load as A (16-bit floats widened to float), in
// the same order for a 16-bit span as for its float values.
template <class Reducer, class A, class T>
A native_reduce_span(const Reducer& r, const T* p, std::int64_t n, A acc) {
  std::int64_t i = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::loads_as<A, T>) {
    using batch = simd::batch<A>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    if (n >= 4 * w) {
      batch a0 = simd::splat(r.template identity<A>()), a1 = a0, a2 = a0, a3 = a0;
      for (; i + 4 * w <= n; i += 4 * w) {
        a0 = r(a0, simd::load_as<A>(p + i));
        a1 = r(a1, simd::load_as<A>(p + i + w));
        a2 = r(a2, simd::load_as<A>(p + i + 2 * w));
        a3 = r(a3, simd::load_as<A>(p + i + 3 * w));
      }
      for (; i + w <= n; i += w) a0 = r(a0, simd::load_as<A>(p + i));
      batch all = r(r(a0, a1), r(a2, a3));
      alignas(64) std::array<A, batch::size> lanes;
      all.store_aligned(lanes.data());
      for (A lane : lanes) acc = r(acc, lane);
    }
  }
#endif
  for (; i < n; ++i) acc = r(acc, static_cast<A>(p[i]));
  return acc;
}

}  // inline namespace TANDEM_KERNEL_ISA

// The span reduction chosen at run time among tandem::compiled's builds
// (kernels/cpu/dispatch.hpp), for the built-in reducers over float and
// double; null otherwise and until a choice is made.
template <class Reducer, class A, class T>
using span_reduction = A (*)(const Reducer&, const T*, std::int64_t, A);
template <class Reducer, class A, class T>
inline constinit std::atomic<span_reduction<Reducer, A, T>> dispatched_reduce_span{nullptr};

inline namespace TANDEM_KERNEL_ISA {

template <class Reducer, class A, class T>
A reduce_span(const Reducer& r, const T* p, std::int64_t n, A acc) {
  return call_dispatched<&native_reduce_span<Reducer, A, T>>(dispatched_reduce_span<Reducer, A, T>, r, p, n, acc);
}

// Where a reduction's inputs come from. `span(first, n, tile)` gives the n
// inputs from linear position `first` of the arranged problem: an array is
// read in place; a fused producer (fused_source) computes them into `tile`,
// a per-thread buffer of `tile_size(n)` elements, so that the elementwise
// work feeding a reduction never reaches memory. An array not computed yet
// (a capture's pending value, ops/reduce.hpp) comes as `spans`, which
// compute each span when asked: the same source type, so a deferred
// reduction instantiates no loop of its own.
template <class T>
struct array_source {
  using value_type = T;
  const T* data;
  const value_spans* spans = nullptr;
  std::int64_t tile_size(std::int64_t n) const { return spans ? n : 0; }
  const T* span(std::int64_t first, std::int64_t n, T* tile) const {
    if (spans) [[unlikely]]
      return static_cast<const T*>(spans->span(spans->self, first, n, tile));
    return data + first;
  }
};

// A reduction's inputs computed on the fly by an elementwise op over
// `space`, whose operand 0 is contiguous over the arranged problem (the
// tile) and whose others are `bases`. An op returning std::array<V, 1 + M>
// gives the input to reduce first and writes the rest, in the same pass, to
// `extra`: arrays laid out like the whole arranged problem (the adjoints of
// a fused backward).
template <class C, std::size_t M, class Op, std::size_t N, class... In>
struct fused_source {
  using value_type = C;
  const Op& op;
  const loop_space<N>& space;
  std::tuple<const In*...> bases;
  std::array<C*, M> extra{};
  static constexpr std::int64_t tile_size(std::int64_t n) { return n; }
  const C* span(std::int64_t first, std::int64_t n, C* tile) const {
    if (n == 0) return tile;
    if constexpr (M == 0) {
      elementwise_range<C, C>(op, space, tile, bases, first, first + n);
    } else {
      output_set<C, M + 1> out;
      out.data[0] = tile;
      for (std::size_t k = 0; k < M; ++k) out.data[k + 1] = extra[k] + first;
      elementwise_range<C, C>(op, space, out, bases, first, first + n);
    }
    return tile;
  }
};

// A per-thread buffer for `n` inputs of `source` (none for an array).
template <class Source>
std::unique_ptr<typename Source::value_type[]> tile_buffer(const Source& source, std::int64_t n) {
  std::int64_t size = source.tile_size(n);
  if (size == 0) return nullptr;
  return std::make_unique_for_overwrite<typename Source::value_type[]>(static_cast<std::size_t>(size));
}

// out[k] = finish(combine over m of input[k * M + m]).
template <class Reducer, class A, class Source, class R, class Finish>
void reduce_rows_from(const Reducer& r, const Source& source, std::int64_t rows, std::int64_t length, R* out,
                      const Finish& finish) {
  if (rows == 0) return;
  std::int64_t blocks = std::max<std::int64_t>(1, (length + reduce_block - 1) / reduce_block);
  if (blocks == 1) {
    std::int64_t grain = std::max<std::int64_t>(1, reduce_block / std::max<std::int64_t>(length, 1));
    parallel_for(rows, grain, [&](std::int64_t b, std::int64_t e) {
      auto tile = tile_buffer(source, length);
      for (std::int64_t k = b; k < e; ++k)
        out[k] = static_cast<R>(
            finish(reduce_span(r, source.span(k * length, length, tile.get()), length, r.template identity<A>())));
    });
    return;
  }
  std::vector<A> partial(static_cast<std::size_t>(rows * blocks));
  parallel_for(rows * blocks, 1, [&](std::int64_t b, std::int64_t e) {
    auto tile = tile_buffer(source, reduce_block);
    for (std::int64_t task = b; task < e; ++task) {
      std::int64_t k = task / blocks, block = task % blocks;
      std::int64_t first = block * reduce_block, n = std::min(reduce_block, length - first);
      partial[task] = reduce_span(r, source.span(k * length + first, n, tile.get()), n, r.template identity<A>());
    }
  });
  for (std::int64_t k = 0; k < rows; ++k) {
    A acc = r.template identity<A>();
    for (std::int64_t block = 0; block < blocks; ++block) acc = r(acc, partial[k * blocks + block]);
    out[k] = static_cast<R>(finish(acc));
  }
}

template <class Reducer, class A, class T, class R, class Finish>
void reduce_rows(const Reducer& r, const T* input, std::int64_t rows, std::int64_t length, R* out,
                 const Finish& finish) {
  reduce_rows_from<Reducer, A>(r, array_source<T>{input}, rows, length, out, finish);
}

// into[k] = r(into[k], row[k]) for k < width: one row of a column reduction.
template <class Reducer, class A, class T>
void native_combine_into(const Reducer& r, A* into, const T* row, std::int64_t width) {
  std::int64_t k = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::loads_as<A, T>) {
    constexpr std::int64_t w = static_cast<std::int64_t>(simd::batch<A>::size);
    for (; k + w <= width; k += w) simd::store(into + k, r(simd::load(into + k), simd::load_as<A>(row + k)));
  }
#endif
  for (; k < width; ++k) into[k] = r(into[k], static_cast<A>(row[k]));
}

}  // inline namespace TANDEM_KERNEL_ISA

template <class Reducer, class A, class T>
using row_combination = void (*)(const Reducer&, A*, const T*, std::int64_t);
template <class Reducer, class A, class T>
inline constinit std::atomic<row_combination<Reducer, A, T>> dispatched_combine_into{nullptr};

inline namespace TANDEM_KERNEL_ISA {

template <class Reducer, class A, class T>
void combine_into(const Reducer& r, A* into, const T* row, std::int64_t width) {
  call_dispatched<&native_combine_into<Reducer, A, T>>(dispatched_combine_into<Reducer, A, T>, r, into, row, width);
}

// out[k] = finish(combine over m of input[m * K + k]), vectorised along k.
template <class Reducer, class A, class Source, class R, class Finish>
void reduce_columns_from(const Reducer& r, const Source& source, std::int64_t columns, std::int64_t length, R* out,
                         const Finish& finish) {
  using T = typename Source::value_type;
  std::int64_t grain = std::max<std::int64_t>(64, reduce_block / std::max<std::int64_t>(length, 1));
  parallel_for(columns, grain, [&](std::int64_t b, std::int64_t e) {
    std::vector<A> acc(static_cast<std::size_t>(e - b), r.template identity<A>());
    std::int64_t piece = std::min(e - b, reduce_block);
    auto tile = tile_buffer(source, piece);
    for (std::int64_t m = 0; m < length; ++m) {
      for (std::int64_t from = b; from < e; from += piece) {
        std::int64_t width = std::min(piece, e - from);
        const T* row = source.span(m * columns + from, width, tile.get());
        combine_into(r, acc.data() + (from - b), row, width);
      }
    }
    for (std::int64_t k = b; k < e; ++k) out[k] = static_cast<R>(finish(acc[k - b]));
  });
}

template <class Reducer, class A, class T, class R, class Finish>
void reduce_columns(const Reducer& r, const T* input, std::int64_t columns, std::int64_t length, R* out,
                    const Finish& finish) {
  reduce_columns_from<Reducer, A>(r, array_source<T>{input}, columns, length, out, finish);
}

// out[k] = finish(combine over a, b of input[(a * kept + k) * inner + b]):
// each kept position's runs of `inner` contiguous inputs, in order.
template <class Reducer, class A, class T, class R, class Finish>
void reduce_middle(const Reducer& r, const T* input, std::int64_t outer, std::int64_t kept, std::int64_t inner, R* out,
                   const Finish& finish) {
  std::int64_t grain = std::max<std::int64_t>(1, reduce_block / std::max<std::int64_t>(outer * inner, 1));
  parallel_for(kept, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t k = b; k < e; ++k) {
      A acc = r.template identity<A>();
      for (std::int64_t a = 0; a < outer; ++a) acc = reduce_span(r, input + (a * kept + k) * inner, inner, acc);
      out[k] = static_cast<R>(finish(acc));
    }
  });
}

// The sum of n contiguous values, or of their squared deviations from
// `centre`, added to acc.
template <bool Squared, class T>
T accumulate_span(const T* p, std::int64_t n, T centre, T acc) {
  std::int64_t i = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    using batch = simd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    if (n >= 2 * w) {
      batch c = simd::splat(centre), a0 = simd::splat(T(0)), a1 = a0;
      auto term = [&](const batch& v) {
        if constexpr (Squared) return (v - c) * (v - c);
        else return v;
      };
      for (; i + 2 * w <= n; i += 2 * w) {
        a0 += term(simd::load(p + i));
        a1 += term(simd::load(p + i + w));
      }
      for (; i + w <= n; i += w) a0 += term(simd::load(p + i));
      acc += simd::reduce_add(a0 + a1);
    }
  }
#endif
  for (; i < n; ++i) acc += Squared ? (p[i] - centre) * (p[i] - centre) : p[i];
  return acc;
}

// x viewed as [outer, kept, inner], contiguous: for each kept position,
// the mean and the mean squared deviation from it. Two passes, so no
// cancellation; each position is one thread's, in a fixed order.
template <class T>
void native_middle_moments(const T* x, std::int64_t outer, std::int64_t kept, std::int64_t inner, T* mean,
                           T* variance) {
  const T count = static_cast<T>(outer * inner);
  std::int64_t grain = std::max<std::int64_t>(1, reduce_block / std::max<std::int64_t>(outer * inner, 1));
  parallel_for(kept, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t k = b; k < e; ++k) {
      T total = 0, squares = 0;
      for (std::int64_t a = 0; a < outer; ++a) total = accumulate_span<false>(x + (a * kept + k) * inner, inner, T(0), total);
      T centre = total / count;
      for (std::int64_t a = 0; a < outer; ++a)
        squares = accumulate_span<true>(x + (a * kept + k) * inner, inner, centre, squares);
      mean[k] = centre;
      variance[k] = squares / count;
    }
  });
}

}  // inline namespace TANDEM_KERNEL_ISA

template <class T>
using moments_function = void (*)(const T*, std::int64_t, std::int64_t, std::int64_t, T*, T*);
template <class T>
inline constinit std::atomic<moments_function<T>> dispatched_middle_moments{nullptr};

inline namespace TANDEM_KERNEL_ISA {

template <class T>
void middle_moments(const T* x, std::int64_t outer, std::int64_t kept, std::int64_t inner, T* mean, T* variance) {
  call_dispatched<&native_middle_moments<T>>(dispatched_middle_moments<T>, x, outer, kept, inner, mean, variance);
}

// Index of the first largest (or smallest) element of each row; NaN counts
// as beyond every number, as in PyTorch.
template <bool Largest, class T>
void arg_extreme_rows(const T* input, std::int64_t rows, std::int64_t length, std::int64_t* out) {
  auto beats = [](T a, T b) {
    if constexpr (is_floating_v<T>) {
      if (b != b) return false;
      if (a != a) return true;
    }
    return Largest ? a > b : a < b;
  };
  auto scan = [&](const T* p, std::int64_t first, std::int64_t n, std::int64_t best) {
    for (std::int64_t m = first; m < first + n; ++m)
      if (beats(p[m], p[best])) best = m;
    return best;
  };
  std::int64_t blocks = std::max<std::int64_t>(1, (length + reduce_block - 1) / reduce_block);
  std::vector<std::int64_t> partial(static_cast<std::size_t>(rows * blocks));
  parallel_for(rows * blocks, blocks == 1 ? std::max<std::int64_t>(1, reduce_block / std::max<std::int64_t>(length, 1)) : 1,
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t task = b; task < e; ++task) {
                   std::int64_t k = task / blocks, block = task % blocks;
                   std::int64_t first = block * reduce_block, n = std::min(reduce_block, length - first);
                   partial[task] = scan(input + k * length, first, n, first);
                 }
               });
  for (std::int64_t k = 0; k < rows; ++k) {
    std::int64_t best = partial[k * blocks];
    for (std::int64_t block = 1; block < blocks; ++block)
      if (beats(input[k * length + partial[k * blocks + block]], input[k * length + best])) best = partial[k * blocks + block];
    out[k] = best;
  }
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
