#pragma once
// Fused attention for the CPU, in the tiled form of FlashAttention: per head,
// blocks of queries meet blocks of keys, the softmax runs online (a running
// maximum and sum per query row), and the T x T matrix of scores never
// exists; a head's working set is a few blocks of 64 rows. The forward keeps
// each row's log-sum-exp; the backward recomputes each block's
// probabilities from it and sums dQ, dK and dV block by block.
//
// Every product is written as one shape, `out[o][:len] (+)= sum_k c[o][k] *
// rows[k][:len]` (combine_rows), over operands packed with their rows padded
// to whole SIMD batches: a tile of several output rows, up to four batches
// wide, stays in registers, each batch of `rows` loaded once per tile, and
// no loop needs a tail. q, k, v, the output and the gradients are read and
// written in place through per-head row offsets (attention_rows), so heads
// split from [B, T, H, D] by a transpose cost no copy.
//
// Masks: a key is seen by a query when it lies inside the keys, is not in
// the causal future (key j <= query i + tk - tq: the last query sees every
// key, as a query appended to a cache of keys should), the boolean mask (if
// any) is true there, and dropout (if any) keeps it. A query that sees no
// key has no distribution: its output row is NaN and its gradients are 0.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tandem/detail/math.hpp"
#include "tandem/kernels/attention_dropout.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

// Where an operand's rows lie: row i of head n starts at data + head[n] +
// i * row, its elements one apart. Heads split from a [B, T, H, D] tensor by
// a transpose, and heads broadcast from fewer (shared keys and values), are
// read in place so.
struct attention_rows {
  const std::int64_t* head;
  std::int64_t row;
  std::int64_t at(std::int64_t n, std::int64_t i) const { return head[n] + i * row; }
};

// One attention problem: N heads of q [tq, d], k [tk, d], v [tk, dv]. The
// mask, if any, is read at mask + mask_head[n] + i * mask_row + j *
// mask_column.
template <class T>
struct attention_problem {
  std::int64_t heads, tq, tk, d, dv;
  const T *q, *k, *v;
  attention_rows q_rows, k_rows, v_rows;
  T scale;
  bool causal;
  const bool* mask = nullptr;
  const std::int64_t* mask_head = nullptr;
  std::int64_t mask_row = 0, mask_column = 0;
  double dropout = 0;
  std::uint64_t seed = 0;

  // Keys at or past this one are in query i's future.
  std::int64_t key_end(std::int64_t i) const { return causal ? std::min(tk, i + 1 + tk - tq) : tk; }
  std::uint64_t drop_threshold() const { return attention_drop_threshold(dropout); }
};

