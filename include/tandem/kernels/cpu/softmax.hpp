#pragma once
// Row kernels for softmax and log-softmax over contiguous rows. Each row is
// shifted by its maximum (so +-1e4 neither overflows nor underflows to 0/0),
// and the infinite cases take their limits: a row whose maximum is +inf
// shares the mass among its +inf entries, -inf entries get probability 0,
// and a row of only -inf (or any NaN) has no distribution and gives NaN.

#include <cmath>
#include <cstdint>
#include <limits>

#include "tandem/detail/math.hpp"
#include "tandem/kernels/cpu/reduce.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

struct row_max {
  template <class A> static constexpr A identity() { return -std::numeric_limits<A>::infinity(); }
  template <class V> V operator()(const V& a, const V& b) const { return math::maximum(a, b); }
};

// What the log of a row's normaliser is, relative to its maximum.
template <class T>
struct row_normaliser {
  T peak;          // the row maximum
  T log_total;     // log(sum(exp(x - peak))), or log(count of +inf) when peak is +inf
  bool defined;    // false for NaN rows and rows of only -inf
};

template <class T>
row_normaliser<T> normalise_row(const T* x, std::int64_t n) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  T peak = reduce_span(row_max{}, x, n, -inf);
  if (peak != peak || peak == -inf) return {peak, T(0), false};
  if (peak == inf) {
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n; ++i) count += x[i] == inf;
    return {peak, std::log(static_cast<T>(count)), true};
  }
  T total = 0;
  std::int64_t i = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    using batch = simd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    batch acc(T(0)), shift(peak);
    for (; i + w <= n; i += w) acc += math::exp(simd::load(x + i) - shift);
    total = simd::reduce_add(acc);
  }
#endif
  for (; i < n; ++i) total += std::exp(x[i] - peak);
  return {peak, std::log(total), true};
}

// out[r, :] = log_softmax (Log = true) or softmax of in[r, :].
template <bool Log, class T>
void softmax_rows(const T* in, std::int64_t rows, std::int64_t n, T* out) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  parallel_for(rows, std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(n, 1)), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const T* x = in + r * n;
      T* y = out + r * n;
      row_normaliser<T> norm = normalise_row(x, n);
      if (!norm.defined) {
        std::fill(y, y + n, std::numeric_limits<T>::quiet_NaN());
      } else if (norm.peak == inf) {
        for (std::int64_t i = 0; i < n; ++i)
          y[i] = x[i] == inf ? (Log ? -norm.log_total : std::exp(-norm.log_total)) : (Log ? -inf : T(0));
      } else {
        // (x - peak) first: folding log_total into the shift would round it
        // away next to a peak of 1e4.
        std::int64_t i = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
        if constexpr (simd::supported<T>) {
          using batch = simd::batch<T>;
          constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
          batch peak(norm.peak), log_total(norm.log_total);
          for (; i + w <= n; i += w) {
            batch v = (simd::load(x + i) - peak) - log_total;
            simd::store(y + i, Log ? v : math::exp(v));
          }
        }
#endif
        for (; i < n; ++i) {
          T v = (x[i] - norm.peak) - norm.log_total;
          y[i] = Log ? v : std::exp(v);
        }
      }
    }
  });
}

}  // namespace tandem::detail
