#pragma once
// C = A * B for the CPU, in the packed, register-blocked form of GotoBLAS and
// BLIS: blocks of B are packed into NR-wide panels and blocks of A into
// MR-tall panels (gemm_pack.hpp), and an MR x NR micro-kernel keeps its
// tile of C in SIMD registers across the whole depth of a block. The micro-kernel sums
// even and odd k into separate accumulators, added at the end of the block:
// two chains half as long (a little more accurate), and the float32 results
// MindSpore's documentation prints. The blocks of that sum are fixed by the
// depth alone; how many of them one pass over C covers is chosen by the
// L1 cache, without changing the bits. Threads split the rows of C (its
// columns where it has few rows); each element's sum runs in the same order
// for any thread count.
//
// An epilogue, if given, is called with each block of C as soon as its sum
// is complete, by the thread that computed it, while the block is still in
// cache: a static graph runs the elementwise work that reads a product there.
//
// A product with few columns is summed along its depth instead
// (gemm_narrow.hpp).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/kernels/cpu/cache.hpp"
#include "tandem/kernels/cpu/gemm_block.hpp"
#include "tandem/kernels/cpu/gemm_pack.hpp"
#include "tandem/kernels/cpu/gemm_narrow.hpp"
#include "tandem/kernels/cpu/isa.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

inline namespace TANDEM_KERNEL_ISA {

// A tile of `Batches` SIMD batches per row: 2 in general, 1 where C has at
// most one batch's columns (in 2-batch AVX-512 tiles, 22 of every 32
// lanes of a 10-class layer's product summed padding).
template <class T, std::int64_t Batches = 2>
struct gemm_shape {
  static constexpr std::int64_t width = static_cast<std::int64_t>(simd::width<T>);
  static constexpr std::int64_t batches = Batches;
  // Every ISA sums each element of C as (its even steps of the depth) +
  // (its odd steps), so the same bits come out on AVX2 and AVX-512 (the
  // seeds' printed products depend on that order: a 6-row tile without the
  // split on AVX2 was 5-8% faster at 1024^3 but printed 9.0199995 for
  // MindSpore's 9.02). A tile is 12 batches (6 rows of 2, or 12 of 1).
  // With 32 vector registers (AVX-512) it keeps both sums in 24
  // accumulators, interleaved; with 16, 24 do not fit, so the tile sums the
  // even steps in 12, sets them aside and sums the odd steps in the same 12
  // (12 FMAs per 8 loads, where a 3 x 2 tile with both sums in registers did
  // 6 per 5), from panels packed with the even steps first (pack_panel_for).
  static constexpr bool interleaved = width * static_cast<std::int64_t>(sizeof(T)) >= 64;
  static constexpr std::int64_t mr = 12 / Batches;
  static constexpr std::int64_t nr = Batches * width;
  // The deepest block of the depth summed as one (even + odd) pair before
  // it is added to C: this fixes the order of every element's sum, the
  // same on every machine and ISA (1024 steps are 4 blocks of 256, the
  // MLP's 784 are 3 of 262). How many blocks one pass over C covers is the
  // machine's choice (gemm_pass_blocks): it does not change the bits.
  static constexpr std::int64_t block_depth = 320;
  // The deepest pass: each pass ends in a visit of C from memory (and, on
  // AVX2, the parity sums' store and reload), so on Zen 4 passes of 512
  // against 256 ran 1024^3 4% (AVX-512) to 5% (AVX2) faster.
  static constexpr std::int64_t pass_depth = 512;
  static constexpr std::int64_t mc = 96;
  // The widest block of B packed at once (gemm_block_columns).
  static constexpr std::int64_t nc = nr * 128;
};

}  // inline namespace TANDEM_KERNEL_ISA

