#pragma once
// Fused attention on the GPU as each thread computes it, and the slots the
// host reaches it through. One thread owns a query row (the forward, and
// the backward's dQ) or a key row (the backward's dK and dV), keeps its
// row and its sums in registers, and walks the other side's rows with an
// online softmax (a running maximum and sum): no T x T matrix exists, and
// the backward recomputes each probability from the forward's log-sum-exp,
// as the CPU's kernel does (kernels/cpu/attention.hpp). Two backward
// passes, by queries then by keys, so that no two threads add into one row.
//
// Host code too (TANDEM_HOST_DEVICE, no CUDA headers): the CUDA kernels
// (kernels/cuda/attention.hpp) call these functions once per thread, and
// the tests' emulated GPU (tests/support/emulated_device.hpp) once per loop
// iteration, so every machine checks the arithmetic the GPU runs.
//
// The conventions are the CPU kernel's: key j is in query i's causal future
// when j > i + tk - tq; a boolean mask shows a key where it is true; dropout
// keeps a pair by attention_keeps and scales it by 1 / (1 - dropout); a
// query that sees no key gets a NaN row, a log-sum-exp of +inf and zero
// gradients.

#include <atomic>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tandem/core/config.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/kernels/attention_dropout.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"

namespace tandem::detail {

// An operand or a result as the kernels address it: head n's row i starts
// at data + (the sum over the batch axes of n's index along each times
// head_strides) + i * row, its elements one apart.
template <class P>
struct device_attention_rows {
  P data = nullptr;
  std::int64_t head_strides[cuda_max_axes] = {};
  std::int64_t row = 0;
};

// One problem: `heads` heads (the batch axes' product, row-major over
// `batch`) of q [tq, d], k [tk, d], v [tk, dv]. The mask, if any, is read
// at mask's row i of head n, plus j * mask_column.
template <class T>
struct device_attention {
  int batch_axes = 0;
  std::int64_t batch[cuda_max_axes] = {};
  std::int64_t heads = 0, tq = 0, tk = 0, d = 0, dv = 0;
  device_attention_rows<const T*> q, k, v;
  T scale = 1;
  bool causal = false;
  device_attention_rows<const bool*> mask;
  std::int64_t mask_column = 0;
  // 0: no dropout.
  std::uint64_t drop_threshold = 0, seed = 0;
  T keep_scale = 1;

