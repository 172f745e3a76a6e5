#pragma once
// C = A * B for bfloat16 A and B: products summed in float, rounded once to
// bfloat16, or stored as float sums (the float products of an autocast
// scope, core/autocast.hpp, whose operands were rounded to bfloat16).
//
// Where the CPU has AVX512-BF16 (AMD Zen 4 and later, Intel Cooper Lake and
// Sapphire Rapids and later), vdpbf16ps multiplies pairs of bfloat16 in one
// instruction: each 32-bit lane of its result gains a[2i] * b[2i] +
// a[2i+1] * b[2i+1], the two exact products added in float, one rounding
// each. So B is packed in NR-column panels of depth pairs, and A's pairs (a
// row's two steps side by side, broadcast to every lane) are read in place
// where a row's steps are contiguous, else packed in MR-row panels; an
// MR x NR tile of float sums stays in registers for the whole depth and is
// rounded to bfloat16 as it is stored. The instruction reads
// subnormal bfloat16 inputs as zero and flushes subnormal sums to zero
// (Intel's definition); values that small are 2^-126 and below.
//
// Elsewhere the operands are widened to float and the float product runs
// (kernels/cpu/gemm.hpp), rounded once: the same sums in a different order.
//
// The kernel is compiled where a translation unit reaches AVX-512 (the
// library's AVX-512 build, or a program built for it) with the instruction's
// target enabled on its functions alone, and runs where the CPU has it: the
// rest of the unit may run on AVX-512 CPUs without it.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tandem/core/config.hpp"
#include "tandem/core/reduced_float.hpp"
#include "tandem/kernels/cpu/dispatch_slot.hpp"
#include "tandem/kernels/cpu/gemm.hpp"
#include "tandem/kernels/cpu/isa.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

#if TANDEM_FLAGS_REACH_X86_64_V4 && !defined(__CUDACC__) && \
    ((defined(__GNUC__) && __GNUC__ >= 10) || (defined(__clang__) && __clang_major__ >= 9))
#define TANDEM_BF16_DOT_KERNEL 1
#include <cpuid.h>
#include <immintrin.h>
#if defined(__AVX512BF16__)
#define TANDEM_BF16_DOT_TARGET
#else
#define TANDEM_BF16_DOT_TARGET __attribute__((target("avx512bf16")))
#endif
#else
#define TANDEM_BF16_DOT_KERNEL 0
#endif

namespace tandem::detail {

inline namespace TANDEM_KERNEL_ISA {

// The float product of widened operands, stored into c (rounded once where
// C is bfloat16).
template <class Out>
void gemm_bf16_via_float(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<bfloat16> a,
                         strided_matrix<bfloat16> b, Out* c, std::int64_t ldc) {
  simd::scratch<float> wide_a(static_cast<std::size_t>(m * k)), wide_b(static_cast<std::size_t>(k * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) wide_a[static_cast<std::size_t>(i * k + p)] = static_cast<float>(a(i, p));
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j) wide_b[static_cast<std::size_t>(p * n + j)] = static_cast<float>(b(p, j));
  if constexpr (std::is_same_v<Out, float>) {
    native_gemm<float>(m, n, k, {wide_a.data(), k, 1}, {wide_b.data(), n, 1}, c, ldc);
  } else {
    simd::scratch<float> wide_c(static_cast<std::size_t>(m * n));
    native_gemm<float>(m, n, k, {wide_a.data(), k, 1}, {wide_b.data(), n, 1}, wide_c.data(), n);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = bfloat16(wide_c[static_cast<std::size_t>(i * n + j)]);
  }
}

#if TANDEM_BF16_DOT_KERNEL

// Whether the CPU has AVX512-BF16 (cpuid leaf 7, subleaf 1: EAX bit 5),
// asked once. Only units compiled for AVX-512 ask, which run where it runs.
// In the build's namespace, as everything a kernel build may leave out of
// line (kernels/cpu/isa.hpp).
inline bool cpu_has_bf16_dot_products() {
  static const bool has = [] {
    if (__get_cpuid_max(0, nullptr) < 7) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid_count(7, 1, a, b, c, d);
    return (a >> 5 & 1u) != 0;
  }();
  return has;
}

// The tile: MR rows of A (one broadcast pair each step) against NR columns
// of B (`Batches` registers of 16 pairs), float sums in registers: two
// registers wide, and one where C has at most 16 columns (a layer of 10
// outputs filled 10 of 32 columns).
template <int Batches>
struct bf16_dot_shape {
  static constexpr int batches = Batches;
  static constexpr std::int64_t mr = 12;
  static constexpr std::int64_t nr = 16 * Batches;
};

// The first `count` of 16 lanes, count clamped to [0, 16].
inline __mmask16 first_lanes(std::int64_t count) {
  return count >= 16 ? static_cast<__mmask16>(0xffff)
                     : count <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << count) - 1);
}