inline namespace TANDEM_KERNEL_ISA {

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
// Where the micro-kernel reads A: a packed panel (element (i, k) at
// a[k * MR + i]), or MR rows of A in place, through its strides.
template <class T>
struct a_panel {
  const T* a;
  std::int64_t row_stride, k_stride;
  TANDEM_ALWAYS_INLINE T operator()(std::int64_t i, std::int64_t k) const { return a[i * row_stride + k * k_stride]; }
};
template <class T, std::int64_t MR>
struct packed_a_panel {
  const T* a;
  TANDEM_ALWAYS_INLINE T operator()(std::int64_t i, std::int64_t k) const { return a[k * MR + i]; }
};

// Where the micro-kernel reads B: a packed panel (step k's NR columns at
// b[k * NR], aligned), or NR columns of a B whose rows are contiguous, in
// place (step k at b[k * row_stride]).
template <class T, std::int64_t NR>
struct packed_b_panel {
  const T* b;
  TANDEM_ALWAYS_INLINE simd::batch<T> load(std::int64_t k, std::int64_t column) const {
    return simd::batch<T>::load_aligned(b + k * NR + column);
  }
};
template <class T>
struct b_panel {
  const T* b;
  std::int64_t row_stride;
  TANDEM_ALWAYS_INLINE simd::batch<T> load(std::int64_t k, std::int64_t column) const {
    return simd::batch<T>::load_unaligned(b + k * row_stride + column);
  }
};

// Calls f(i, j) for each batch of a Rows x Batches tile, as straight-line
// code at every optimization level: under GCC 12's -O2 the per-block loops
// over a 6 x 2 tile (clearing its sums, setting the even ones aside, adding
// it to C) stayed loops through the stack, and the tile's update of C a
// call: 128x256x256 ran 5% slower than at -O3.
template <std::int64_t Rows, std::int64_t Batches, class F>
TANDEM_ALWAYS_INLINE void each_batch(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(static_cast<std::int64_t>(I) / Batches, static_cast<std::int64_t>(I) % Batches), ...);
  }(std::make_index_sequence<static_cast<std::size_t>(Rows * Batches)>{});
}

// C's rows [0, rows) and columns [0, cols) of a tile that C does not fill,
// set to (store) or incremented by the tile's sums.
template <class G, std::int64_t Live, class T, class Sums>
void add_partial_tile(const Sums& acc, T* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols, bool store) {
  alignas(64) T tile[Live * G::nr];
  each_batch<Live, G::batches>(
      [&](std::int64_t i, std::int64_t j) { acc[i][j].store_aligned(tile + i * G::nr + j * G::width); });
  for (std::int64_t i = 0; i < rows; ++i) {
    if (store)
      simd::copy_row(tile + i * G::nr, cols, c + i * ldc);
    else
      simd::add_row(tile + i * G::nr, cols, c + i * ldc);
  }
}

