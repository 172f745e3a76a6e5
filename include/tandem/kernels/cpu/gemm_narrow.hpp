#pragma once
// C = A * B where C has few columns: a classifier's ten logits, the gradient
// of a 3x3 kernel's nine taps. gemm.hpp's tiles put C's columns in SIMD
// lanes, so ten columns filled 10 of AVX-512's 16 lanes (128x256x10 ran at
// 0.7-0.8 of OpenBLAS). Here the lanes run along the depth instead: each
// element of C is a row of A times a column of B, summed in 16 partial sums
// (the sum of steps k = l mod 16, in depth order, for lane l) and reduced in
// a fixed tree: (l, l + 8), then (l, l + 4), (l, l + 2), (l, l + 1). AVX-512
// holds the 16 sums in one register and AVX2 in two, and both add the same
// numbers in the same order, so they compute the same bits; each element
// is summed alike whatever tile or thread computes it. (Builds without FMA
// round differently anyway and run gemm.hpp's tiles.) Where A is a
// transposed view, the same sums run with C's rows in the lanes
// (gemm_narrow_columns), so A's layout does not change the bits either.

#include <algorithm>
#include <cstdint>
#include <utility>

#include "tandem/core/config.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/kernels/cpu/gemm_block.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE && defined(__AVX2__) && defined(__FMA__)
#define TANDEM_NARROW_GEMM 1
#include <immintrin.h>
#else
#define TANDEM_NARROW_GEMM 0
#endif