inline namespace TANDEM_KERNEL_ISA {

template <class T>
constexpr std::int64_t attention_width() {
  return static_cast<std::int64_t>(simd::width<T>);
}
// Keys per block: four batches, the accumulators of a row of scores.
template <class T>
constexpr std::int64_t attention_key_block() {
  return 4 * attention_width<T>();
}
inline constexpr std::int64_t attention_query_block = 64;

inline std::int64_t padded_to(std::int64_t n, std::int64_t w) { return (n + w - 1) / w * w; }

// The tile of `combine_rows`: Outputs rows of out, Batches SIMD batches
// wide, in registers across the whole sum, so that each batch of `rows`
// loaded serves Outputs multiply-adds (one output row at a time was bound
// by its loads, and a row of one or two batches by the latency of a chain
// of dependent multiply-adds).
template <class T, std::int64_t Outputs, std::int64_t Batches>
TANDEM_ALWAYS_INLINE void combine_tile(T* out, std::int64_t out_stride, const T* c, std::int64_t c_row,
                                       std::int64_t c_step, const T* rows, std::int64_t row_stride, std::int64_t count,
                                       bool accumulate) {
  using batch = simd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  batch sums[Outputs][Batches];
  TANDEM_UNROLL_ALL
  for (std::int64_t o = 0; o < Outputs; ++o)
    TANDEM_UNROLL_ALL
    for (std::int64_t b = 0; b < Batches; ++b)
      sums[o][b] = accumulate ? simd::load(out + o * out_stride + b * w) : batch(T(0));
  for (std::int64_t k = 0; k < count; ++k) {
    batch x[Batches];
    TANDEM_UNROLL_ALL
    for (std::int64_t b = 0; b < Batches; ++b) x[b] = simd::load(rows + k * row_stride + b * w);
    TANDEM_UNROLL_ALL
    for (std::int64_t o = 0; o < Outputs; ++o) {
      const batch factor(c[o * c_row + k * c_step]);
      TANDEM_UNROLL_ALL
      for (std::int64_t b = 0; b < Batches; ++b) sums[o][b] = xsimd::fma(factor, x[b], sums[o][b]);
    }
  }
  TANDEM_UNROLL_ALL
  for (std::int64_t o = 0; o < Outputs; ++o)
    TANDEM_UNROLL_ALL
    for (std::int64_t b = 0; b < Batches; ++b) simd::store(out + o * out_stride + b * w, sums[o][b]);
}

// Output rows [0, outputs) from `first`, Batches wide at column `at`, in
// tiles of as many rows as the registers hold beside the loaded batches
// (16 accumulators with AVX-512's 32 registers, 8 with AVX2's 16).
template <class T, std::int64_t Batches>
TANDEM_ALWAYS_INLINE void combine_columns(T* out, std::int64_t out_stride, std::int64_t outputs, const T* c,
                                          std::int64_t c_row, std::int64_t c_step, const T* rows,
                                          std::int64_t row_stride, std::int64_t count, bool accumulate) {
  constexpr std::int64_t registers = sizeof(simd::batch<T>) >= 64 ? 16 : 8;
  constexpr std::int64_t tile = std::max<std::int64_t>(1, std::min<std::int64_t>(8, registers / Batches));
  std::int64_t o = 0;
  for (; o + tile <= outputs; o += tile)
    combine_tile<T, tile, Batches>(out + o * out_stride, out_stride, c + o * c_row, c_row, c_step, rows, row_stride,
                                   count, accumulate);
  for (; o < outputs; ++o)
    combine_tile<T, 1, Batches>(out + o * out_stride, out_stride, c + o * c_row, c_row, c_step, rows, row_stride,
                                count, accumulate);
}

// For each output row o < outputs: out[o][:len] = (accumulate ? out[o] : 0)
// + sum over k < count of c[o * c_row + k * c_step] * rows[k * row_stride + :len];
// len a multiple of the SIMD width. A small matrix product, C = A B with A
// the coefficients, read along either axis (c_row 1 reads A's transpose, so
// no block is transposed): attention's blocks are at most 64 by 64 by the
// head's width, so a tile of output rows shares each load of `rows` instead
// of packing for gemm.hpp.
template <class T>
void combine_rows(T* out, std::int64_t out_stride, std::int64_t outputs, std::int64_t len, const T* c,
                  std::int64_t c_row, std::int64_t c_step, const T* rows, std::int64_t row_stride, std::int64_t count,
                  bool accumulate) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    constexpr std::int64_t w = static_cast<std::int64_t>(simd::width<T>);
    std::int64_t at = 0;
    for (; at + 4 * w <= len; at += 4 * w)
      combine_columns<T, 4>(out + at, out_stride, outputs, c, c_row, c_step, rows + at, row_stride, count,
                                accumulate);
    switch ((len - at) / w) {
      case 3: combine_columns<T, 3>(out + at, out_stride, outputs, c, c_row, c_step, rows + at, row_stride, count,
                                accumulate); break;
      case 2: combine_columns<T, 2>(out + at, out_stride, outputs, c, c_row, c_step, rows + at, row_stride, count,
                                accumulate); break;
      case 1: combine_columns<T, 1>(out + at, out_stride, outputs, c, c_row, c_step, rows + at, row_stride, count,
                                accumulate); break;
      default: break;
    }
    return;
  }
#endif
  for (std::int64_t o = 0; o < outputs; ++o)
    for (std::int64_t at = 0; at < len; ++at) {
      T a = accumulate ? out[o * out_stride + at] : T(0);
      for (std::int64_t k = 0; k < count; ++k) a += c[o * c_row + k * c_step] * rows[k * row_stride + at];
      out[o * out_stride + at] = a;
    }
}

