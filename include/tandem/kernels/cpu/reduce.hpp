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
#include <cstdint>
#include <vector>

#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

inline constexpr std::int64_t reduce_block = 16384;

// Combines `n` contiguous inputs, converted to A, starting from `acc`.
template <class Reducer, class A, class T>
A reduce_span(const Reducer& r, const T* p, std::int64_t n, A acc) {
  std::int64_t i = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_same_v<T, A> && simd::supported<A>) {
    using batch = simd::batch<A>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    if (n >= 4 * w) {
      batch a0 = simd::splat(r.template identity<A>()), a1 = a0, a2 = a0, a3 = a0;
      for (; i + 4 * w <= n; i += 4 * w) {
        a0 = r(a0, simd::load(p + i));
        a1 = r(a1, simd::load(p + i + w));
        a2 = r(a2, simd::load(p + i + 2 * w));
        a3 = r(a3, simd::load(p + i + 3 * w));
      }
      for (; i + w <= n; i += w) a0 = r(a0, simd::load(p + i));
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

// out[k] = finish(combine over m of input[k * M + m]).
template <class Reducer, class A, class T, class R, class Finish>
void reduce_rows(const Reducer& r, const T* input, std::int64_t rows, std::int64_t length, R* out,
                 const Finish& finish) {
  if (rows == 0) return;
  std::int64_t blocks = std::max<std::int64_t>(1, (length + reduce_block - 1) / reduce_block);
  if (blocks == 1) {
    std::int64_t grain = std::max<std::int64_t>(1, reduce_block / std::max<std::int64_t>(length, 1));
    parallel_for(rows, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k)
        out[k] = finish(reduce_span(r, input + k * length, length, r.template identity<A>()));
    });
    return;
  }
  std::vector<A> partial(static_cast<std::size_t>(rows * blocks));
  parallel_for(rows * blocks, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t task = b; task < e; ++task) {
      std::int64_t k = task / blocks, block = task % blocks;
      std::int64_t first = block * reduce_block, n = std::min(reduce_block, length - first);
      partial[task] = reduce_span(r, input + k * length + first, n, r.template identity<A>());
    }
  });
  for (std::int64_t k = 0; k < rows; ++k) {
    A acc = r.template identity<A>();
    for (std::int64_t block = 0; block < blocks; ++block) acc = r(acc, partial[k * blocks + block]);
    out[k] = finish(acc);
  }
}

// out[k] = finish(combine over m of input[m * K + k]), vectorised along k.
template <class Reducer, class A, class T, class R, class Finish>
void reduce_columns(const Reducer& r, const T* input, std::int64_t columns, std::int64_t length, R* out,
                    const Finish& finish) {
  std::int64_t grain = std::max<std::int64_t>(64, reduce_block / std::max<std::int64_t>(length, 1));
  parallel_for(columns, grain, [&](std::int64_t b, std::int64_t e) {
    std::vector<A> acc(static_cast<std::size_t>(e - b), r.template identity<A>());
    for (std::int64_t m = 0; m < length; ++m) {
      const T* row = input + m * columns + b;
      std::int64_t k = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
      if constexpr (std::is_same_v<T, A> && simd::supported<A>) {
        constexpr std::int64_t w = static_cast<std::int64_t>(simd::batch<A>::size);
        for (; k + w <= e - b; k += w) simd::store(acc.data() + k, r(simd::load(acc.data() + k), simd::load(row + k)));
      }
#endif
      for (; k < e - b; ++k) acc[k] = r(acc[k], static_cast<A>(row[k]));
    }
    for (std::int64_t k = b; k < e; ++k) out[k] = finish(acc[k - b]);
  });
}

// Index of the first largest (or smallest) element of each row; NaN counts
// as beyond every number, as in PyTorch.
template <bool Largest, class T>
void arg_extreme_rows(const T* input, std::int64_t rows, std::int64_t length, std::int64_t* out) {
  auto beats = [](T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
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

}  // namespace tandem::detail
