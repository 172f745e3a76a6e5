#pragma once
// Row kernels for softmax and log-softmax over contiguous rows. Each row is
// shifted by its maximum (so +-1e4 neither overflows nor underflows to 0/0),
// and the infinite cases take their limits: a row whose maximum is +inf
// shares the mass among its +inf entries, -inf entries get probability 0,
// and a row of only -inf (or any NaN) has no distribution and gives NaN.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tandem/detail/math.hpp"
#include "tandem/kernels/cpu/dispatch_slot.hpp"
#include "tandem/kernels/cpu/reduce.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {

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

// sum(exp(x - peak)) over one block of at most reduce_block inputs.
template <class T>
T exp_sum(const T* x, std::int64_t n, T peak) {
  T total = 0;
  std::int64_t i = 0;
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (simd::supported<T>) {
    using batch = simd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    batch a0(T(0)), a1 = a0, a2 = a0, a3 = a0, shift(peak);
    for (; i + 4 * w <= n; i += 4 * w) {
      a0 += math::exp(simd::load(x + i) - shift);
      a1 += math::exp(simd::load(x + i + w) - shift);
      a2 += math::exp(simd::load(x + i + 2 * w) - shift);
      a3 += math::exp(simd::load(x + i + 3 * w) - shift);
    }
    for (; i + w <= n; i += w) a0 += math::exp(simd::load(x + i) - shift);
    total = simd::reduce_add((a0 + a1) + (a2 + a3));
  }
#endif
  for (; i < n; ++i) total += std::exp(x[i] - peak);
  return total;
}

template <class T>
row_normaliser<T> normalise_row(const T* x, std::int64_t n) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  // This build's own span: a dispatched softmax runs whole in one build.
  T peak = native_reduce_span(row_max{}, x, n, -inf);
  if (peak != peak || peak == -inf) return {peak, T(0), false};
  if (peak == inf) {
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n; ++i) count += x[i] == inf;
    return {peak, std::log(static_cast<T>(count)), true};
  }
  // Blocks of reduce_block, each summed by four SIMD accumulators: one
  // running sum over a long row would round at the size of the whole total
  // (a 1e6-element float row drifted 3e-5 with AVX2's eight lanes).
  T total = 0;
  for (std::int64_t first = 0; first < n; first += reduce_block)
    total += exp_sum(x + first, std::min(reduce_block, n - first), peak);
  return {peak, std::log(total), true};
}

// out[r, :] = log_softmax (Log = true) or softmax of in[r, :].
template <bool Log, class T>
void native_softmax_rows(const T* in, std::int64_t rows, std::int64_t n, T* out) {
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

}  // inline namespace TANDEM_KERNEL_ISA

// The rows' softmax chosen at run time among tandem::compiled's builds
// (kernels/cpu/dispatch.hpp); null until a choice is made.
template <class T>
using softmax_rows_function = void (*)(const T*, std::int64_t, std::int64_t, T*);
template <bool Log, class T>
inline constinit std::atomic<softmax_rows_function<T>> dispatched_softmax_rows{nullptr};

inline namespace TANDEM_KERNEL_ISA {

template <bool Log, class T>
void softmax_rows(const T* in, std::int64_t rows, std::int64_t n, T* out) {
  call_dispatched<&native_softmax_rows<Log, T>>(dispatched_softmax_rows<Log, T>, in, rows, n, out);
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