// Rows [first, first + MR) of A as pairs: pair p of row i at out[p * MR + i]
// (bfloat16 2p in the low half, 2p + 1 in the high half), rows past m and
// the step past an odd depth zero.
inline void pack_bf16_rows(strided_matrix<bfloat16> a, std::int64_t m, std::int64_t k, std::int64_t first,
                           std::uint32_t* out) {
  constexpr std::int64_t mr = bf16_dot_shape<1>::mr;
  const std::int64_t pairs = (k + 1) / 2, rows = std::min(mr, m - first);
  if (a.row_stride == 1) {
    // A is a transposed matrix: a step's rows are adjacent in memory, so
    // a panel's pairs are two of them widened and interleaved.
    const __mmask16 live = static_cast<__mmask16>((1u << rows) - 1);
    for (std::int64_t p = 0; p < pairs; ++p) {
      const __m512i even = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, &a(first, 2 * p)));
      const __m512i odd = 2 * p + 1 < k ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, &a(first, 2 * p + 1)))
                                        : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(out + p * mr, (1u << mr) - 1, _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
    }
    return;
  }
  auto bits = [&](std::int64_t i, std::int64_t p) -> std::uint32_t { return a(first + i, p).bits(); };
  for (std::int64_t i = 0; i < mr; ++i) {
    if (i >= rows) {
      for (std::int64_t p = 0; p < pairs; ++p) out[p * mr + i] = 0;
      continue;
    }
    std::int64_t p = 0;
    if (a.col_stride == 1) {
      // A row's pairs are adjacent in memory.
      const bfloat16* row = &a(first + i, 0);
      for (; 2 * p + 1 < k; ++p) std::memcpy(&out[p * mr + i], row + 2 * p, sizeof(std::uint32_t));
    } else {
      for (; 2 * p + 1 < k; ++p) out[p * mr + i] = bits(i, 2 * p) | bits(i, 2 * p + 1) << 16;
    }
    if (2 * p < k) out[p * mr + i] = bits(i, 2 * p);
  }
}

// Columns [first, first + NR) of B as pairs: pair p of column j at
// out[p * NR + j], columns past n and the step past an odd depth zero.
template <class Shape>
void pack_bf16_columns(strided_matrix<bfloat16> b, std::int64_t n, std::int64_t k, std::int64_t first,
                       std::uint32_t* out) {
  constexpr std::int64_t nr = Shape::nr;
  const std::int64_t pairs = (k + 1) / 2, cols = std::min(nr, n - first);
  auto bits = [&](std::int64_t p, std::int64_t j) -> std::uint32_t {
    return p < k && j < cols ? b(p, first + j).bits() : 0u;
  };
  if (b.col_stride == 1) {
    // Two rows of 16 columns at a time, widened and interleaved.
    for (std::int64_t p = 0; p < pairs; ++p) {
      const bfloat16* even = &b(2 * p, first);
      const bfloat16* odd = 2 * p + 1 < k ? &b(2 * p + 1, first) : nullptr;
      for (int part = 0; part < Shape::batches; ++part) {
        const __mmask16 live = first_lanes(cols - 16 * part);
        const __m512i e = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, even + 16 * part));
        const __m512i o = odd ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, odd + 16 * part))
                              : _mm512_setzero_si512();
        _mm512_storeu_si512(out + p * nr + 16 * part, _mm512_or_si512(e, _mm512_slli_epi32(o, 16)));
      }
    }
    return;
  }
  if (b.row_stride == 1 && cols == nr) {
    // B is a transposed matrix (a layer's weight): a column's pairs are
    // adjacent in memory.
    for (std::int64_t j = 0; j < nr; ++j) {
      const bfloat16* column = &b(0, first + j);
      std::int64_t p = 0;
      for (; 2 * p + 1 < k; ++p) std::memcpy(&out[p * nr + j], column + 2 * p, sizeof(std::uint32_t));
      if (2 * p < k) out[p * nr + j] = column[2 * p].bits();
    }
    return;
  }
  for (std::int64_t p = 0; p < pairs; ++p)
    for (std::int64_t j = 0; j < nr; ++j) out[p * nr + j] = bits(2 * p, j) | bits(2 * p + 1, j) << 16;
}