// x[c] = exp(x[c] - shift) over a block of scores, `sum` += their sum.
template <class T>
TANDEM_ALWAYS_INLINE void exponentiate(T* x, std::int64_t len, T shift, T& sum) {
  std::int64_t c = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    using batch = simd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    batch acc(T(0)), by(shift);
    for (; c + w <= len; c += w) {
      batch e = math::exp(simd::load(x + c) - by);
      simd::store(x + c, e);
      acc += e;
    }
    sum += simd::reduce_add(acc);
  }
#endif
  for (; c < len; ++c) {
    x[c] = std::exp(x[c] - shift);
    sum += x[c];
  }
}

// Scratch of one thread for one head's blocks (each written before it is read).
template <class T>
struct attention_scratch {
  simd::scratch<T> key_t, key_rows, value_t, value_rows, scores, probabilities, query_rows, grad_rows;
};

// The end of the keys that a query in rows [i0, i1) of head n sees among
// the first `keys`: past the last key its mask shows any of them (a
// decoding step's mask hides the cache past its position).
template <class T>
std::int64_t visible_key_end(const attention_problem<T>& p, std::int64_t n, std::int64_t i0, std::int64_t i1,
                             std::int64_t keys) {
  if (!p.mask) return keys;
  for (; keys > 0; --keys)
    for (std::int64_t i = i0; i < i1; ++i)
      if (p.mask[p.mask_head[n] + i * p.mask_row + (keys - 1) * p.mask_column]) return keys;
  return 0;
}

// The blocks of a head that one block of queries [i0, i1) and keys [j0, j1)
// form: the scaled scores (key_t holds the keys times the scale), with
// every key a query does not see at -inf. Returns whether any pair is
// visible.
template <class T>
bool attention_scores(const attention_problem<T>& p, std::int64_t n, std::int64_t i0, std::int64_t i1,
                      std::int64_t j0, std::int64_t j1, const T* key_t, T* scores) {
  constexpr std::int64_t bk = attention_key_block<T>();
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  combine_rows(scores, bk, i1 - i0, bk, p.q + p.q_rows.at(n, i0), p.q_rows.row, 1, key_t, bk, p.d, false);
  const bool ragged = j1 - j0 < bk, future = p.causal && j1 > p.key_end(i0);
  if (!ragged && !future && !p.mask) return true;
  bool any = false;
  for (std::int64_t r = 0; r < i1 - i0; ++r) {
    T* s = scores + r * bk;
    const std::int64_t seen = std::clamp<std::int64_t>(std::min(j1, p.key_end(i0 + r)) - j0, 0, bk);
    std::fill(s + seen, s + bk, minus_inf);
    if (p.mask) {
      const bool* m = p.mask + p.mask_head[n] + (i0 + r) * p.mask_row + j0 * p.mask_column;
      for (std::int64_t c = 0; c < seen; ++c)
        if (!m[c * p.mask_column]) s[c] = minus_inf;
    }
    for (std::int64_t c = 0; c < seen && !any; ++c) any = s[c] != minus_inf;
  }
  return any;
}

// The largest of a block's scores and `from`.
template <class T>
TANDEM_ALWAYS_INLINE T block_max(const T* x, T from) {
  constexpr std::int64_t bk = attention_key_block<T>();
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    using batch = simd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    batch peak(from);
    for (std::int64_t c = 0; c < bk; c += w) peak = xsimd::max(peak, simd::load(x + c));
    alignas(sizeof(batch)) T lanes[w];
    peak.store_aligned(lanes);
    return *std::max_element(lanes, lanes + w);
  }
#endif
  for (std::int64_t c = 0; c < bk; ++c) from = std::max(from, x[c]);
  return from;
}

// Dropout applied to a block of probabilities: kept ones scaled by 1 / (1 - p).
template <class T>
void attention_drop(const attention_problem<T>& p, std::int64_t n, std::int64_t i0, std::int64_t rows,
                    std::int64_t j0, T* probabilities) {
  constexpr std::int64_t bk = attention_key_block<T>();
  const std::uint64_t threshold = p.drop_threshold();
  const T keep_scale = T(1 / (1 - p.dropout));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < bk; ++c) {
      T& x = probabilities[r * bk + c];
      x = attention_keeps(p.seed, n, i0 + r, j0 + c, threshold) ? x * keep_scale : T(0);
    }
}