// tile(MR x NR) = A panel (kc x MR) * B panel (kc x NR), accumulated into C
// unless `overwrite` (the first pass over the depth). The pass is summed in
// blocks of `block` steps (its last may be shorter), each as its even plus
// its odd steps and then added to C: the order of gemm_shape::block_depth,
// whatever the pass's depth. Only the first Live rows are computed: a last
// panel of one or two rows (128 rows are 21 panels of six and one of two)
// runs at a third of a full panel's cost, its even and odd sums in
// registers at once.
template <class G, std::int64_t Live, class T, class APanel, class BPanel>
void micro_kernel(std::int64_t kc, std::int64_t block, const APanel a, const BPanel b, T* c, std::int64_t ldc,
                  std::int64_t rows, std::int64_t cols, bool overwrite) {
  using batch = simd::batch<T>;
  constexpr std::int64_t w = G::width, nb = G::batches;
  // The tile of C is read or written after each block's sums: its lines
  // (rows a matrix's width apart, often in one cache set) are fetched now
  // and arrive during the first block's sums.
  for (std::int64_t i = 0; i < rows; ++i) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + G::nr - 1, 1);
  }
  // Both parities' sums, the B batches and a broadcast fit in 16
  // registers where Live is small.
  constexpr bool interleaved = G::interleaved || 2 * Live * nb + nb + 1 <= 16;
  using sums = batch[Live][nb];
  // Step k of the depth is at `at` of the packed panels: with 16 registers
  // they hold each block's even steps, then its odd ones (pack_panel_for).
  // Panels read in place are in the depth's order.
  constexpr bool by_parity = !G::interleaved;
  constexpr bool a_in_place = std::is_same_v<APanel, a_panel<T>>;
  constexpr bool b_in_place = std::is_same_v<BPanel, b_panel<T>>;
  auto step = [&](std::int64_t k, std::int64_t at, sums& into) {
    batch bj[nb];
    for (std::int64_t j = 0; j < nb; ++j) bj[j] = b.load(b_in_place ? k : at, j * w);
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__clang__)
#pragma GCC unroll 12
#endif
    for (std::int64_t i = 0; i < Live; ++i) {
      batch ai(a(i, a_in_place ? k : at));
      for (std::int64_t j = 0; j < nb; ++j) into[i][j] = math::multiply_add(ai, bj[j], into[i][j]);
    }
  };
  const bool whole = rows == G::mr && cols == G::nr;
  for (std::int64_t first = 0; first < kc; first += block) {
    const std::int64_t last = std::min(kc, first + block);
    const std::int64_t evens = even_steps(last - first);
    sums acc;
    each_batch<Live, nb>([&](std::int64_t i, std::int64_t j) { acc[i][j] = batch(T(0)); });
    if constexpr (interleaved) {
      sums odd;
      each_batch<Live, nb>([&](std::int64_t i, std::int64_t j) { odd[i][j] = batch(T(0)); });
      std::int64_t k = first;
      for (; k + 1 < last; k += 2) {
        const std::int64_t pair = (k - first) / 2;
        step(k, by_parity ? first + pair : k, acc);
        step(k + 1, by_parity ? first + evens + pair : k + 1, odd);
      }
      if (k < last) step(k, by_parity ? first + (k - first) / 2 : k, acc);
      each_batch<Live, nb>([&](std::int64_t i, std::int64_t j) { acc[i][j] += odd[i][j]; });
    } else {
      for (std::int64_t k = first, at = first; k < last; k += 2, ++at) step(k, at, acc);
      sums even;
      each_batch<Live, nb>([&](std::int64_t i, std::int64_t j) {
        even[i][j] = acc[i][j];
        acc[i][j] = batch(T(0));
      });
      for (std::int64_t k = first + 1, at = first + evens; k < last; k += 2, ++at) step(k, at, acc);
      each_batch<Live, nb>([&](std::int64_t i, std::int64_t j) { acc[i][j] = even[i][j] + acc[i][j]; });
    }
    const bool store = overwrite && first == 0;
    if (whole) {
      each_batch<Live, nb>([&](std::int64_t i, std::int64_t j) {
        T* at = c + i * ldc + j * w;
        (store ? acc[i][j] : acc[i][j] + batch::load_unaligned(at)).store_unaligned(at);
      });
    } else {
      add_partial_tile<G, Live>(acc, c, ldc, rows, cols, store);
    }
  }
}

// C's Rows rows (one or two: a decoding step's product), columns [first,
// last), = A * B with B's rows contiguous and read in place, each row once,
// Batches batches of it at a time: the tiles of micro_kernel read two lines
// of every row per panel, which kept a 1 x 128 x 512 product waiting on
// memory. Each element is summed as micro_kernel sums it (blocks of
// `block` steps, each its even steps plus its odd steps, then added to C),
// so a row of C has the same bits whichever path computed it.
template <class G, std::int64_t Rows, class T>
void rows_times_b(std::int64_t k, std::int64_t block, strided_matrix<T> a, strided_matrix<T> b, T* c,
                  std::int64_t ldc, std::int64_t first, std::int64_t last) {
  using batch = simd::batch<T>;
  constexpr std::int64_t w = G::width;
  // Both parities' sums in registers, beside a batch of B and A's steps.
  constexpr std::int64_t sums_held = sizeof(batch) >= 64 ? 24 : 12;
  auto columns = [&]<std::int64_t Batches>(std::int64_t j, std::int64_t live) {
    for (std::int64_t start = 0; start < k; start += block) {
      const std::int64_t end = std::min(k, start + block);
      batch even[Rows][Batches], odd[Rows][Batches];
      each_batch<Rows, Batches>([&](std::int64_t i, std::int64_t q) { even[i][q] = odd[i][q] = batch(T(0)); });
      auto step = [&](std::int64_t s, batch (&into)[Rows][Batches]) {
        const T* row = &b(s, j);
        batch ai[Rows];
        for (std::int64_t i = 0; i < Rows; ++i) ai[i] = batch(a(i, s));
        each_batch<1, Batches>([&](std::int64_t, std::int64_t q) {
          batch bq;
          if (Batches > 1 || live == w) {
            bq = batch::load_unaligned(row + q * w);
          } else {
            alignas(64) T tail[w] = {};
            std::copy_n(row, live, tail);
            bq = batch::load_aligned(tail);
          }
          for (std::int64_t i = 0; i < Rows; ++i) into[i][q] = math::multiply_add(ai[i], bq, into[i][q]);
        });
      };
      std::int64_t s = start;
      for (; s + 1 < end; s += 2) {
        step(s, even);
        step(s + 1, odd);
      }
      if (s < end) step(s, even);
      each_batch<Rows, Batches>([&](std::int64_t i, std::int64_t q) {
        const batch sum = even[i][q] + odd[i][q];
        T* at = c + i * ldc + j + q * w;
        if (Batches > 1 || live == w) {
          (start == 0 ? sum : sum + batch::load_unaligned(at)).store_unaligned(at);
        } else {
          alignas(64) T tail[w];
          sum.store_aligned(tail);
          for (std::int64_t e = 0; e < live; ++e) at[e] = start == 0 ? tail[e] : tail[e] + at[e];
        }
      });
    }
  };
  constexpr std::int64_t batches = sums_held / (2 * Rows);
  std::int64_t j = first;
  for (; j + batches * w <= last; j += batches * w) columns.template operator()<batches>(j, batches * w);
  for (; j < last; j += w) columns.template operator()<1>(j, std::min(w, last - j));
}

