#pragma once
// Element math that op definitions call: one name per function, overloaded
// for scalars (host and device) and for SIMD batches (forwarded to xsimd).
// NaN propagates through maximum/minimum in both forms, so the scalar tail of
// a loop agrees with its vector body. Batches test NaN with xsimd::isnan:
// xsimd 8.1's AVX-512 operator!= is an ordered compare, false for NaN != NaN.

#include <cmath>
#include <type_traits>

#include "tandem/core/config.hpp"
#include "tandem/kernels/cpu/simd.hpp"

namespace tandem::detail::math {

template <class T>
concept number = std::is_arithmetic_v<T>;

template <number T> TANDEM_HOST_DEVICE T exp(T x) { return std::exp(x); }
template <number T> TANDEM_HOST_DEVICE T log(T x) { return std::log(x); }
template <number T> TANDEM_HOST_DEVICE T log1p(T x) { return std::log1p(x); }
template <number T> TANDEM_HOST_DEVICE T expm1(T x) { return std::expm1(x); }
template <number T> TANDEM_HOST_DEVICE T sqrt(T x) { return std::sqrt(x); }
template <number T> TANDEM_HOST_DEVICE T sin(T x) { return std::sin(x); }
template <number T> TANDEM_HOST_DEVICE T cos(T x) { return std::cos(x); }
template <number T> TANDEM_HOST_DEVICE T tanh(T x) { return std::tanh(x); }
template <number T> TANDEM_HOST_DEVICE T erf(T x) { return std::erf(x); }
template <number T> TANDEM_HOST_DEVICE T erfc(T x) { return std::erfc(x); }
template <number T> TANDEM_HOST_DEVICE T pow(T x, T y) { return std::pow(x, y); }
template <number T> TANDEM_HOST_DEVICE T abs(T x) {
  if constexpr (std::is_unsigned_v<T>) return x;
  else return x < T(0) ? T(-x) : x;
}
template <number T> TANDEM_HOST_DEVICE T select(bool c, T a, T b) { return c ? a : b; }
template <number T> TANDEM_HOST_DEVICE T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (a != a || b != b) return a + b;
  return a > b ? a : b;
}
template <number T> TANDEM_HOST_DEVICE T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (a != a || b != b) return a + b;
  return a < b ? a : b;
}

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
template <class T, class A> xsimd::batch<T, A> exp(const xsimd::batch<T, A>& x) { return xsimd::exp(x); }
template <class T, class A> xsimd::batch<T, A> log(const xsimd::batch<T, A>& x) { return xsimd::log(x); }
template <class T, class A> xsimd::batch<T, A> log1p(const xsimd::batch<T, A>& x) { return xsimd::log1p(x); }
template <class T, class A> xsimd::batch<T, A> expm1(const xsimd::batch<T, A>& x) { return xsimd::expm1(x); }
template <class T, class A> xsimd::batch<T, A> sqrt(const xsimd::batch<T, A>& x) { return xsimd::sqrt(x); }
template <class T, class A> xsimd::batch<T, A> sin(const xsimd::batch<T, A>& x) { return xsimd::sin(x); }
template <class T, class A> xsimd::batch<T, A> cos(const xsimd::batch<T, A>& x) { return xsimd::cos(x); }
template <class T, class A> xsimd::batch<T, A> tanh(const xsimd::batch<T, A>& x) { return xsimd::tanh(x); }
template <class T, class A> xsimd::batch<T, A> erf(const xsimd::batch<T, A>& x) { return xsimd::erf(x); }
template <class T, class A> xsimd::batch<T, A> erfc(const xsimd::batch<T, A>& x) { return xsimd::erfc(x); }
template <class T, class A> xsimd::batch<T, A> abs(const xsimd::batch<T, A>& x) { return xsimd::abs(x); }
template <class T, class A>
xsimd::batch<T, A> pow(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y) {
  return xsimd::pow(x, y);
}
template <class T, class A>
xsimd::batch<T, A> select(const xsimd::batch_bool<T, A>& c, const xsimd::batch<T, A>& a,
                          const xsimd::batch<T, A>& b) {
  return xsimd::select(c, a, b);
}
template <class T, class A>
xsimd::batch<T, A> maximum(const xsimd::batch<T, A>& a, const xsimd::batch<T, A>& b) {
  auto larger = xsimd::select(a > b, a, b);
  if constexpr (std::is_floating_point_v<T>) return xsimd::select(xsimd::isnan(a) | xsimd::isnan(b), a + b, larger);
  else return larger;
}
template <class T, class A>
xsimd::batch<T, A> minimum(const xsimd::batch<T, A>& a, const xsimd::batch<T, A>& b) {
  auto smaller = xsimd::select(a < b, a, b);
  if constexpr (std::is_floating_point_v<T>) return xsimd::select(xsimd::isnan(a) | xsimd::isnan(b), a + b, smaller);
  else return smaller;
}
#endif

}  // namespace tandem::detail::math