// A block's row of score gradients from the probabilities' gradients dp
// (in place): dS = P (dP - delta) scale.
template <class T>
TANDEM_ALWAYS_INLINE void softmax_gradient_row(T* dp, const T* probability, T delta, T scale) {
  constexpr std::int64_t bk = attention_key_block<T>();
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    using batch = simd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    const batch shift(delta), by(scale);
    for (std::int64_t c = 0; c < bk; c += w)
      simd::store(dp + c, simd::load(probability + c) * (simd::load(dp + c) - shift) * by);
    return;
  }
#endif
  for (std::int64_t c = 0; c < bk; ++c) dp[c] = probability[c] * (dp[c] - delta) * scale;
}

// Packs rows [j0, j1) of a head's keys or values (row j at x + j * stride):
// transposed [width][bk] and times `factor` (for scores), and as rows
// padded to `padded` (for dQ), zeros past j1.
template <class T>
void pack_block(const T* x, std::int64_t stride, std::int64_t width, std::int64_t j0, std::int64_t j1, T* transposed,
                T factor, T* rows, std::int64_t padded) {
  constexpr std::int64_t bk = attention_key_block<T>();
  const std::int64_t keys = j1 - j0;
  if (transposed) {
    for (std::int64_t c = 0; c < keys; ++c) {
      const T* from = x + (j0 + c) * stride;
      for (std::int64_t e = 0; e < width; ++e) transposed[e * bk + c] = from[e] * factor;
    }
    if (keys < bk)
      for (std::int64_t e = 0; e < width; ++e) std::fill(transposed + e * bk + keys, transposed + (e + 1) * bk, T(0));
  }
  if (rows) {
    for (std::int64_t c = 0; c < keys; ++c) {
      std::copy_n(x + (j0 + c) * stride, width, rows + c * padded);
      std::fill(rows + c * padded + width, rows + (c + 1) * padded, T(0));
    }
    std::fill(rows + keys * padded, rows + bk * padded, T(0));
  }
}