// Up to this many panels of B, A is read in place rather than packed.
inline constexpr std::int64_t in_place_a_panels = 2;

// A pass's packed A is kept for every block of B's columns up to this size
// (1024 rows of 512 steps are 2 MiB); a larger one is packed per block.
inline constexpr std::int64_t reused_a_bytes = std::int64_t{8} << 20;

template <class T>
simd::scratch<T>& packing_buffer(int which) {
  thread_local simd::scratch<T> buffers[3];
  return buffers[which];
}

// How many summation blocks of `block` steps one pass over C covers: as many
// as keep the pass within G::pass_depth and its packed panel of B (the
// micro-kernel's operand that every tile of a column re-reads) within L1,
// or, where even one block's panel is larger than L1, as many as
// pass_depth allows. On an Intel Xeon with AVX-512 (two 512-bit FMA units,
// 48 KiB of L1) passes of 512 steps ran 1024^3 at 0.83 of OpenBLAS, passes
// of 256 at 1.0: the 64 KiB panel came from L2 for every tile.
template <class G, class T>
std::int64_t gemm_pass_blocks(std::int64_t block) {
  const std::int64_t most = std::max<std::int64_t>(1, G::pass_depth / block);
  const std::int64_t panel = block * G::nr * static_cast<std::int64_t>(sizeof(T));
  const std::int64_t l1 = l1_data_cache_bytes();
  if (panel > l1) return most;
  return std::min(most, l1 / panel);
}

// How many columns of B one packed block holds, for passes `depth` deep:
// as many as fill half of L2, where every row block of A finds them again,
// but at least 512 (each block packs A anew) and at most G::nc. On an Intel
// Xeon (2 MiB of L2), one thread, blocks of all 1024 columns of 1024^3 ran
// at 91.5 GFLOP/s with AVX2 (2 MiB per block: each row block of A read
// them from L3), of 512 at 96.0; AVX-512's 2048^3 took 135.1 in blocks of
// 2048 columns, 139.4 in blocks of 1024.
template <class G, class T>
std::int64_t gemm_block_columns(std::int64_t depth) {
  const std::int64_t fit = l2_cache_bytes() / 2 / (depth * static_cast<std::int64_t>(sizeof(T))) / G::nr * G::nr;
  return std::clamp<std::int64_t>(fit, (512 + G::nr - 1) / G::nr * G::nr, G::nc);
}