  // An empty operand (no keys, say) has no data to offset into.
  template <class P>
  TANDEM_HOST_DEVICE P head(const device_attention_rows<P>& x, std::int64_t n) const {
    if (!x.data) return x.data;
    std::int64_t offset = 0;
    for (int a = batch_axes; a-- > 0;) {
      offset += n % batch[a] * x.head_strides[a];
      n /= batch[a];
    }
    return x.data + offset;
  }
  // Keys at or past this one are in query i's future.
  TANDEM_HOST_DEVICE std::int64_t key_end(std::int64_t i) const {
    const std::int64_t end = i + 1 + tk - tq;
    return causal && end < tk ? end : tk;
  }
  // The first query that key j is not in the future of.
  TANDEM_HOST_DEVICE std::int64_t query_begin(std::int64_t j) const {
    const std::int64_t begin = j - tk + tq;
    return causal && begin > 0 ? begin : 0;
  }
  // What dropout multiplies query i's probability of key j by.
  TANDEM_HOST_DEVICE T kept(std::int64_t n, std::int64_t i, std::int64_t j) const {
    if (drop_threshold == 0) return T(1);
    return attention_keeps(seed, n, i, j, drop_threshold) ? keep_scale : T(0);
  }
};

// What the backward reads and writes besides the problem: the output's
// gradient g and the output y (read), dq, dk, dv (written, every row), and
// `delta` [heads, tq], each query row's g . y, which the pass by queries
// writes and the pass by keys reads.
template <class T>
struct device_attention_gradients {
  device_attention_rows<const T*> g, y;
  device_attention_rows<T*> dq, dk, dv;
  T* delta = nullptr;
};

// The forward: out and each query row's log-sum-exp [heads, tq].
template <class T>
using cuda_attention_forward_kernel = void (*)(int device_index, const device_attention<T>& problem,
                                               const device_attention_rows<T*>& out, T* logsumexp);
// The backward, from the forward's log-sum-exp.
template <class T>
using cuda_attention_backward_kernel = void (*)(int device_index, const device_attention<T>& problem,
                                                const device_attention_gradients<T>& gradients, const T* logsumexp);

template <class T>
inline std::atomic<cuda_attention_forward_kernel<T>> cuda_attention_forward_slot{nullptr};
template <class T>
inline std::atomic<cuda_attention_backward_kernel<T>> cuda_attention_backward_slot{nullptr};

template <std::int64_t Width, class T>
TANDEM_HOST_DEVICE T device_attention_dot(const T* a, const T* b, std::int64_t length) {
  T sum = 0;
TANDEM_DEVICE_UNROLL
  for (std::int64_t c = 0; c < Width; ++c)
    if (c < length) sum += a[c] * b[c];
  return sum;
}

// Thread (n, i) of the forward.
template <std::int64_t Width, class T>
TANDEM_HOST_DEVICE void device_attention_forward_row(const device_attention<T>& p, std::int64_t n, std::int64_t i,
                                                     const device_attention_rows<T*>& out, T* logsumexp) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  T query[Width], acc[Width];
  const T* q = p.head(p.q, n) + i * p.q.row;
TANDEM_DEVICE_UNROLL
  for (std::int64_t c = 0; c < Width; ++c) {
    query[c] = c < p.d ? q[c] : T(0);
    acc[c] = 0;
  }
  const T* keys = p.head(p.k, n);
  const T* values = p.head(p.v, n);
  const bool* mask = p.mask.data ? p.head(p.mask, n) + i * p.mask.row : nullptr;
  T maximum = -inf, total = 0;
  const std::int64_t end = p.key_end(i);
  for (std::int64_t j = 0; j < end; ++j) {
    if (mask && !mask[j * p.mask_column]) continue;
    const T s = device_attention_dot<Width>(query, keys + j * p.k.row, p.d) * p.scale;
    if (s == -inf) continue;
    if (s > maximum) {
      const T shrink = math::exp(maximum - s);
      total *= shrink;
TANDEM_DEVICE_UNROLL
      for (std::int64_t c = 0; c < Width; ++c) acc[c] *= shrink;
      maximum = s;
    }
    const T e = math::exp(s - maximum);
    total += e;
    const T weight = e * p.kept(n, i, j);
    const T* v = values + j * p.v.row;
    if (weight != T(0)) {
TANDEM_DEVICE_UNROLL
      for (std::int64_t c = 0; c < Width; ++c)
        if (c < p.dv) acc[c] += weight * v[c];
    }
  }
  const bool seen = total > T(0);
  const T inverse = seen ? T(1) / total : std::numeric_limits<T>::quiet_NaN();
  T* o = p.head(out, n) + i * out.row;
TANDEM_DEVICE_UNROLL
  for (std::int64_t c = 0; c < Width; ++c)
    if (c < p.dv) o[c] = acc[c] * inverse;
  logsumexp[n * p.tq + i] = seen ? maximum + math::log(total) : inf;
}

// Thread (n, i) of the backward's pass by queries: dq's row i and delta.
template <std::int64_t Width, class T>
TANDEM_HOST_DEVICE void device_attention_query_gradient_row(const device_attention<T>& p,
                                                            const device_attention_gradients<T>& a, std::int64_t n,
                                                            std::int64_t i, const T* logsumexp) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  T query[Width], grad[Width], dq[Width];
  const T* q = p.head(p.q, n) + i * p.q.row;
  const T* g = p.head(a.g, n) + i * a.g.row;
  const T* y = p.head(a.y, n) + i * a.y.row;
  const T lse = logsumexp[n * p.tq + i];
  const bool seen = lse != inf;
  T delta = 0;