// Forward: out (rows laid out as `out_rows`) and each query row's
// log-sum-exp [N, tq] (+inf for a row that sees no key).
template <class T>
void attention_forward(const attention_problem<T>& p, T* out, const attention_rows& out_rows, T* logsumexp) {
  constexpr std::int64_t bk = attention_key_block<T>(), bq = attention_query_block, w = attention_width<T>();
  constexpr T inf = std::numeric_limits<T>::infinity();
  const std::int64_t dvp = padded_to(p.dv, w), query_blocks = (p.tq + bq - 1) / bq;
  const std::int64_t tasks = p.heads * query_blocks;
  // A task's work: its query rows (one when decoding) against the keys.
  const std::int64_t work = std::max<std::int64_t>(1, std::min(bq, p.tq) * p.tk * (p.d + p.dv));
  parallel_for(tasks, std::max<std::int64_t>(1, (1 << 17) / work), [&](std::int64_t first, std::int64_t last) {
    attention_scratch<T> s;
    s.key_t.resize(p.d * bk);
    if (p.dv != dvp) s.value_rows.resize(bk * dvp);
    s.scores.resize(bq * bk);
    s.grad_rows.resize(bq * dvp);
    T maximum[bq], total[bq];
    for (std::int64_t task = first; task < last; ++task) {
      const std::int64_t n = task / query_blocks, i0 = task % query_blocks * bq, i1 = std::min(p.tq, i0 + bq);
      const std::int64_t rows = i1 - i0;
      std::fill(maximum, maximum + rows, -inf);
      std::fill(total, total + rows, T(0));
      T* acc = s.grad_rows.data();
      std::fill(acc, acc + rows * dvp, T(0));
      const std::int64_t keys = visible_key_end(p, n, i0, i1, p.key_end(i1 - 1));
      for (std::int64_t j0 = 0; j0 < keys; j0 += bk) {
        const std::int64_t j1 = std::min(keys, j0 + bk);
        pack_block(p.k + p.k_rows.at(n, 0), p.k_rows.row, p.d, j0, j1, s.key_t.data(), p.scale, static_cast<T*>(nullptr), 0);
        // Rows of whole batches are read in place.
        const T* values = p.v + p.v_rows.at(n, j0);
        std::int64_t value_stride = p.v_rows.row;
        if (p.dv != dvp) {
          pack_block(p.v + p.v_rows.at(n, 0), p.v_rows.row, p.dv, j0, j1, static_cast<T*>(nullptr), T(1),
                     s.value_rows.data(), dvp);
          values = s.value_rows.data();
          value_stride = dvp;
        }
        if (!attention_scores(p, n, i0, i1, j0, j1, s.key_t.data(), s.scores.data())) continue;
        for (std::int64_t r = 0; r < rows; ++r) {
          T* sc = s.scores.data() + r * bk;
          const T peak = block_max(sc, maximum[r]);
          if (peak == -inf) {
            // Nothing seen yet: the block adds nothing to the row.
            std::fill(sc, sc + bk, T(0));
            continue;
          }
          const T rescale = std::exp(maximum[r] - peak);
          T sum = 0;
          exponentiate(sc, bk, peak, sum);
          total[r] = total[r] * rescale + sum;
          maximum[r] = peak;
          T* a = acc + r * dvp;
          if (rescale != T(1))
            for (std::int64_t e = 0; e < dvp; ++e) a[e] *= rescale;
        }
        if (p.dropout > 0) attention_drop(p, n, i0, rows, j0, s.scores.data());
        combine_rows(acc, dvp, rows, dvp, s.scores.data(), bk, 1, values, value_stride, j1 - j0, true);
      }
      for (std::int64_t r = 0; r < rows; ++r) {
        T* o = out + out_rows.at(n, i0 + r);
        const bool seen = total[r] > 0;
        const T inverse = seen ? T(1) / total[r] : std::numeric_limits<T>::quiet_NaN();
        for (std::int64_t e = 0; e < p.dv; ++e) o[e] = acc[r * dvp + e] * inverse;
        logsumexp[n * p.tq + i0 + r] = seen ? maximum[r] + std::log(total[r]) : inf;
      }
    }
  });
}

// Where the backward reads the output and its gradient and writes dq, dk
// and dv (one head's rows each; dk and dv have a row per head and key, so
// heads that share keys get a gradient each, summed by the caller).
template <class T>
struct attention_gradients {
  const T* g;
  attention_rows g_rows;
  const T* out;
  attention_rows out_rows;
  T *dq, *dk, *dv;
  attention_rows dq_rows, dk_rows, dv_rows;
};