// C = A * B in G's tiles, for k > 0. `pass_blocks`: the summation blocks
// per pass over C, and `columns_per_block` the columns of a packed block of
// B, where given (tests); the machine's choice where 0.
template <class G, class T>
void gemm_blocks(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<T> a, strided_matrix<T> b, T* c,
                 std::int64_t ldc, epilogue_ref epilogue, std::int64_t pass_blocks = 0,
                 std::int64_t columns_per_block = 0) {
  // Summation blocks of equal depth: no thin remainder block, which would
  // run the micro-kernel at a fraction of its speed. Passes of whole blocks.
  const std::int64_t blocks = (k + G::block_depth - 1) / G::block_depth;
  const std::int64_t sum_block = (k + blocks - 1) / blocks;
  const std::int64_t k_block = sum_block * (pass_blocks > 0 ? pass_blocks : gemm_pass_blocks<G, T>(sum_block));
  const std::int64_t block_columns =
      columns_per_block > 0 ? columns_per_block : gemm_block_columns<G, T>(std::min(k, k_block));
  // Row blocks of whole panels of A, as equal as panels allow, as many as a
  // multiple of the threads: 11 blocks of 96 rows of a 1024-row product kept
  // one of two threads idle a sixth of the time.
  const std::int64_t panels = (m + G::mr - 1) / G::mr;
  const std::int64_t threads = thread_pool::instance().size();
  const std::int64_t row_blocks = std::min(panels, ((m + G::mc - 1) / G::mc + threads - 1) / threads * threads);
  auto block_start = [&](std::int64_t block) { return std::min(m, block * panels / row_blocks * G::mr); };
  // Columns [first_col, last_col) of C, on the threads when run by one,
  // by the calling thread alone when run inside a parallel_for's chunk.
  // Passes over the depth outermost, blocks of B's columns within: a pass's
  // packed A then serves every block of B (packed per block, A took 5.5% of
  // 1024^3's samples on AVX2, OpenBLAS's copy 2.3%), where it fits in
  // reused_a_bytes.
  auto columns = [&](std::int64_t first_col, std::int64_t last_col) {
    if (m <= 2 && b.col_stride == 1) {
      if (m == 1)
        rows_times_b<G, 1>(k, sum_block, a, b, c, ldc, first_col, last_col);
      else
        rows_times_b<G, 2>(k, sum_block, a, b, c, ldc, first_col, last_col);
      epilogue(gemm_block{0, m, first_col, last_col - first_col});
      return;
    }
    auto& packed_b = packing_buffer<T>(0);
    auto& packed_pass_a = packing_buffer<T>(2);
    // A panel of A that meets one or two panels of B, or whose rows are
    // contiguous, is read in place: packing would cost more (6% of the MLP's
    // products) than it saves. Not where rows are a multiple of 4 KiB apart:
    // in one set of L1, six of them evicted each other (1024^3 ran 10%
    // slower).
    const bool rows_in_place =
        a.col_stride == 1 && a.row_stride * static_cast<std::int64_t>(sizeof(T)) % 4096 != 0;
    // Where A has less than a panel of rows (a decoding step's products),
    // B's whole panels are read in place if its rows are contiguous:
    // packing them cost twice the product. Only a last, partial panel is
    // packed (a read in place would pass the end of B's last row).
    const bool b_in_place = m < G::mr && b.col_stride == 1;
    const std::int64_t widest = std::min(block_columns, last_col - first_col);
    const bool a_reused = !rows_in_place && (widest + G::nr - 1) / G::nr > in_place_a_panels &&
                          widest < last_col - first_col &&
                          panels * G::mr * std::min(k, k_block) * static_cast<std::int64_t>(sizeof(T)) <= reused_a_bytes;
    for (std::int64_t pc = 0; pc < k; pc += k_block) {
      const std::int64_t kc = std::min(k_block, k - pc);
      if (a_reused) packed_pass_a.resize(static_cast<std::size_t>(panels * G::mr * kc));
      for (std::int64_t jc = first_col; jc < last_col; jc += block_columns) {
        std::int64_t nc = std::min(block_columns, last_col - jc);
        std::int64_t panels_b = (nc + G::nr - 1) / G::nr;
        const bool a_in_place = !a_reused && (panels_b <= in_place_a_panels || rows_in_place);
        const std::int64_t whole_panels_b = nc / G::nr;
        const std::int64_t first_packed = b_in_place ? whole_panels_b : 0;
        packed_b.resize(static_cast<std::size_t>(panels_b * G::nr * kc));
        T* pb = packed_b.data();
        // Packed on the calling thread where A has less than a panel of
        // rows: the row blocks below run there anyway, and handing half the
        // packing to another thread cost more than the product.
        parallel_for(panels_b - first_packed, m < G::mr ? panels_b : 4, [&](std::int64_t first, std::int64_t last) {
          for (std::int64_t p = first_packed + first; p < first_packed + last; ++p)
            pack_panel_for<G, G::nr, false>(b, pc, jc + p * G::nr, kc, std::min(G::nr, nc - p * G::nr), sum_block,
                                            pb + p * kc * G::nr);
        });
        parallel_for(row_blocks, 1, [&](std::int64_t first, std::int64_t last) {
          auto& packed_a = packing_buffer<T>(1);
          for (std::int64_t block = first; block < last; ++block) {
            std::int64_t ic = block_start(block), mc = block_start(block + 1) - ic;
            std::int64_t panels_a = (mc + G::mr - 1) / G::mr;
            auto tile = [&](std::int64_t ip, std::int64_t jp, const auto& panel) {
              const std::int64_t rows = std::min(G::mr, mc - ip * G::mr);
              T* const at = c + (ic + ip * G::mr) * ldc + jc + jp * G::nr;
              const std::int64_t cols = std::min(G::nr, nc - jp * G::nr);
              const packed_b_panel<T, G::nr> packed{pb + jp * kc * G::nr};
              // A panel read in place is always whole, and B then packed.
              if constexpr (std::is_same_v<std::decay_t<decltype(panel)>, a_panel<T>>) {
                micro_kernel<G, G::mr>(kc, sum_block, panel, packed, at, ldc, rows, cols, pc == 0);
              } else {
                auto with_b = [&](const auto& b_of_tile) {
                  if (rows <= 2)
                    micro_kernel<G, 2>(kc, sum_block, panel, b_of_tile, at, ldc, rows, cols, pc == 0);
                  else
                    micro_kernel<G, G::mr>(kc, sum_block, panel, b_of_tile, at, ldc, rows, cols, pc == 0);
                };
                if (jp < first_packed)
                  with_b(b_panel<T>{&b(pc, jc + jp * G::nr), b.row_stride});
                else
                  with_b(packed);
              }
            };
            if (a_in_place) {
              // The last, partial panel is packed (its missing rows read as
              // zeros).
              for (std::int64_t ip = 0; ip < panels_a; ++ip) {
                std::int64_t rows = std::min(G::mr, mc - ip * G::mr);
                if (rows == G::mr) {
                  a_panel<T> panel{&a(ic + ip * G::mr, pc), a.row_stride, a.col_stride};
                  for (std::int64_t jp = 0; jp < panels_b; ++jp) tile(ip, jp, panel);
                } else {
                  packed_a.resize(static_cast<std::size_t>(G::mr * kc));
                  pack_panel_for<G, G::mr, true>(a, ic + ip * G::mr, pc, kc, rows, sum_block, packed_a.data());
                  for (std::int64_t jp = 0; jp < panels_b; ++jp) tile(ip, jp, packed_a_panel<T, G::mr>{packed_a.data()});
                }
              }
            } else {
              // Row blocks start on whole panels, so the block's panels sit
              // at ic / G::mr in the pass's packed A.
              T* pa = nullptr;
              if (a_reused) {
                pa = packed_pass_a.data() + ic / G::mr * G::mr * kc;
              } else {
                packed_a.resize(static_cast<std::size_t>(panels_a * G::mr * kc));
                pa = packed_a.data();
              }
              if (!a_reused || jc == first_col)
                for (std::int64_t p = 0; p < panels_a; ++p)
                  pack_panel_for<G, G::mr, true>(a, ic + p * G::mr, pc, kc, std::min(G::mr, mc - p * G::mr),
                                                 sum_block, pa + p * kc * G::mr);
              for (std::int64_t jp = 0; jp < panels_b; ++jp)
                for (std::int64_t ip = 0; ip < panels_a; ++ip) tile(ip, jp, packed_a_panel<T, G::mr>{pa + ip * kc * G::mr});
            }
            if (pc + kc == k) epilogue(gemm_block{ic, mc, jc, nc});
          }
        });
      }
    }
  };
  // A product of few rows (an MLP's batch of 128: 22 panels), or whose A is
  // no larger than B (m <= n), splits its columns among the threads
  // instead: each packs only its own panels of B and all of A, and no
  // thread waits for another between packing and summing. Two threads ran
  // 128x256x256 at 0.85-0.90 of OpenBLAS with rows split; on a Xeon, 1024^3
  // ran 5% (AVX-512) and 9% (AVX2) faster with columns split, 2048^3 7% and
  // 10%, but 1024x4096x256 (A four times B) 7% and 2% slower: where A is
  // larger, its packing on every thread costs more than B's sharing.
  // Each element is summed as with one thread.
  const std::int64_t panels_n = (n + G::nr - 1) / G::nr;
  if (threads > 1 && (m <= 2 * G::mc * threads || m <= n) && panels_n >= 2 * threads) {
    parallel_for(threads, 1, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t t = first; t < last; ++t)
        columns(t * panels_n / threads * G::nr, std::min(n, (t + 1) * panels_n / threads * G::nr));
    });
  } else {
    columns(0, n);
  }
}