TANDEM_DEVICE_UNROLL
  for (std::int64_t c = 0; c < Width; ++c) {
    query[c] = c < p.d ? q[c] : T(0);
    grad[c] = c < p.dv ? g[c] : T(0);
    if (seen && c < p.dv) delta += grad[c] * y[c];
    dq[c] = 0;
  }
  const T* keys = p.head(p.k, n);
  const T* values = p.head(p.v, n);
  const bool* mask = p.mask.data ? p.head(p.mask, n) + i * p.mask.row : nullptr;
  const std::int64_t end = seen ? p.key_end(i) : 0;
  for (std::int64_t j = 0; j < end; ++j) {
    if (mask && !mask[j * p.mask_column]) continue;
    const T* k = keys + j * p.k.row;
    const T probability = math::exp(device_attention_dot<Width>(query, k, p.d) * p.scale - lse);
    const T dp = device_attention_dot<Width>(grad, values + j * p.v.row, p.dv) * p.kept(n, i, j);
    const T ds = probability * (dp - delta) * p.scale;
TANDEM_DEVICE_UNROLL
    for (std::int64_t c = 0; c < Width; ++c)
      if (c < p.d) dq[c] += ds * k[c];
  }
  T* out = p.head(a.dq, n) + i * a.dq.row;
TANDEM_DEVICE_UNROLL
  for (std::int64_t c = 0; c < Width; ++c)
    if (c < p.d) out[c] = dq[c];
  a.delta[n * p.tq + i] = delta;
}

// Thread (n, j) of the backward's pass by keys: dk's and dv's row j, after
// the pass by queries has written delta.
template <std::int64_t Width, class T>
TANDEM_HOST_DEVICE void device_attention_key_gradient_row(const device_attention<T>& p,
                                                          const device_attention_gradients<T>& a, std::int64_t n,
                                                          std::int64_t j, const T* logsumexp) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  T key[Width], value[Width], dk[Width], dv[Width];
  const T* k = p.head(p.k, n) + j * p.k.row;
  const T* v = p.head(p.v, n) + j * p.v.row;
TANDEM_DEVICE_UNROLL
  for (std::int64_t c = 0; c < Width; ++c) {
    key[c] = c < p.d ? k[c] : T(0);
    value[c] = c < p.dv ? v[c] : T(0);
    dk[c] = 0;
    dv[c] = 0;
  }
  const T* queries = p.head(p.q, n);
  const T* grads = p.head(a.g, n);
  const bool* mask = p.mask.data ? p.head(p.mask, n) + j * p.mask_column : nullptr;
  for (std::int64_t i = p.query_begin(j); i < p.tq; ++i) {
    if (mask && !mask[i * p.mask.row]) continue;
    const T lse = logsumexp[n * p.tq + i];
    if (lse == inf) continue;
    const T* q = queries + i * p.q.row;
    const T* g = grads + i * a.g.row;
    const T probability = math::exp(device_attention_dot<Width>(key, q, p.d) * p.scale - lse);
    const T keep = p.kept(n, i, j);
    const T dp = device_attention_dot<Width>(value, g, p.dv) * keep;
    const T ds = probability * (dp - a.delta[n * p.tq + i]) * p.scale;
    const T weight = probability * keep;
TANDEM_DEVICE_UNROLL
    for (std::int64_t c = 0; c < Width; ++c) {
      if (c < p.dv) dv[c] += weight * g[c];
      if (c < p.d) dk[c] += ds * q[c];
    }
  }
  T* dk_out = p.head(a.dk, n) + j * a.dk.row;
  T* dv_out = p.head(a.dv, n) + j * a.dv.row;
TANDEM_DEVICE_UNROLL
  for (std::int64_t c = 0; c < Width; ++c) {
    if (c < p.d) dk_out[c] = dk[c];
    if (c < p.dv) dv_out[c] = dv[c];
  }
}

// The widest rows (d and dv) a thread holds in registers; wider heads run
// the composed form (a thread of 256-wide rows spilled 4 KB of registers to
// local memory, and its kernels doubled nvcc's time here).
inline constexpr std::int64_t device_attention_max_width = 128;

// Calls f with the narrowest register width that holds d and dv
// (std::integral_constant: 32, 64 or 128); both are at most
// device_attention_max_width.
template <class F>
void with_device_attention_width(std::int64_t d, std::int64_t dv, F&& f) {
  const std::int64_t widest = d > dv ? d : dv;
  if (widest <= 32)
    f(std::integral_constant<std::int64_t, 32>{});
  else if (widest <= 64)
    f(std::integral_constant<std::int64_t, 64>{});
  else
    f(std::integral_constant<std::int64_t, device_attention_max_width>{});
}

}  // namespace tandem::detail