// Backward: dq, dk, dv from the output's gradient, the output and the
// forward's log-sum-exp.
template <class T>
void attention_backward(const attention_problem<T>& p, const attention_gradients<T>& a, const T* logsumexp) {
  constexpr std::int64_t bk = attention_key_block<T>(), bq = attention_query_block, w = attention_width<T>();
  const std::int64_t dp = padded_to(p.d, w), dvp = padded_to(p.dv, w);
  const std::int64_t work = std::max<std::int64_t>(1, p.tq * p.tk * (p.d + p.dv));
  parallel_for(p.heads, std::max<std::int64_t>(1, (1 << 17) / work), [&](std::int64_t first, std::int64_t last) {
    attention_scratch<T> s;
    s.key_t.resize(p.d * bk);
    s.key_rows.resize(bk * dp);
    s.value_t.resize(p.dv * bk);
    s.scores.resize(bq * bk);
    s.probabilities.resize(bq * bk);
    // The head's queries and output gradients as rows padded to whole
    // batches, packed once for all its key blocks.
    s.query_rows.resize(p.tq * dp);
    s.grad_rows.resize(p.tq * dvp);
    simd::buffer<T> dq_rows(p.tq * dp), dk_rows(bk * dp), dv_rows(bk * dvp), delta(p.tq);
    for (std::int64_t n = first; n < last; ++n) {
      const T* lse = logsumexp + n * p.tq;
      for (std::int64_t i = 0; i < p.tq; ++i) {
        const T* gi = a.g + a.g_rows.at(n, i);
        const T* oi = a.out + a.out_rows.at(n, i);
        T d = 0;
        if (lse[i] != std::numeric_limits<T>::infinity())
          for (std::int64_t e = 0; e < p.dv; ++e) d += gi[e] * oi[e];
        delta[i] = d;
        std::copy_n(gi, p.dv, s.grad_rows.data() + i * dvp);
        std::fill(s.grad_rows.data() + i * dvp + p.dv, s.grad_rows.data() + (i + 1) * dvp, T(0));
        std::copy_n(p.q + p.q_rows.at(n, i), p.d, s.query_rows.data() + i * dp);
        std::fill(s.query_rows.data() + i * dp + p.d, s.query_rows.data() + (i + 1) * dp, T(0));
      }
      std::fill(dq_rows.begin(), dq_rows.end(), T(0));
      for (std::int64_t j0 = 0; j0 < p.tk; j0 += bk) {
        const std::int64_t j1 = std::min(p.tk, j0 + bk), keys = j1 - j0;
        pack_block(p.k + p.k_rows.at(n, 0), p.k_rows.row, p.d, j0, j1, s.key_t.data(), p.scale, s.key_rows.data(), dp);
        pack_block(p.v + p.v_rows.at(n, 0), p.v_rows.row, p.dv, j0, j1, s.value_t.data(), T(1), static_cast<T*>(nullptr), 0);
        std::fill(dk_rows.begin(), dk_rows.end(), T(0));
        std::fill(dv_rows.begin(), dv_rows.end(), T(0));
        // The first query that sees key j0 under the causal mask.
        const std::int64_t first_query = p.causal ? std::max<std::int64_t>(0, j0 - (p.tk - p.tq)) : 0;
        for (std::int64_t i0 = first_query / bq * bq; i0 < p.tq; i0 += bq) {
          const std::int64_t i1 = std::min(p.tq, i0 + bq), rows = i1 - i0;
          if (!attention_scores(p, n, i0, i1, j0, j1, s.key_t.data(), s.scores.data())) continue;
          T* prob = s.probabilities.data();
          for (std::int64_t r = 0; r < rows; ++r) {
            T ignored = 0;
            std::copy_n(s.scores.data() + r * bk, bk, prob + r * bk);
            exponentiate(prob + r * bk, bk, lse[i0 + r], ignored);
          }
          // The dropped probabilities (what the forward multiplied V by):
          // dV[c] += sum_r kept[r][c] g[r].
          std::copy_n(prob, rows * bk, s.scores.data());
          if (p.dropout > 0) attention_drop(p, n, i0, rows, j0, s.scores.data());
          const T* grows = s.grad_rows.data() + i0 * dvp;
          const T* qrows = s.query_rows.data() + i0 * dp;
          combine_rows(dv_rows.data(), dvp, keys, dvp, s.scores.data(), 1, bk, grows, dvp, rows, true);
          // dP = g V^T (through the dropout), then dS = P (dP - delta) scale.
          T* ds = s.scores.data();
          combine_rows(ds, bk, rows, bk, grows, dvp, 1, s.value_t.data(), bk, p.dv, false);
          if (p.dropout > 0) attention_drop(p, n, i0, rows, j0, ds);
          for (std::int64_t r = 0; r < rows; ++r) softmax_gradient_row(ds + r * bk, prob + r * bk, delta[i0 + r], p.scale);
          combine_rows(dq_rows.data() + i0 * dp, dp, rows, dp, ds, bk, 1, s.key_rows.data(), dp, keys, true);
          combine_rows(dk_rows.data(), dp, keys, dp, ds, 1, bk, qrows, dp, rows, true);
        }
        for (std::int64_t c = 0; c < keys; ++c) {
          std::copy_n(dk_rows.data() + c * dp, p.d, a.dk + a.dk_rows.at(n, j0 + c));
          std::copy_n(dv_rows.data() + c * dvp, p.dv, a.dv + a.dv_rows.at(n, j0 + c));
        }
      }
      for (std::int64_t i = 0; i < p.tq; ++i) std::copy_n(dq_rows.data() + i * dp, p.d, a.dq + a.dq_rows.at(n, i));
    }
  });
}

}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
