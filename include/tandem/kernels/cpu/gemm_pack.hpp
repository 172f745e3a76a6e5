#pragma once
// How the CPU's GEMM (gemm.hpp) packs its operands: a block of B into
// NR-wide panels, a block of A into MR-tall ones, each laid out as the
// micro-kernel reads it, from any strides (so transposed views cost nothing
// extra).

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#endif

#include "tandem/core/config.hpp"
#include "tandem/kernels/cpu/gemm_block.hpp"
#include "tandem/kernels/cpu/isa.hpp"
#include "tandem/kernels/cpu/simd.hpp"

namespace tandem::detail {

inline namespace TANDEM_KERNEL_ISA {

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
// How many of a block's `steps` steps are even (the first, the third, ...):
// where the odd ones start in a panel packed by parity (pack_panel_for),
// and so where the micro-kernel reads them.
constexpr std::int64_t even_steps(std::int64_t steps) { return (steps + 1) / 2; }

#if defined(__SSE2__)
// Four steps of a row, Step floats apart: p[0], p[Step], p[2 Step], p[3 Step].
template <std::int64_t Step>
TANDEM_ALWAYS_INLINE __m128 load_steps(const float* p) {
  static_assert(Step == 1 || Step == 2, "tandem internal: rows are read whole or by parity");
  if constexpr (Step == 1)
    return _mm_loadu_ps(p);
  else
    return _mm_shuffle_ps(_mm_loadu_ps(p), _mm_loadu_ps(p + 4), _MM_SHUFFLE(2, 0, 2, 0));
}

// W rows of a row-major matrix (`row_stride` apart), `depth` steps of Step
// floats long, as out[d * W + w]: four rows and four steps of d at a time by
// a 4x4 transpose, a last pair of rows by unpacking: A's panels, and a
// transposed B's (an MLP's backward G W^T). One float per load and store, as
// the general loop moves them, cost the MLP's products 6% of their time,
// and G W^T 15-20%. With Step 2 (the even or the odd steps of a block) a
// group of four steps reads eight floats, the last one past its last step:
// the final group is left to the scalar tail, so nothing past the row's
// last step is read.
template <std::int64_t W, std::int64_t Step = 1>
TANDEM_ALWAYS_INLINE void pack_rows_transposed(const float* a, std::int64_t row_stride, std::int64_t depth,
                                                float* out) {
  static_assert(W % 2 == 0, "tandem internal: rows are packed four or two at a time");
  const std::int64_t whole = (Step == 1 ? depth : std::max<std::int64_t>(depth - 1, 0)) / 4 * 4;
  std::int64_t w = 0;
  for (; w + 4 <= W; w += 4) {
    const float* r0 = a + w * row_stride;
    for (std::int64_t d = 0; d < whole; d += 4) {
      const float* at = r0 + d * Step;
      store_transposed_4x4(load_steps<Step>(at), load_steps<Step>(at + row_stride),
                           load_steps<Step>(at + 2 * row_stride), load_steps<Step>(at + 3 * row_stride),
                           out + d * W + w, W);
    }
  }
  if constexpr (W % 4 == 2) {
    const float* r0 = a + w * row_stride;
    const float* r1 = r0 + row_stride;
    for (std::int64_t d = 0; d < whole; d += 4) {
      __m128 x0 = load_steps<Step>(r0 + d * Step), x1 = load_steps<Step>(r1 + d * Step);
      __m128 low = _mm_unpacklo_ps(x0, x1), high = _mm_unpackhi_ps(x0, x1);
      float* o = out + d * W + w;
      _mm_storel_pi(reinterpret_cast<__m64*>(o), low);
      _mm_storeh_pi(reinterpret_cast<__m64*>(o + W), low);
      _mm_storel_pi(reinterpret_cast<__m64*>(o + 2 * W), high);
      _mm_storeh_pi(reinterpret_cast<__m64*>(o + 3 * W), high);
    }
  }
  for (std::int64_t d = whole; d < depth; ++d)
    for (std::int64_t v = 0; v < W; ++v) out[d * W + v] = a[v * row_stride + d * Step];
}
#endif

// Packs a W-wide panel, `depth` deep, as out[d * W + w]: for B (RowsOfA
// false) w runs over `count` columns from `col` and d over rows from `row`;
// for A (RowsOfA true) w runs over `count` rows from `row` and d over
// columns from `col`. Missing lanes are zero. Where w is the contiguous
// direction of the source, whole lanes are copied at once; a full panel
// across it reads W lines, one element of each per step of d.
template <std::int64_t W, bool RowsOfA, class T>
TANDEM_ALWAYS_INLINE void pack_panel(const strided_matrix<T>& m, std::int64_t row, std::int64_t col,
                                     std::int64_t depth, std::int64_t count, T* out) {
  const std::int64_t lane_stride = RowsOfA ? m.row_stride : m.col_stride;
  const std::int64_t depth_stride = RowsOfA ? m.col_stride : m.row_stride;
  const T* base = m.data + row * m.row_stride + col * m.col_stride;
  constexpr std::int64_t lanes = static_cast<std::int64_t>(simd::width<T>);
  if (lane_stride == 1 && count == W) {
    // In batches: std::copy_n of a B panel's 32 floats is a call to memmove
    // per step of d under GCC 12.
    for (std::int64_t d = 0; d < depth; ++d) {
      if constexpr (W % lanes == 0)
        for (std::int64_t w = 0; w < W; w += lanes) simd::store(out + d * W + w, simd::load(base + d * depth_stride + w));
      else
        for (std::int64_t w = 0; w < W; ++w) out[d * W + w] = base[d * depth_stride + w];
    }
    return;
  }
#if defined(__SSE2__)
  // Lanes along rows whose depth is contiguous (or read by parity): A's
  // rows, or a transposed B's (B^T's rows).
  if constexpr (W % 2 == 0 && std::is_same_v<T, float>) {
    if (count == W && depth_stride == 1) {
      pack_rows_transposed<W>(base, lane_stride, depth, out);
      return;
    }
    if (count == W && depth_stride == 2) {
      pack_rows_transposed<W, 2>(base, lane_stride, depth, out);
      return;
    }
  }
#endif
  if (count == W) {
    std::array<const T*, W> line;
    for (std::int64_t w = 0; w < W; ++w) line[w] = base + w * lane_stride;
    for (std::int64_t d = 0; d < depth; ++d)
      for (std::int64_t w = 0; w < W; ++w) out[d * W + w] = line[w][d * depth_stride];
    return;
  }
  if constexpr (W % lanes == 0) {
    if (lane_stride == 1) {
      // A last, narrow panel (a 10-column B): zeros, then the row over them.
      for (std::int64_t d = 0; d < depth; ++d) {
        for (std::int64_t w = 0; w < W; w += lanes) simd::store(out + d * W + w, simd::splat(T(0)));
        simd::copy_row(base + d * depth_stride, count, out + d * W);
      }
      return;
    }
  }
  for (std::int64_t d = 0; d < depth; ++d) {
    const T* from = base + d * depth_stride;
    std::int64_t w = 0;
    for (; w < count; ++w) out[d * W + w] = from[w * lane_stride];
    for (; w < W; ++w) out[d * W + w] = T(0);
  }
}

// A panel as G's micro-kernel reads it: as pack_panel packs it where the
// tile keeps both parities' sums in registers; where it sets its even sums
// aside (16 registers), each summation block of `block` steps of the depth
// laid out as its even steps, then its odd steps, so that each of the
// tile's two passes over a block reads consecutive lines, not every other
// one (1024^3 on AVX2, Zen 4: 2% faster).
template <class G, std::int64_t W, bool RowsOfA, class T>
void pack_panel_for(const strided_matrix<T>& m, std::int64_t row, std::int64_t col, std::int64_t depth,
                    std::int64_t count, std::int64_t block, T* out) {
  if constexpr (G::interleaved) {
    pack_panel<W, RowsOfA>(m, row, col, depth, count, out);
  } else {
    const std::int64_t depth_stride = RowsOfA ? m.col_stride : m.row_stride;
    for (std::int64_t first = 0; first < depth; first += block) {
      const std::int64_t size = std::min(block, depth - first), evens = even_steps(size);
      strided_matrix<T> steps{&m(RowsOfA ? row : row + first, RowsOfA ? col + first : col), m.row_stride,
                              m.col_stride};
      (RowsOfA ? steps.col_stride : steps.row_stride) = 2 * depth_stride;
      pack_panel<W, RowsOfA>(steps, 0, 0, evens, count, out + first * W);
      if (size > evens) {
        steps.data += depth_stride;
        pack_panel<W, RowsOfA>(steps, 0, 0, size - evens, count, out + (first + evens) * W);
      }
    }
  }
}

#endif

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
