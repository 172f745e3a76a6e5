#pragma once
// Fused attention for the CPU, in the tiled form of FlashAttention: per head,
// blocks of queries meet blocks of keys, the softmax runs online (a running
// maximum and sum per query row), and the T x T matrix of scores never
// exists; a head's working set is a few blocks of 64 rows. The forward keeps
// each row's log-sum-exp; the backward recomputes each block's
// probabilities from it and sums dQ, dK and dV block by block.
//
// Every product is written as one shape, `out[:len] (+)= sum_k c[k] *
// rows[k][:len]`, over operands packed with their rows padded to whole SIMD
// batches, so that the inner loop keeps up to four batches of `out` in
// registers and never needs a tail.
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
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

// Dropout's draw for query i and key j of head n: a counter-based hash, so
// that the backward (and any thread) draws the same keep/drop as the forward
// without storing a mask.
inline bool attention_keeps(std::uint64_t seed, std::int64_t n, std::int64_t i, std::int64_t j,
                            std::uint64_t threshold) {
  std::uint64_t z = seed ^ (static_cast<std::uint64_t>(n) * 0x9E3779B97F4A7C15ull) ^
                    (static_cast<std::uint64_t>(i) * 0xC2B2AE3D27D4EB4Full) ^
                    (static_cast<std::uint64_t>(j) * 0x165667B19E3779F9ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z >= threshold;
}

// One attention problem: N heads of contiguous q [tq, d], k [tk, d],
// v [tk, dv] (head n at n * rows * width). The mask, if any, is read at
// mask + mask_head[n] + i * mask_row + j.
template <class T>
struct attention_problem {
  std::int64_t heads, tq, tk, d, dv;
  const T *q, *k, *v;
  T scale;
  bool causal;
  const bool* mask = nullptr;
  const std::int64_t* mask_head = nullptr;
  std::int64_t mask_row = 0, mask_column = 0;
  double dropout = 0;
  std::uint64_t seed = 0;

  // Keys at or past this one are in query i's future.
  std::int64_t key_end(std::int64_t i) const { return causal ? std::min(tk, i + 1 + tk - tq) : tk; }
  std::uint64_t drop_threshold() const {
    return static_cast<std::uint64_t>(dropout * 18446744073709551616.0);
  }
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

// out[:len] = (accumulate ? out : 0) + sum over k < count of c[k * c_stride] * rows[k * row_stride + :len];
// len a multiple of the SIMD width.
template <class T>
TANDEM_ALWAYS_INLINE void combine_rows(T* out, std::int64_t len, const T* c, std::int64_t c_stride, const T* rows,
                                       std::int64_t row_stride, std::int64_t count, bool accumulate) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    using batch = simd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    std::int64_t at = 0;
    for (; at + 4 * w <= len; at += 4 * w) {
      batch a0 = accumulate ? simd::load(out + at) : batch(T(0));
      batch a1 = accumulate ? simd::load(out + at + w) : batch(T(0));
      batch a2 = accumulate ? simd::load(out + at + 2 * w) : batch(T(0));
      batch a3 = accumulate ? simd::load(out + at + 3 * w) : batch(T(0));
      const T* r = rows + at;
      for (std::int64_t k = 0; k < count; ++k, r += row_stride) {
        const batch s(c[k * c_stride]);
        a0 = xsimd::fma(s, simd::load(r), a0);
        a1 = xsimd::fma(s, simd::load(r + w), a1);
        a2 = xsimd::fma(s, simd::load(r + 2 * w), a2);
        a3 = xsimd::fma(s, simd::load(r + 3 * w), a3);
      }
      simd::store(out + at, a0);
      simd::store(out + at + w, a1);
      simd::store(out + at + 2 * w, a2);
      simd::store(out + at + 3 * w, a3);
    }
    for (; at < len; at += w) {
      batch a0 = accumulate ? simd::load(out + at) : batch(T(0));
      const T* r = rows + at;
      for (std::int64_t k = 0; k < count; ++k, r += row_stride) a0 = xsimd::fma(batch(c[k * c_stride]), simd::load(r), a0);
      simd::store(out + at, a0);
    }
    return;
  }
#endif
  for (std::int64_t at = 0; at < len; ++at) {
    T a = accumulate ? out[at] : T(0);
    for (std::int64_t k = 0; k < count; ++k) a += c[k * c_stride] * rows[k * row_stride + at];
    out[at] = a;
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

// Scratch of one thread for one head's blocks.
template <class T>
struct attention_scratch {
  simd::buffer<T> key_t, key_rows, value_t, value_rows, scores, probabilities, transposed, query_rows, grad_rows;
};

// The blocks of a head that one block of queries [i0, i1) and keys [j0, j1)
// form: the scaled scores, with every key a query does not see at -inf.
// Returns whether any pair is visible.
template <class T>
bool attention_scores(const attention_problem<T>& p, std::int64_t n, std::int64_t i0, std::int64_t i1,
                      std::int64_t j0, std::int64_t j1, const T* key_t, T* scores) {
  constexpr std::int64_t bk = attention_key_block<T>();
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  const T* q = p.q + (n * p.tq + i0) * p.d;
  for (std::int64_t r = 0; r < i1 - i0; ++r) {
    T* s = scores + r * bk;
    combine_rows(s, bk, q + r * p.d, 1, key_t, bk, p.d, false);
    for (std::int64_t c = 0; c < bk; ++c) s[c] *= p.scale;
  }
  const bool ragged = j1 - j0 < bk, future = p.causal && j1 > p.key_end(i0);
  if (!ragged && !future && !p.mask) return true;
  bool any = false;
  for (std::int64_t r = 0; r < i1 - i0; ++r) {
    T* s = scores + r * bk;
    const std::int64_t end = std::min(j1, p.key_end(i0 + r));
    const bool* m = p.mask ? p.mask + p.mask_head[n] + (i0 + r) * p.mask_row : nullptr;
    for (std::int64_t c = 0; c < bk; ++c) {
      const std::int64_t j = j0 + c;
      if (j >= end || (m && !m[j * p.mask_column])) s[c] = minus_inf;
    }
    for (std::int64_t c = 0; c < std::min(bk, end - j0) && !any; ++c) any = s[c] != minus_inf;
  }
  return any;
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

// Packs keys [j0, j1) of head n: transposed [d][bk] (for scores), and as
// rows padded to dp (for dQ), zeros past j1.
template <class T>
void pack_block(const T* x, std::int64_t width, std::int64_t j0, std::int64_t j1, T* transposed, T* rows,
                std::int64_t padded) {
  constexpr std::int64_t bk = attention_key_block<T>();
  if (transposed) {
    std::fill(transposed, transposed + width * bk, T(0));
    for (std::int64_t c = 0; c < j1 - j0; ++c)
      for (std::int64_t e = 0; e < width; ++e) transposed[e * bk + c] = x[(j0 + c) * width + e];
  }
  if (rows) {
    std::fill(rows, rows + bk * padded, T(0));
    for (std::int64_t c = 0; c < j1 - j0; ++c) std::copy_n(x + (j0 + c) * width, width, rows + c * padded);
  }
}

// Forward: out [N, tq, dv] and each query row's log-sum-exp [N, tq]
// (+inf for a row that sees no key).
template <class T>
void attention_forward(const attention_problem<T>& p, T* out, T* logsumexp) {
  constexpr std::int64_t bk = attention_key_block<T>(), bq = attention_query_block, w = attention_width<T>();
  constexpr T inf = std::numeric_limits<T>::infinity();
  const std::int64_t dvp = padded_to(p.dv, w), query_blocks = (p.tq + bq - 1) / bq;
  const std::int64_t tasks = p.heads * query_blocks;
  const std::int64_t work = std::max<std::int64_t>(1, bq * p.tk * (p.d + p.dv));
  parallel_for(tasks, std::max<std::int64_t>(1, (1 << 17) / work), [&](std::int64_t first, std::int64_t last) {
    attention_scratch<T> s;
    s.key_t.resize(p.d * bk);
    s.value_rows.resize(bk * dvp);
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
      const std::int64_t keys = p.key_end(i1 - 1);
      for (std::int64_t j0 = 0; j0 < keys; j0 += bk) {
        const std::int64_t j1 = std::min(keys, j0 + bk);
        pack_block(p.k + n * p.tk * p.d, p.d, j0, j1, s.key_t.data(), static_cast<T*>(nullptr), 0);
        pack_block(p.v + n * p.tk * p.dv, p.dv, j0, j1, static_cast<T*>(nullptr), s.value_rows.data(), dvp);
        if (!attention_scores(p, n, i0, i1, j0, j1, s.key_t.data(), s.scores.data())) continue;
        for (std::int64_t r = 0; r < rows; ++r) {
          T* sc = s.scores.data() + r * bk;
          T peak = maximum[r];
          for (std::int64_t c = 0; c < bk; ++c) peak = std::max(peak, sc[c]);
          if (peak == -inf) continue;
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
        for (std::int64_t r = 0; r < rows; ++r)
          if (maximum[r] != -inf)
            combine_rows(acc + r * dvp, dvp, s.scores.data() + r * bk, 1, s.value_rows.data(), dvp, j1 - j0, true);
      }
      for (std::int64_t r = 0; r < rows; ++r) {
        T* o = out + (n * p.tq + i0 + r) * p.dv;
        const bool seen = total[r] > 0;
        const T inverse = seen ? T(1) / total[r] : std::numeric_limits<T>::quiet_NaN();
        for (std::int64_t e = 0; e < p.dv; ++e) o[e] = acc[r * dvp + e] * inverse;
        logsumexp[n * p.tq + i0 + r] = seen ? maximum[r] + std::log(total[r]) : inf;
      }
    }
  });
}

// Backward: dq, dk, dv (contiguous, shaped as q, k, v) from the output's
// gradient g [N, tq, dv], the output and the forward's log-sum-exp.
template <class T>
void attention_backward(const attention_problem<T>& p, const T* g, const T* out, const T* logsumexp, T* dq, T* dk,
                        T* dv) {
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
    s.transposed.resize(bk * bq);
    s.query_rows.resize(bq * dp);
    s.grad_rows.resize(bq * dvp);
    simd::buffer<T> dq_rows(p.tq * dp), dk_rows(bk * dp), dv_rows(bk * dvp), delta(p.tq);
    for (std::int64_t n = first; n < last; ++n) {
      const T* gn = g + n * p.tq * p.dv;
      const T* on = out + n * p.tq * p.dv;
      const T* lse = logsumexp + n * p.tq;
      for (std::int64_t i = 0; i < p.tq; ++i) {
        T d = 0;
        if (lse[i] != std::numeric_limits<T>::infinity())
          for (std::int64_t e = 0; e < p.dv; ++e) d += gn[i * p.dv + e] * on[i * p.dv + e];
        delta[i] = d;
      }
      std::fill(dq_rows.begin(), dq_rows.end(), T(0));
      for (std::int64_t j0 = 0; j0 < p.tk; j0 += bk) {
        const std::int64_t j1 = std::min(p.tk, j0 + bk), keys = j1 - j0;
        pack_block(p.k + n * p.tk * p.d, p.d, j0, j1, s.key_t.data(), s.key_rows.data(), dp);
        pack_block(p.v + n * p.tk * p.dv, p.dv, j0, j1, s.value_t.data(), static_cast<T*>(nullptr), 0);
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
          // The dropped probabilities (what the forward multiplied V by),
          // transposed: dV[c] += sum_r kept[r][c] g[r].
          std::copy_n(prob, rows * bk, s.scores.data());
          if (p.dropout > 0) attention_drop(p, n, i0, rows, j0, s.scores.data());
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < keys; ++c) s.transposed[c * bq + r] = s.scores[r * bk + c];
          T* grows = s.grad_rows.data();
          T* qrows = s.query_rows.data();
          for (std::int64_t r = 0; r < rows; ++r) {
            std::copy_n(gn + (i0 + r) * p.dv, p.dv, grows + r * dvp);
            std::fill(grows + r * dvp + p.dv, grows + (r + 1) * dvp, T(0));
            std::copy_n(p.q + (n * p.tq + i0 + r) * p.d, p.d, qrows + r * dp);
            std::fill(qrows + r * dp + p.d, qrows + (r + 1) * dp, T(0));
          }
          for (std::int64_t c = 0; c < keys; ++c)
            combine_rows(dv_rows.data() + c * dvp, dvp, s.transposed.data() + c * bq, 1, grows, dvp, rows, true);
          // dP = g V^T (through the dropout), then dS = P (dP - delta) scale.
          T* ds = s.scores.data();
          for (std::int64_t r = 0; r < rows; ++r)
            combine_rows(ds + r * bk, bk, gn + (i0 + r) * p.dv, 1, s.value_t.data(), bk, p.dv, false);
          if (p.dropout > 0) attention_drop(p, n, i0, rows, j0, ds);
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < bk; ++c)
              ds[r * bk + c] = prob[r * bk + c] * (ds[r * bk + c] - delta[i0 + r]) * p.scale;
          for (std::int64_t r = 0; r < rows; ++r)
            combine_rows(dq_rows.data() + (i0 + r) * dp, dp, ds + r * bk, 1, s.key_rows.data(), dp, keys, true);
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < keys; ++c) s.transposed[c * bq + r] = ds[r * bk + c];
          for (std::int64_t c = 0; c < keys; ++c)
            combine_rows(dk_rows.data() + c * dp, dp, s.transposed.data() + c * bq, 1, qrows, dp, rows, true);
        }
        for (std::int64_t c = 0; c < keys; ++c) {
          std::copy_n(dk_rows.data() + c * dp, p.d, dk + (n * p.tk + j0 + c) * p.d);
          std::copy_n(dv_rows.data() + c * dvp, p.dv, dv + (n * p.tk + j0 + c) * p.dv);
        }
      }
      for (std::int64_t i = 0; i < p.tq; ++i) std::copy_n(dq_rows.data() + i * dp, p.d, dq + (n * p.tq + i) * p.d);
    }
  });
}

}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