// 16 float sums rounded to bfloat16 as bfloat16(float) rounds (to nearest
// even, a NaN quiet with its sign and payload's top bits), the `live` ones
// stored.
TANDEM_ALWAYS_INLINE void store_rounded_bf16(bfloat16* to, __m512 sums, __mmask16 live) {
  const __m512i bits = _mm512_castps_si512(sums);
  const __m512i parity = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(parity, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(sums, sums, _CMP_UNORD_Q);
  rounded = _mm512_mask_or_epi32(rounded, nan, _mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  _mm512_mask_cvtepi32_storeu_epi16(to, live, rounded);
}

TANDEM_ALWAYS_INLINE void store_sums(bfloat16* to, __m512 sums, __mmask16 live) { store_rounded_bf16(to, sums, live); }
TANDEM_ALWAYS_INLINE void store_sums(float* to, __m512 sums, __mmask16 live) { _mm512_mask_storeu_ps(to, live, sums); }

// Where a tile reads A's pairs: a packed panel, or, where a row's steps are
// contiguous, the panel's rows in place (rows past A's last repeat it; their
// sums are not stored): packing A cost more than a narrow product.
struct bf16_panel_of_a {
  const std::uint32_t* packed;
  const bfloat16* rows[bf16_dot_shape<1>::mr];
};

// Pair p of the panel's row i: packed, or read in place.
template <bool InPlace>
TANDEM_ALWAYS_INLINE int bf16_pair(const bf16_panel_of_a& a, int i, std::int64_t p) {
  std::uint32_t pair;
  if constexpr (InPlace) std::memcpy(&pair, a.rows[i] + 2 * p, sizeof pair);
  else pair = a.packed[p * bf16_dot_shape<1>::mr + i];
  return static_cast<int>(pair);
}

// One tile of C: A's panel (MR rows) against packed B (NR columns), k steps
// deep, its first `rows` rows and `cols` columns stored. Read in place, an
// odd depth's last step is summed as the pair (step, 0), which is B's.
template <class Shape, bool InPlace, class Out>
TANDEM_BF16_DOT_TARGET void bf16_dot_tile(const bf16_panel_of_a& a, const std::uint32_t* pb, std::int64_t k, Out* c,
                                          std::int64_t ldc, std::int64_t rows, std::int64_t cols) {
  constexpr int mr = static_cast<int>(Shape::mr), nb = Shape::batches;
  __m512 sums[mr][nb];
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 24
#endif
  for (int t = 0; t < mr * nb; ++t) sums[t / nb][t % nb] = _mm512_setzero_ps();
  const std::int64_t pairs = InPlace ? k / 2 : (k + 1) / 2;
  for (std::int64_t p = 0; p < pairs; ++p) {
    __m512bh b[nb];
    for (int j = 0; j < nb; ++j) b[j] = (__m512bh)_mm512_loadu_si512(pb + p * Shape::nr + 16 * j);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 12
#endif
    for (int i = 0; i < mr; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(bf16_pair<InPlace>(a, i, p));
      for (int j = 0; j < nb; ++j) sums[i][j] = _mm512_dpbf16_ps(sums[i][j], ai, b[j]);
    }
  }
  if (InPlace && k % 2 != 0) {
    __m512bh b[nb];
    for (int j = 0; j < nb; ++j) b[j] = (__m512bh)_mm512_loadu_si512(pb + pairs * Shape::nr + 16 * j);
    for (int i = 0; i < mr; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a.rows[i][k - 1].bits()));
      for (int j = 0; j < nb; ++j) sums[i][j] = _mm512_dpbf16_ps(sums[i][j], ai, b[j]);
    }
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 12
#endif
  for (int i = 0; i < mr; ++i) {
    if (i < rows)
      for (int j = 0; j < nb; ++j) store_sums(c + i * ldc + 16 * j, sums[i][j], first_lanes(cols - 16 * j));
  }
}

// The product with vdpbf16ps: B packed once, and A where its rows' steps
// are not contiguous (each thread packs a share of the panels), then the
// tiles shared among the threads, a column panel of B at a time so that
// consecutive tiles read the same panel.
template <class Shape, class Out>
void gemm_bf16_dot(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<bfloat16> a,
                   strided_matrix<bfloat16> b, Out* c, std::int64_t ldc) {
  using shape = Shape;
  const std::int64_t pairs = (k + 1) / 2;
  const std::int64_t row_panels = (m + shape::mr - 1) / shape::mr, column_panels = (n + shape::nr - 1) / shape::nr;
  const bool a_in_place = a.col_stride == 1;
  thread_local simd::scratch<std::uint32_t> packed_a, packed_b;
  packed_a.resize(a_in_place ? 0 : static_cast<std::size_t>(row_panels * pairs * shape::mr));
  packed_b.resize(static_cast<std::size_t>(column_panels * pairs * shape::nr));
  std::uint32_t* const pa = packed_a.data();
  std::uint32_t* const pb = packed_b.data();
  // Chunks of a few microseconds' work at least: packing moves about a
  // pair per cycle, and a tile sums 24 pairs of registers per pair of depth.
  const std::int64_t panel_grain = std::max<std::int64_t>(1, 2048 / std::max<std::int64_t>(pairs, 1));
  if (!a_in_place)
    parallel_for(row_panels, panel_grain, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t panel = first; panel < last; ++panel)
        pack_bf16_rows(a, m, k, panel * shape::mr, pa + panel * pairs * shape::mr);
    });
  parallel_for(column_panels, panel_grain, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t panel = first; panel < last; ++panel)
      pack_bf16_columns<shape>(b, n, k, panel * shape::nr, pb + panel * pairs * shape::nr);
  });
  const std::int64_t tile_grain = std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(pairs, 1));
  parallel_for(row_panels * column_panels, tile_grain, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t tile = first; tile < last; ++tile) {
      const std::int64_t jp = tile / row_panels, ip = tile % row_panels;
      const std::int64_t rows = std::min(shape::mr, m - ip * shape::mr), cols = std::min(shape::nr, n - jp * shape::nr);
      Out* const at = c + ip * shape::mr * ldc + jp * shape::nr;
      bf16_panel_of_a panel{};
      if (a_in_place) {
        for (std::int64_t i = 0; i < shape::mr; ++i) panel.rows[i] = &a(ip * shape::mr + std::min(i, rows - 1), 0);
        bf16_dot_tile<shape, true>(panel, pb + jp * pairs * shape::nr, k, at, ldc, rows, cols);
      } else {
        panel.packed = pa + ip * pairs * shape::mr;
        bf16_dot_tile<shape, false>(panel, pb + jp * pairs * shape::nr, k, at, ldc, rows, cols);
      }
    }
  });
}