// C (m x n, row stride ldc) = A (m x k) * B (k x n) for float and double.
template <class T, class Epilogue = no_epilogue>
void gemm_packed(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<T> a, strided_matrix<T> b, T* c,
                 std::int64_t ldc, const Epilogue& epilogue = {}) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    epilogue(gemm_block{0, m, 0, n});
    return;
  }
  const epilogue_ref finish{&epilogue, [](const void* e, const gemm_block& block) {
                              (*static_cast<const Epilogue*>(e))(block);
                            }};
#if TANDEM_NARROW_GEMM
  if constexpr (std::is_same_v<T, float>) {
    if (narrow_gemm_pays(n, k)) {
      gemm_narrow(m, n, k, a, b, c, ldc, finish);
      return;
    }
  }
#endif
  if (n <= gemm_shape<T, 1>::nr)
    gemm_blocks<gemm_shape<T, 1>>(m, n, k, a, b, c, ldc, finish);
  else
    gemm_blocks<gemm_shape<T>>(m, n, k, a, b, c, ldc, finish);
}
#endif

// The plain loop, for integer types and targets without SIMD.
template <class T, class Epilogue = no_epilogue>
void gemm_reference(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<T> a, strided_matrix<T> b, T* c,
                    std::int64_t ldc, const Epilogue& epilogue = {}) {
  parallel_for(m, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n * k, 1)),
               [&](std::int64_t first, std::int64_t last) {
                 for (std::int64_t i = first; i < last; ++i) {
                   T* ci = c + i * ldc;
                   std::fill(ci, ci + n, T(0));
                   for (std::int64_t kk = 0; kk < k; ++kk) {
                     T aik = a(i, kk);
                     for (std::int64_t j = 0; j < n; ++j) ci[j] += aik * b(kk, j);
                   }
                 }
                 if (n > 0) epilogue(gemm_block{first, last - first, 0, n});
               });
}