namespace tandem::detail {

inline namespace TANDEM_KERNEL_ISA {

// Whether C = A * B (m x k by k x n) is summed along the depth. Decided by
// the shape alone, never by the instruction set or the thread count, so
// that every FMA build sums a product the same way. Up to 12 columns
// (128x256xn for n = 1, 4, 8, 10, 12 ran 1.2-6x faster than in gemm.hpp's
// tiles on AVX-512 and 1.2-4x on AVX2, whose 8-lane tiles 8 columns fill);
// a depth below 32 would sum more padding than data.
inline constexpr bool narrow_gemm_pays(std::int64_t n, std::int64_t k) { return n <= 12 && k >= 32; }

#if TANDEM_NARROW_GEMM

struct narrow_gemm_shape {
  using batch = simd::batch<float>;
  static constexpr std::int64_t width = static_cast<std::int64_t>(batch::size);
  // Partial sums per element of C, and the batches that hold them.
  static constexpr std::int64_t lanes = 16;
  static constexpr std::int64_t parts = lanes / width;
  static_assert(parts * width == lanes, "tandem internal: 16 partial sums fill whole batches");
  // A tile: 4 rows by up to 4 columns (3 on AVX2), each row's results one
  // SSE register at the end. AVX-512 sums the tile in 16 registers beside a
  // batch of B per column and one of A; AVX2 has room for one part at a
  // time (12 + 3 + 1 of its 16 registers), so it sums the first 8 lanes of
  // every element, sets them aside, then the last 8.
  static constexpr std::int64_t rows = 4;
  static constexpr std::int64_t max_columns = parts == 1 ? 4 : 3;
};

// The last two levels of the tree for four elements at once: their four
// sums each, to one lane each.
TANDEM_ALWAYS_INLINE __m128 narrow_fours_to_ones(__m128 a, __m128 b, __m128 c, __m128 d) {
  const __m128 ab =
      _mm_add_ps(_mm_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)), _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m128 cd =
      _mm_add_ps(_mm_shuffle_ps(c, d, _MM_SHUFFLE(1, 0, 1, 0)), _mm_shuffle_ps(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm_add_ps(_mm_shuffle_ps(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Keeps `value` in a register: GCC otherwise folds the load of a batch of
// A or B into each multiply-add that reads it, and 20 loads of 512 bits per
// 16 multiply-adds held AVX-512 to 0.8 of its multiply-add rate (Zen 4
// loads one such batch per cycle).
TANDEM_ALWAYS_INLINE void narrow_gemm_keep_in_register([[maybe_unused]] narrow_gemm_shape::batch& value) {
#if defined(__GNUC__)
#if defined(__AVX512F__)
  __m512 held = value;
  asm("" : "+v"(held));
#else
  __m256 held = value;
  asm("" : "+x"(held));
#endif
  value = held;
#endif
}

// A tile's rows of A: each in chunks of 16 steps, `chunk_stride` apart (16
// where rows are read in place, 64 where four rows are packed chunk by
// chunk).
struct narrow_gemm_rows {
  const float* row[narrow_gemm_shape::rows];
  std::int64_t chunk_stride;
};

// Adds the products of `Parts` parts from `first_part` (part p: lanes
// [p * width, p * width + width) of every 16 steps) of `Rows` rows of A by
// `Columns` columns into `sums`: rows `depth` long (the first `Rows` of
// `a`), and `b_columns`, B's columns, `b_stride` apart and zero past the
// depth up to a multiple of 16. Each sum adds its lane's steps in depth
// order, whatever the tile's shape.
template <std::int64_t Rows, std::int64_t Columns, std::int64_t Parts>
TANDEM_ALWAYS_INLINE void narrow_gemm_sum(const narrow_gemm_rows& a, std::int64_t depth, const float* b_columns,
                                          std::int64_t b_stride, std::int64_t first_part,
                                          narrow_gemm_shape::batch (&sums)[Rows][Parts][Columns]) {
  using shape = narrow_gemm_shape;
  using batch = shape::batch;
  TANDEM_UNROLL_ALL
  for (auto& row : sums)
    TANDEM_UNROLL_ALL
    for (auto& part : row)
      TANDEM_UNROLL_ALL
      for (batch& element : part) element = batch(0.0f);
  // Unrolled whole, or GCC keeps the sums in memory.
  auto step = [&](const float* const* a_rows, std::int64_t a_at, std::int64_t b_at) {
    batch bj[Parts][Columns];
    TANDEM_UNROLL_ALL
    for (std::int64_t p = 0; p < Parts; ++p)
      TANDEM_UNROLL_ALL
      for (std::int64_t j = 0; j < Columns; ++j) {
        bj[p][j] = batch::load_aligned(b_columns + j * b_stride + b_at + p * shape::width);
        narrow_gemm_keep_in_register(bj[p][j]);
      }
    TANDEM_UNROLL_ALL
    for (std::int64_t r = 0; r < Rows; ++r)
      TANDEM_UNROLL_ALL
      for (std::int64_t p = 0; p < Parts; ++p) {
        batch ar = batch::load_unaligned(a_rows[r] + a_at + p * shape::width);
        narrow_gemm_keep_in_register(ar);
        TANDEM_UNROLL_ALL
        for (std::int64_t j = 0; j < Columns; ++j) sums[r][p][j] = math::multiply_add(ar, bj[p][j], sums[r][p][j]);
      }
  };
  const std::int64_t offset = first_part * shape::width;
  std::int64_t k = 0, a_at = 0;
  for (; k + shape::lanes <= depth; k += shape::lanes, a_at += a.chunk_stride) step(a.row, a_at + offset, k + offset);
  if (k < depth) {
    // The last steps from zero-padded copies: a row's end may be the end of
    // its allocation.
    alignas(64) float tail[Rows][shape::lanes] = {};
    const float* tail_rows[Rows];
    for (std::int64_t r = 0; r < Rows; ++r) {
      std::copy(a.row[r] + a_at, a.row[r] + a_at + (depth - k), tail[r]);
      tail_rows[r] = tail[r];
    }
    step(tail_rows, offset, k + offset);
  }
}

#if !defined(__AVX512F__)
// An element's 16 sums as AVX2 holds them (lanes 0-7, lanes 8-15) through
// the tree's first two levels: (l, l + 8), then (l, l + 4).
TANDEM_ALWAYS_INLINE __m128 narrow_eights_to_fours(__m256 first_lanes, __m256 last_lanes) {
  const __m256 eights = _mm256_add_ps(first_lanes, last_lanes);
  return _mm_add_ps(_mm256_castps256_ps128(eights), _mm256_extractf128_ps(eights, 1));
}

// From this depth AVX2 sums a tile in pairs of rows by pairs of columns,
// both parts at once (8 sums, 4 batches of B, one of A in its 16
// registers), so that each row is read in one pass. A 4 x 3 tile, one part
// at a time, reads its rows and columns twice; past 32 KB of them (L1 on
// Zen 3 and 4: 4 rows and 3 columns of 1170 steps) the second pass comes
// from L2, and the CNN's head, 128x1568x10, ran at 81 us where gemm.hpp's
// tiles took 67 (in pairs: 67). Below, the pairs load a batch per
// multiply-add and lose (128x900x10: 40 us against 34); even at 1300 steps.
// The sums are the same, so are the bits.
inline constexpr std::int64_t narrow_gemm_deep = 1280;

template <std::int64_t Columns>
void narrow_gemm_tile_in_pairs(const narrow_gemm_rows& a, std::int64_t depth, const float* b_columns,
                               std::int64_t b_stride, float* c, std::int64_t ldc, std::int64_t rows) {
  using shape = narrow_gemm_shape;
  using batch = shape::batch;
  for (std::int64_t first_row = 0; first_row < rows; first_row += 2) {
    const narrow_gemm_rows pair{{a.row[first_row], a.row[first_row + 1]}, a.chunk_stride};
    // A row's results at its columns; the last pair's store may reach two
    // floats past the tile's columns.
    alignas(16) float results[2][8];
    auto sum_columns = [&]<std::int64_t Count>(std::integral_constant<std::int64_t, Count>, std::int64_t first_column) {
      batch sums[2][2][Count];
      narrow_gemm_sum<2, Count, 2>(pair, depth, b_columns + first_column * b_stride, b_stride, 0, sums);
      for (std::int64_t r = 0; r < 2; ++r) {
        __m128 fours[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
        TANDEM_UNROLL_ALL
        for (std::int64_t j = 0; j < Count; ++j) fours[j] = narrow_eights_to_fours(sums[r][0][j], sums[r][1][j]);
        _mm_storeu_ps(results[r] + first_column, narrow_fours_to_ones(fours[0], fours[1], fours[2], fours[3]));
      }
    };
    static_assert(Columns <= 3, "tandem internal: an AVX2 tile has up to 3 columns");
    sum_columns(std::integral_constant<std::int64_t, Columns == 1 ? 1 : 2>{}, 0);
    if constexpr (Columns == 3) sum_columns(std::integral_constant<std::int64_t, 1>{}, 2);
    for (std::int64_t r = first_row; r < std::min(rows, first_row + 2); ++r)
      std::copy(results[r - first_row], results[r - first_row] + Columns, c + r * ldc);
  }
}
#endif

// `rows` rows (up to 4; a tile's missing rows repeat its first, their
// results dropped) by `Columns` columns of C.
template <std::int64_t Columns>
void narrow_gemm_tile(const narrow_gemm_rows& a, std::int64_t depth, const float* b_columns, std::int64_t b_stride,
                      float* c, std::int64_t ldc, std::int64_t rows) {
  using shape = narrow_gemm_shape;
  using batch = shape::batch;
  static_assert(Columns <= shape::max_columns, "tandem internal: a tile has up to 4 columns");
  __m128 results[shape::rows];
#if defined(__AVX512F__)
  static_assert(shape::parts == 1, "tandem internal: an AVX-512 build sums in 16-lane batches");
  batch sums[shape::rows][1][Columns];
  narrow_gemm_sum<shape::rows, Columns, 1>(a, depth, b_columns, b_stride, 0, sums);
  // The tree for all 16 elements at once, as 4x4 transposes of 128-bit
  // quarters: x[4 * j + r] is row r's column j (zero past Columns), and
  // each step adds the same pairs as AVX2's below, so the 128-bit quarter
  // r of the last sum holds row r's four results.
  __m512 x[16];
  TANDEM_UNROLL_ALL
  for (std::int64_t j = 0; j < 4; ++j)
    TANDEM_UNROLL_ALL
    for (std::int64_t r = 0; r < 4; ++r) x[4 * j + r] = j < Columns ? __m512(sums[r][0][j]) : _mm512_setzero_ps();
  __m512 halves[8], quarters[4];
  TANDEM_UNROLL_ALL
  for (std::int64_t i = 0; i < 8; ++i)
    halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x44),
                              _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xEE));
  TANDEM_UNROLL_ALL
  for (std::int64_t i = 0; i < 4; ++i)
    quarters[i] = _mm512_add_ps(_mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0x88),
                                _mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0xDD));
  const __m512 low = _mm512_add_ps(_mm512_shuffle_ps(quarters[0], quarters[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(quarters[0], quarters[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 high = _mm512_add_ps(_mm512_shuffle_ps(quarters[2], quarters[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_ps(quarters[2], quarters[3], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 ones = _mm512_add_ps(_mm512_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_shuffle_ps(low, high, _MM_SHUFFLE(3, 1, 3, 1)));
  results[0] = _mm512_castps512_ps128(ones);
  results[1] = _mm512_extractf32x4_ps(ones, 1);
  results[2] = _mm512_extractf32x4_ps(ones, 2);
  results[3] = _mm512_extractf32x4_ps(ones, 3);
#else
  static_assert(shape::parts == 2, "tandem internal: an AVX2 build sums in 8-lane batches");
  if (depth >= narrow_gemm_deep) {
    narrow_gemm_tile_in_pairs<Columns>(a, depth, b_columns, b_stride, c, ldc, rows);
    return;
  }
  batch first_lanes[shape::rows][1][Columns], last_lanes[shape::rows][1][Columns];
  narrow_gemm_sum<shape::rows, Columns, 1>(a, depth, b_columns, b_stride, 0, first_lanes);
  narrow_gemm_sum<shape::rows, Columns, 1>(a, depth, b_columns, b_stride, 1, last_lanes);
  TANDEM_UNROLL_ALL
  for (std::int64_t r = 0; r < shape::rows; ++r) {
    __m128 fours[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    TANDEM_UNROLL_ALL
    for (std::int64_t j = 0; j < Columns; ++j) fours[j] = narrow_eights_to_fours(first_lanes[r][0][j], last_lanes[r][0][j]);
    results[r] = narrow_fours_to_ones(fours[0], fours[1], fours[2], fours[3]);
  }
#endif
  TANDEM_UNROLL_ALL
  for (std::int64_t r = 0; r < shape::rows; ++r) {
    if (r == rows) break;
    if constexpr (Columns == 4) {
      _mm_storeu_ps(c + r * ldc, results[r]);
    } else {
      alignas(16) float row[4];
      _mm_store_ps(row, results[r]);
      std::copy(row, row + Columns, c + r * ldc);
    }
  }
}

// Floats from one packed tile of A to the next: a line more than its
// chunks, or tiles a power of two apart would share a few sets of L1 (the
// MLP's 256x128x10 H^T G ran 25% slower).
inline constexpr std::int64_t narrow_gemm_tile_stride(std::int64_t chunks) {
  return (chunks * narrow_gemm_shape::rows + 1) * narrow_gemm_shape::lanes;
}

// Rows [first, first + count) of A, `depth` long, packed for tiles: tile t's
// 16-step chunk c at out[t * narrow_gemm_tile_stride(chunks) + c * 64], its
// four rows 16 floats apart, zero past the depth and the rows. A transposed
// view (an MLP's H^T, rows contiguous in memory) by 4x4 transposes, four
// lines of it at a time, each tile's stores within 256 bytes: packed row by
// row, they went to lines 512 bytes apart and cost more than the product.
inline void narrow_gemm_pack_rows(const strided_matrix<float>& a, std::int64_t first, std::int64_t count,
                                  std::int64_t depth, std::int64_t chunks, float* out) {
  constexpr std::int64_t rows = narrow_gemm_shape::rows, lanes = narrow_gemm_shape::lanes;
  static_assert(rows == 4, "tandem internal: A is packed by 4x4 transposes");
  auto at = [&](std::int64_t i, std::int64_t k) {
    return out + (i / rows) * narrow_gemm_tile_stride(chunks) + (k / lanes) * rows * lanes + (i % rows) * lanes +
           k % lanes;
  };
  // Zeros past the depth and in the last tile's missing rows.
  const std::int64_t padded_depth = chunks * lanes;
  if (depth < padded_depth)
    for (std::int64_t i = 0; i < count; ++i) std::fill_n(at(i, depth), padded_depth - depth, 0.0f);
  for (std::int64_t i = count; i % rows != 0; ++i)
    for (std::int64_t k = 0; k < padded_depth; k += lanes) std::fill_n(at(i, k), lanes, 0.0f);
  std::int64_t whole_rows = 0, whole_depth = 0;
  if (a.row_stride == 1) {
    whole_rows = count / 4 * 4;
    whole_depth = depth / 4 * 4;
    for (std::int64_t k = 0; k < whole_depth; k += 4) {
      const float* from = &a(first, k);
      for (std::int64_t i = 0; i < whole_rows; i += 4) transpose_4x4(from + i, a.col_stride, at(i, k), lanes);
    }
  }
  for (std::int64_t i = 0; i < count; ++i)
    for (std::int64_t k = i < whole_rows ? whole_depth : 0; k < depth; ++k) *at(i, k) = a(first + i, k);
}

// B's n columns, `depth` long, into rows `stride` apart, zero past the
// depth: a row-major B by 4x4 transposes (its last four columns overlapping
// the ones before where n is not a multiple of 4).
inline void narrow_gemm_pack_columns(const strided_matrix<float>& b, std::int64_t n, std::int64_t depth,
                                     std::int64_t stride, float* out) {
  std::int64_t k = 0;
  if (b.col_stride == 1 && n >= 4) {
    for (; k + 4 <= depth; k += 4) {
      const float* from = &b(k, 0);
      for (std::int64_t j = 0; j < n; j += 4) {
        const std::int64_t at = std::min(j, n - 4);
        transpose_4x4(from + at, b.row_stride, out + at * stride + k, stride);
      }
    }
  }
  for (std::int64_t j = 0; j < n; ++j) {
    float* column = out + j * stride;
    for (std::int64_t kk = k; kk < depth; ++kk) column[kk] = b(kk, j);
    std::fill(column + depth, column + stride, 0.0f);
  }
}

// Where A is a transposed view (its rows adjacent in memory: an MLP's
// weight gradient H^T G, a convolution's), the same sums with C's rows in
// the lanes instead of the depth: lane t of a batch is row i + t, and an
// element's partial sum l (its steps k = l mod 16, in depth order) is a
// chain of multiply-adds of whole batches of A's stored rows by B's
// broadcast elements: a tile's part of A is copied as it lies, not
// transposed. Packing A into depth-long rows by 4x4 transposes cost as much
// as the product (256x128x10: 7.5 us against 4.7 with A contiguous, on
// AVX-512). The 16 chains of a tile run one after
// another, in the order that lets each pair of the tree's first level, then
// each pair of pairs, be added as soon as both exist: chain `order`'s
// partial sum is l = order with its four bits reversed (0, 8, 4, 12, 2...),
// and a pending sum per level waits for its right-hand partner. The adds
// are the tree's, operand for operand, so the bits are those of the kernel
// above.
struct narrow_gemm_columns_shape {
  using batch = narrow_gemm_shape::batch;
  static constexpr std::int64_t width = narrow_gemm_shape::width;
  // Two batches of rows by up to 12 columns (AVX-512: 24 sums in its 32
  // registers) or 6 (AVX2: 12 sums, two batches of A and a broadcast of B
  // in its 16).
  static constexpr std::int64_t batches = 2;
  static constexpr std::int64_t rows = batches * width;
  static constexpr std::int64_t max_columns = width == 16 ? 12 : 6;
};

inline constexpr std::int64_t narrow_gemm_reversed_order(std::int64_t order) {
  return ((order & 1) << 3) | ((order & 2) << 1) | ((order & 4) >> 1) | ((order & 8) >> 3);
}

// Rows [0, tile rows) by `Columns` columns of C into `out` (column j's
// results at out[j * rows]), from A's stored rows `s` (step k's batch of C's
// rows at s + k * lds) and B's rows (step k's columns at b + k * ldb).
template <std::int64_t Columns>
void narrow_gemm_columns_tile(const float* s, std::int64_t lds, std::int64_t depth, const float* b, std::int64_t ldb,
                              float* out) {
  using shape = narrow_gemm_columns_shape;
  using batch = shape::batch;
  constexpr std::int64_t batches = shape::batches, lanes = narrow_gemm_shape::lanes;
  batch pending[4][batches][Columns];
  for (std::int64_t order = 0; order < lanes; ++order) {
    const std::int64_t lane = narrow_gemm_reversed_order(order);
    batch sums[batches][Columns];
    TANDEM_UNROLL_ALL
    for (auto& row : sums)
      TANDEM_UNROLL_ALL
      for (batch& element : row) element = batch(0.0f);
    for (std::int64_t k = lane; k < depth; k += lanes) {
      batch x[batches];
      TANDEM_UNROLL_ALL
      for (std::int64_t q = 0; q < batches; ++q) {
        x[q] = batch::load_unaligned(s + k * lds + q * shape::width);
        narrow_gemm_keep_in_register(x[q]);
      }
      const float* b_row = b + k * ldb;
      TANDEM_UNROLL_ALL
      for (std::int64_t j = 0; j < Columns; ++j) {
        const batch bj(b_row[j]);
        TANDEM_UNROLL_ALL
        for (std::int64_t q = 0; q < batches; ++q) sums[q][j] = math::multiply_add(x[q], bj, sums[q][j]);
      }
    }
    std::int64_t level = 0;
    for (std::int64_t bits = order; bits & 1; bits >>= 1, ++level)
      TANDEM_UNROLL_ALL
      for (std::int64_t q = 0; q < batches; ++q)
        TANDEM_UNROLL_ALL
        for (std::int64_t j = 0; j < Columns; ++j) sums[q][j] = pending[level][q][j] + sums[q][j];
    TANDEM_UNROLL_ALL
    for (std::int64_t q = 0; q < batches; ++q)
      TANDEM_UNROLL_ALL
      for (std::int64_t j = 0; j < Columns; ++j) {
        if (level == 4) sums[q][j].store_unaligned(out + j * shape::rows + q * shape::width);
        else pending[level][q][j] = sums[q][j];
      }
  }
}

// A tile's results (column j's at results[j * rows]) into its `rows` rows
// and `columns` columns of C: by 4x4 transposes where there are four of
// each (the last four columns overlapping the ones before: they write the
// same values), one float at a time elsewhere.
inline void narrow_gemm_columns_store(const float* results, std::int64_t rows, std::int64_t columns, float* c,
                                      std::int64_t ldc) {
  constexpr std::int64_t tile_rows = narrow_gemm_columns_shape::rows;
  std::int64_t whole_rows = 0;
  if (columns >= 4) {
    whole_rows = rows / 4 * 4;
    for (std::int64_t r = 0; r < whole_rows; r += 4)
      for (std::int64_t j = 0; j < columns; j += 4) {
        const std::int64_t at = std::min(j, columns - 4);
        transpose_4x4(results + at * tile_rows + r, tile_rows, c + r * ldc + at, ldc);
      }
  }
  for (std::int64_t r = whole_rows; r < rows; ++r)
    for (std::int64_t j = 0; j < columns; ++j) c[r * ldc + j] = results[j * tile_rows + r];
}

// C (m x n, n <= 12) = A (m x k, a.row_stride == 1) * B (k x n), in tiles of
// narrow_gemm_columns_shape::rows rows: threads split the tiles.
inline void gemm_narrow_columns(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<float> a,
                                strided_matrix<float> b, float* c, std::int64_t ldc, epilogue_ref epilogue) {
  using shape = narrow_gemm_columns_shape;
  // B's rows contiguous, for broadcasts at fixed offsets.
  thread_local simd::buffer<float> rows_of_b;
  const float* b_rows = b.data;
  std::int64_t ldb = b.row_stride;
  if (b.col_stride != 1) {
    rows_of_b.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t kk = 0; kk < k; ++kk)
      for (std::int64_t j = 0; j < n; ++j) rows_of_b[static_cast<std::size_t>(kk * n + j)] = b(kk, j);
    b_rows = rows_of_b.data();
    ldb = n;
  }
  const std::int64_t column_chunks = (n + shape::max_columns - 1) / shape::max_columns;
  const std::int64_t tiles = (m + shape::rows - 1) / shape::rows;
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / (shape::rows * n * k));
  parallel_for(tiles, grain, [&](std::int64_t first, std::int64_t last) {
    // The tile's part of A's stored rows, copied together (zero past m):
    // read in place, rows a power of two apart (an MLP's 256 columns) fell
    // into a few sets of L1 and came from L2 (256x128x10 on AVX-512: 7.0 us
    // against 4.6 with A contiguous).
    thread_local simd::buffer<float> tile_rows;
    tile_rows.resize(static_cast<std::size_t>(k * shape::rows));
    float* const s = tile_rows.data();
    alignas(64) float results[shape::max_columns * shape::rows];
    for (std::int64_t tile = first; tile < last; ++tile) {
      const std::int64_t i = tile * shape::rows, rows = std::min(shape::rows, m - i);
      const float* from = a.data + i;
      if (rows == shape::rows) {
        for (std::int64_t kk = 0; kk < k; ++kk, from += a.col_stride)
          TANDEM_UNROLL_ALL
          for (std::int64_t q = 0; q < shape::batches; ++q)
            shape::batch::load_unaligned(from + q * shape::width).store_aligned(s + kk * shape::rows + q * shape::width);
      } else {
        for (std::int64_t kk = 0; kk < k; ++kk, from += a.col_stride) {
          std::copy(from, from + rows, s + kk * shape::rows);
          std::fill(s + kk * shape::rows + rows, s + (kk + 1) * shape::rows, 0.0f);
        }
      }
      constexpr std::int64_t lds = shape::rows;
      std::int64_t j = 0;
      for (std::int64_t chunk = 0; chunk < column_chunks; ++chunk) {
        const std::int64_t columns = (n - j + column_chunks - chunk - 1) / (column_chunks - chunk);
        [&]<std::int64_t... W>(std::integer_sequence<std::int64_t, W...>) {
          ((columns == W + 1 ? narrow_gemm_columns_tile<W + 1>(s, lds, k, b_rows + j, ldb, results) : void()), ...);
        }(std::make_integer_sequence<std::int64_t, shape::max_columns>{});
        narrow_gemm_columns_store(results, rows, columns, c + i * ldc + j, ldc);
        j += columns;
      }
    }
    const std::int64_t first_row = first * shape::rows;
    epilogue(gemm_block{first_row, std::min(m, last * shape::rows) - first_row, 0, n});
  });
}

// C (m x n, n <= 12, row stride ldc) = A (m x k) * B (k x n): threads split
// the rows; the epilogue is called with each thread's rows.
inline void gemm_narrow(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<float> a,
                        strided_matrix<float> b, float* c, std::int64_t ldc, epilogue_ref epilogue) {
  if (a.row_stride == 1 && a.col_stride != 1 && m >= narrow_gemm_columns_shape::rows)
    return gemm_narrow_columns(m, n, k, a, b, c, ldc, epilogue);
  using shape = narrow_gemm_shape;
  const std::int64_t padded = (k + shape::lanes - 1) / shape::lanes * shape::lanes;
  thread_local simd::buffer<float> columns_of_b;
  columns_of_b.resize(static_cast<std::size_t>(n * padded));
  narrow_gemm_pack_columns(b, n, k, padded, columns_of_b.data());
  const float* const b_columns = columns_of_b.data();
  // Columns in chunks as even as tiles allow: 10 are 4 + 3 + 3 on AVX-512,
  // 3 + 3 + 2 + 2 on AVX2.
  const std::int64_t column_chunks = (n + shape::max_columns - 1) / shape::max_columns;
  const bool in_place = a.col_stride == 1;
  // Rows packed at a time where A's are not contiguous.
  constexpr std::int64_t packed_rows = 16 * shape::rows;
  const std::int64_t chunks = padded / shape::lanes;
  const std::int64_t tiles = (m + shape::rows - 1) / shape::rows;
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / (shape::rows * n * padded));
  parallel_for(tiles, grain, [&](std::int64_t first, std::int64_t last) {
    thread_local simd::buffer<float> rows_of_a;
    const std::int64_t first_row = first * shape::rows, end_row = std::min(m, last * shape::rows);
    for (std::int64_t group = first_row; group < end_row; group += packed_rows) {
      const std::int64_t group_rows = std::min(packed_rows, end_row - group);
      if (!in_place) {
        rows_of_a.resize(
            static_cast<std::size_t>((group_rows + shape::rows - 1) / shape::rows * narrow_gemm_tile_stride(chunks)));
        narrow_gemm_pack_rows(a, group, group_rows, k, chunks, rows_of_a.data());
      }
      for (std::int64_t i = group; i < group + group_rows; i += shape::rows) {
        const std::int64_t rows = std::min(shape::rows, group + group_rows - i);
        narrow_gemm_rows tile_rows;
        if (in_place) {
          tile_rows.chunk_stride = shape::lanes;
          for (std::int64_t r = 0; r < shape::rows; ++r) tile_rows.row[r] = &a(r < rows ? i + r : i, 0);
        } else {
          tile_rows.chunk_stride = shape::rows * shape::lanes;
          const float* tile = rows_of_a.data() + (i - group) / shape::rows * narrow_gemm_tile_stride(chunks);
          for (std::int64_t r = 0; r < shape::rows; ++r) tile_rows.row[r] = tile + r * shape::lanes;
        }
        std::int64_t j = 0;
        for (std::int64_t chunk = 0; chunk < column_chunks; ++chunk) {
          const std::int64_t columns = (n - j + column_chunks - chunk - 1) / (column_chunks - chunk);
          [&]<std::int64_t... W>(std::integer_sequence<std::int64_t, W...>) {
            ((columns == W + 1
                  ? narrow_gemm_tile<W + 1>(tile_rows, k, b_columns + j * padded, padded, c + i * ldc + j, ldc, rows)
                  : void()),
             ...);
          }(std::make_integer_sequence<std::int64_t, shape::max_columns>{});
          j += columns;
        }
      }
    }
    epilogue(gemm_block{first_row, end_row - first_row, 0, n});
  });
}

#endif

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