#endif

// This translation unit's own bfloat16 product: vdpbf16ps where the unit
// compiles it and the CPU runs it, else through float.
template <class Out>
void native_gemm_bf16(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<bfloat16> a,
                      strided_matrix<bfloat16> b, Out* c, std::int64_t ldc) {
#if TANDEM_BF16_DOT_KERNEL
  if (cpu_has_bf16_dot_products()) {
    if (n <= bf16_dot_shape<1>::nr)
      gemm_bf16_dot<bf16_dot_shape<1>>(m, n, k, a, b, c, ldc);
    else
      gemm_bf16_dot<bf16_dot_shape<2>>(m, n, k, a, b, c, ldc);
    return;
  }
#endif
  gemm_bf16_via_float(m, n, k, a, b, c, ldc);
}

}  // inline namespace TANDEM_KERNEL_ISA

// The bfloat16 product chosen at run time among tandem::compiled's builds
// (kernels/cpu/dispatch.hpp), by the type of C; null until a choice is made.
template <class Out>
using gemm_bf16_function = void (*)(std::int64_t, std::int64_t, std::int64_t, strided_matrix<bfloat16>,
                                    strided_matrix<bfloat16>, Out*, std::int64_t);
template <class Out>
inline constinit std::atomic<gemm_bf16_function<Out>> dispatched_gemm_bf16{nullptr};

inline namespace TANDEM_KERNEL_ISA {

// C (m x n, row stride ldc; bfloat16 or float) = A (m x k) * B (k x n), for
// m, n > 0.
template <class Out>
void gemm_bf16(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<bfloat16> a,
               strided_matrix<bfloat16> b, Out* c, std::int64_t ldc) {
  call_dispatched<&native_gemm_bf16<Out>>(dispatched_gemm_bf16<Out>, m, n, k, a, b, c, ldc);
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