// This translation unit's own product.
template <class T, class Epilogue = no_epilogue>
void native_gemm(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<T> a, strided_matrix<T> b, T* c,
                 std::int64_t ldc, const Epilogue& epilogue = {}) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_floating_point_v<T> && simd::supported<T>) {
    gemm_packed(m, n, k, a, b, c, ldc, epilogue);
    return;
  }
#endif
  gemm_reference(m, n, k, a, b, c, ldc, epilogue);
}

// The product with its epilogue given as two plain pointers, types every
// build shares: what a build's dispatch slot holds. (Without an epilogue, the
// epilogue is no_epilogue's; the blocked product calls it through a pointer
// either way.)
template <class T>
void native_gemm_then(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<T> a, strided_matrix<T> b, T* c,
                      std::int64_t ldc, const void* epilogue, void (*call)(const void*, const gemm_block&)) {
  native_gemm(m, n, k, a, b, c, ldc, epilogue_ref{epilogue, call});
}

}  // inline namespace TANDEM_KERNEL_ISA

// The product chosen at run time among tandem::compiled's builds for several
// instruction sets (kernels/cpu/dispatch.hpp); null until a choice is made.
// A static graph's epilogue is the graph's own code: the build calls it back.
template <class T>
using gemm_function = void (*)(std::int64_t, std::int64_t, std::int64_t, strided_matrix<T>, strided_matrix<T>, T*,
                               std::int64_t, const void*, void (*)(const void*, const gemm_block&));
template <class T>
inline constinit std::atomic<gemm_function<T>> dispatched_gemm{nullptr};

inline namespace TANDEM_KERNEL_ISA {

template <class T, class Epilogue = no_epilogue>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, strided_matrix<T> a, strided_matrix<T> b, T* c,
          std::int64_t ldc, const Epilogue& epilogue = {}) {
#if !TANDEM_HEADER_ONLY
  if (const gemm_function<T> chosen = dispatched_gemm<T>.load(std::memory_order_relaxed)) {
    chosen(m, n, k, a, b, c, ldc, &epilogue,
           [](const void* e, const gemm_block& block) { (*static_cast<const Epilogue*>(e))(block); });
    return;
  }
#endif
  native_gemm(m, n, k, a, b, c, ldc, epilogue);
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
