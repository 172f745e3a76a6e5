#pragma once
// Element math that op definitions call: one name per function, overloaded
// for scalars (host and device) and for SIMD batches (forwarded to xsimd,
// but for float tanh, sin and cos, and fixes to some of xsimd's edges). The
// batch forms are always inlined: a fused loop that calls one out of line
// spills every vector register around the call.
// NaN propagates through maximum/minimum in both forms, so the scalar tail of
// a loop agrees with its vector body. Batches test NaN with xsimd::isnan:
// xsimd 8.1's AVX-512 operator!= is an ordered compare, false for NaN != NaN.

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include "tandem/core/config.hpp"
#include "tandem/kernels/cpu/simd.hpp"

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {
namespace math {

template <class T>
concept number = std::is_arithmetic_v<T>;

template <number T> TANDEM_HOST_DEVICE T exp(T x) { return std::exp(x); }
template <number T> TANDEM_HOST_DEVICE T log(T x) { return std::log(x); }
template <number T> TANDEM_HOST_DEVICE T log1p(T x) { return std::log1p(x); }
template <number T> TANDEM_HOST_DEVICE T expm1(T x) { return std::expm1(x); }
template <number T> TANDEM_HOST_DEVICE T sqrt(T x) { return std::sqrt(x); }
template <number T> TANDEM_HOST_DEVICE T sin(T x) { return std::sin(x); }
template <number T> TANDEM_HOST_DEVICE T cos(T x) { return std::cos(x); }
template <number T> TANDEM_HOST_DEVICE T tanh(T x);
template <number T> TANDEM_HOST_DEVICE T erf(T x) { return std::erf(x); }
template <number T> TANDEM_HOST_DEVICE T erfc(T x) { return std::erfc(x); }
template <number T> TANDEM_HOST_DEVICE T pow(T x, T y) { return std::pow(x, y); }
template <number T> TANDEM_HOST_DEVICE T abs(T x) {
  if constexpr (std::is_unsigned_v<T>) return x;
  else return x < T(0) ? T(-x) : x;
}
template <number T> TANDEM_HOST_DEVICE T select(bool c, T a, T b) { return c ? a : b; }

// a * b + c, rounded once: std::fma on scalars, the FMA instruction on
// batches where the target has one. xsimd 8.1 has no AVX-512 fma kernel:
// its generic one is x * y + z, which GCC fuses at -O2 but not at -O1 and
// clang never does, so results (and GEMM's speed) depended on how a
// translation unit was compiled. On targets without FMA it rounds twice.
template <class T>
TANDEM_HOST_DEVICE T multiply_add(T a, T b, T c) {
  return std::fma(a, b, c);
}

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
template <class T, class A>
xsimd::batch<T, A> multiply_add(const xsimd::batch<T, A>& a, const xsimd::batch<T, A>& b, const xsimd::batch<T, A>& c) {
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, A> && std::is_same_v<T, float>) return _mm512_fmadd_ps(a, b, c);
  if constexpr (std::is_base_of_v<xsimd::avx512f, A> && std::is_same_v<T, double>) return _mm512_fmadd_pd(a, b, c);
#endif
  return xsimd::fma(a, b, c);
}
template <class T, class A> TANDEM_ALWAYS_INLINE xsimd::batch<T, A> tanh(const xsimd::batch<T, A>& x);
#endif

// tanh of floats as x P(x^2) / Q(x^2), P and Q of degree 4, fitted by
// bench/tanh_fit.py to a relative error of 2.1e-8 on [0, 9] (beyond 9,
// tanh rounds to +-1, as the ratio does at 9; the callers saturate there).
// Evaluated in float it is good to 5.4 ulp (3.2e-7 absolute) where xsimd's exp-based tanh is good to
// 1.35 ulp, at 1.6-2.2x its speed: the trade Eigen and XLA make (Eigen's:
// 4.9 ulp, 2.9e-7), far below what float training notices. `V` is float or
// a float batch.
inline constexpr float rational_tanh_saturation = 9.0f;
template <class V>
TANDEM_HOST_DEVICE V rational_tanh_ratio(const V& x) {
  const V t = x * x;
  V p = multiply_add(V(1.3353932e-08f), t, V(2.0608577e-05f));
  p = multiply_add(p, t, V(0.0034955589f));
  p = multiply_add(p, t, V(0.13381001f));
  p = multiply_add(p, t, V(1.0f));
  V q = multiply_add(V(7.776265e-07f), t, V(0.00032855858f));
  q = multiply_add(q, t, V(0.025876872f));
  q = multiply_add(q, t, V(0.46714318f));
  q = multiply_add(q, t, V(1.0f));
  return x * p / q;
}

// A float on the host runs the vector form on one lane, so that a loop's
// scalar tail rounds exactly as its body, whoever compiled it.
template <number T> TANDEM_HOST_DEVICE T tanh(T x) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_same_v<T, float>) return math::tanh(xsimd::batch<float>(x)).get(0);
#elif !defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    // NaN compares false and passes through the ratio.
    bool saturated = (x < 0 ? -x : x) > rational_tanh_saturation;
    return saturated ? std::copysign(1.0f, x) : rational_tanh_ratio(x);
  }
#endif
  return std::tanh(x);
}

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
// xsimd 8.1's exp overflows early: exp(709.7) is 1.65e308 but came out inf
// (float: 88.7). Near the top it is computed as exp(x / 2) squared, which
// halves x exactly. (Results below the least normal value flush to zero, as
// in xsimd.)
template <class T, class A> TANDEM_ALWAYS_INLINE xsimd::batch<T, A> exp(const xsimd::batch<T, A>& x) {
  using batch = xsimd::batch<T, A>;
  const auto near_overflow = x > batch(std::is_same_v<T, float> ? T(80) : T(700));
  batch result = xsimd::exp(xsimd::select(near_overflow, x * batch(T(0.5)), x));
  return xsimd::select(near_overflow, result * result, result);
}
// xsimd 8.1's log reads a subnormal's exponent as the least normal one's
// (double: log(1.5e-323) came out -746.5, not -743.3): such inputs are
// scaled into the normal range first, and the scale taken off after.
template <class T, class A> TANDEM_ALWAYS_INLINE xsimd::batch<T, A> log(const xsimd::batch<T, A>& x) {
  using batch = xsimd::batch<T, A>;
  constexpr int shift = std::numeric_limits<T>::digits;
  const auto subnormal = x < batch(std::numeric_limits<T>::min());
  batch scaled = xsimd::select(subnormal, x * batch(std::ldexp(T(1), shift)), x);
  batch result = xsimd::log(scaled);
  return xsimd::select(subnormal, result - batch(T(shift) * std::numbers::ln2_v<T>), result);
}
template <class T, class A>
TANDEM_ALWAYS_INLINE xsimd::batch<T, A> log1p(const xsimd::batch<T, A>& x) {
  return xsimd::log1p(x);
}
// xsimd 8.1's expm1 overflows early, as its exp does; where exp(x) is that
// large, expm1(x) rounds to it.
template <class T, class A> TANDEM_ALWAYS_INLINE xsimd::batch<T, A> expm1(const xsimd::batch<T, A>& x) {
  using batch = xsimd::batch<T, A>;
  const auto large = x > batch(std::is_same_v<T, float> ? T(80) : T(700));
  return xsimd::select(large, math::exp(x), xsimd::expm1(xsimd::select(large, batch(T(0)), x)));
}
template <class T, class A>
TANDEM_ALWAYS_INLINE xsimd::batch<T, A> sqrt(const xsimd::batch<T, A>& x) {
  return xsimd::sqrt(x);
}
// sin and cos of floats from one reduction: |x| = n pi/2 + r with |r| <=
// pi/4, pi/2 in four parts (Cody-Waite), the first three of at most 12
// bits, so that n times each is exact for n < 4096 and every step rounds
// once, with FMA or without. Polynomials in r fitted by bench/sincos_fit.py
// give sin r and cos r; n's quadrant swaps and signs them, and sin takes x's
// sign (so sin(-0) is -0). Past |x| = 6400 (infinities too) xsimd's
// reduction, exact for every float, takes over.
//
// All of it inline, so that sin and cos of one x in one loop (a sine and its
// derivative in a fused gradient) share it; xsimd's reduce in a function of
// their own that GCC inlines into some loops and not others. Sharing needs
// GCC to see the two computations as equal, and GCC 12's AVX-512 rounding,
// conversion and shift intrinsics each carry an undefined operand of their
// own that makes two equal calls look different. So n is rounded by adding
// and taking away 1.5 * 2^23, and its quadrant is found in floats.
inline constexpr float sin_cos_reduction_bound = 6400.0f;

template <class A>
struct sine_and_cosine {
  xsimd::batch<float, A> sin, cos;
};

// The lanes of x past the bound from xsimd, the others from `near`. By
// value: an x passed by reference would have to be read again after the
// call, and a second sin_cos(x) could no longer share the first's work.
template <class A>
TANDEM_COLD sine_and_cosine<A> far_sin_cos(xsimd::batch<float, A> x, sine_and_cosine<A> near) {
  const auto far = xsimd::abs(x) > xsimd::batch<float, A>(sin_cos_reduction_bound);
  return {xsimd::select(far, xsimd::sin(x), near.sin), xsimd::select(far, xsimd::cos(x), near.cos)};
}

template <class A>
TANDEM_ALWAYS_INLINE sine_and_cosine<A> sin_cos(const xsimd::batch<float, A>& x) {
  using batch = xsimd::batch<float, A>;
  const batch magnitude = xsimd::abs(x);
  const batch rounder(12582912.0f);
  // One rounding where the target has FMA, whether or not the compiler
  // contracts a * b + c, so that n does not depend on the flags.
  const batch n = multiply_add(magnitude, batch(0.636619772f), rounder) - rounder;
  batch r = multiply_add(n, batch(-1.5703125f), magnitude);
  r = multiply_add(n, batch(-4.837512969970703125e-4f), r);
  r = multiply_add(n, batch(-7.549533620476723e-8f), r);
  r = multiply_add(n, batch(-2.5633440682570896e-12f), r);
  const batch t = r * r;
  batch s = multiply_add(multiply_add(batch(-1.95153028e-4f), t, batch(8.33216123e-3f)), t, batch(-0.166666552f));
  s = multiply_add(s * t, r, r);
  batch c = multiply_add(multiply_add(batch(2.44384664e-5f), t, batch(-1.38873677e-3f)), t, batch(4.16666456e-2f));
  c = multiply_add(c * t, t, multiply_add(t, batch(-0.5f), batch(1.0f)));
  // The quadrant q = n mod 4, as a float: n - 4 floor(n / 4), the floor
  // rounded as n was. Odd q swaps sin and cos; q >= 2 negates sin, q of 1
  // or 2 negates cos.
  const batch quarter = (n * batch(0.25f) - batch(0.375f) + rounder) - rounder;
  const batch q = multiply_add(quarter, batch(-4.0f), n);
  const auto odd = (q == batch(1.0f)) | (q == batch(3.0f));
  const batch negative(-0.0f), positive(0.0f);
  const batch sin_sign = xsimd::select(q >= batch(2.0f), negative, positive) ^ xsimd::bitofsign(x);
  const batch cos_sign = xsimd::select(xsimd::abs(q - batch(1.5f)) < batch(1.0f), negative, positive);
  const sine_and_cosine<A> near{xsimd::select(odd, c, s) ^ sin_sign, xsimd::select(odd, s, c) ^ cos_sign};
  // The rare path reads the near result too, so the compiler computes it
  // before the test, where a second sin_cos(x) inlined after this one finds
  // it.
  if (xsimd::any(magnitude > batch(sin_cos_reduction_bound))) [[unlikely]]
    return far_sin_cos(x, near);
  return near;
}

// Doubles: xsimd's (a double polynomial that good costs what its call does).
template <class T, class A> TANDEM_ALWAYS_INLINE xsimd::batch<T, A> sin(const xsimd::batch<T, A>& x) {
  if constexpr (std::is_same_v<T, float>) return sin_cos(x).sin;
  else return xsimd::sin(x);
}
template <class T, class A> TANDEM_ALWAYS_INLINE xsimd::batch<T, A> cos(const xsimd::batch<T, A>& x) {
  if constexpr (std::is_same_v<T, float>) return sin_cos(x).cos;
  else return xsimd::cos(x);
}
// xsimd's for double (a rational function that good would cost more than
// its exp), the rational approximation above for float. The ratio at +-9
// rounds to exactly +-1, so clamping the argument to [-9, 9] gives the
// bits of selecting +-1 beyond: two instructions where the select took
// four, in a function whose every instruction counts on AVX-512 Intel
// cores (all of it runs on the same two ports there). min and max return
// their second operand where either is NaN, so NaN passes through.
template <class T, class A> TANDEM_ALWAYS_INLINE xsimd::batch<T, A> tanh(const xsimd::batch<T, A>& x) {
  if constexpr (std::is_same_v<T, float>) {
    using batch = xsimd::batch<T, A>;
    const batch bound(rational_tanh_saturation);
    return rational_tanh_ratio(xsimd::max(-bound, xsimd::min(bound, x)));
  } else {
    return xsimd::tanh(x);
  }
}
// xsimd 8.1's double erf and erfc square their argument, so beyond about
// 1e154 they return NaN. Past `bound` both are constant in T (erf is +-1,
// erfc 0 or 2), so the argument is clamped there; NaN passes through.
template <class T, class A>
xsimd::batch<T, A> clamped_magnitude(const xsimd::batch<T, A>& x, T bound) {
  using batch = xsimd::batch<T, A>;
  return xsimd::select(xsimd::abs(x) > batch(bound), xsimd::copysign(batch(bound), x), x);
}
template <class T, class A> xsimd::batch<T, A> erf(const xsimd::batch<T, A>& x) {
  return xsimd::erf(clamped_magnitude(x, T(6)));
}
template <class T, class A> xsimd::batch<T, A> erfc(const xsimd::batch<T, A>& x) {
  return xsimd::erfc(clamped_magnitude(x, T(30)));
}
template <class T, class A>
TANDEM_ALWAYS_INLINE xsimd::batch<T, A> abs(const xsimd::batch<T, A>& x) {
  return xsimd::abs(x);
}
// xsimd 8.1's pow is right for finite nonzero bases and finite exponents,
// and wrong at most of IEEE's special cases (pow(0, 0) came out 0, pow(1,
// nan) and pow(-inf, 0.5) nan, pow(-1, 1e300) -1). It runs on the base's
// magnitude here, the sign is set from the exponent (every large exponent
// is an even integer), and the special cases follow C99 Annex F, as
// std::pow does on the scalar path.
template <class T, class A>
xsimd::batch<T, A> pow(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y) {
  using batch = xsimd::batch<T, A>;
  const batch zero(T(0)), one(T(1)), inf(std::numeric_limits<T>::infinity());
  const auto integer = xsimd::floor(y) == y;
  const batch half = y * batch(T(0.5));
  const auto odd = integer & (xsimd::floor(half) != half);
  const auto positive = y > zero, negative = y < zero;
  const batch magnitude = xsimd::abs(x);
  // A subnormal base is scaled into the normal range (xsimd's log misreads
  // it, see log above) and the scale's power taken off after.
  constexpr int shift = std::numeric_limits<T>::digits;
  const auto subnormal = (magnitude < batch(std::numeric_limits<T>::min())) & (x != zero);
  batch r = xsimd::pow(xsimd::select(subnormal, magnitude * batch(std::ldexp(T(1), shift)), magnitude), y);
  r = xsimd::select(subnormal, r * xsimd::exp2(y * batch(T(-shift))), r);
  // A negative base: the sign of an odd integer power, no real non-integer one.
  const auto below_zero = x < zero;
  r = xsimd::select(below_zero & !integer, batch(std::numeric_limits<T>::quiet_NaN()), r);
  r = xsimd::select(below_zero & odd, -r, r);
  // A zero base: signed where the exponent is an odd integer.
  const batch signed_zero = xsimd::select(odd, x, zero);
  r = xsimd::select((x == zero) & positive, signed_zero, r);
  r = xsimd::select((x == zero) & negative, xsimd::select(odd, xsimd::copysign(inf, x), inf), r);
  // An infinite base.
  r = xsimd::select(x == inf, xsimd::select(positive, inf, zero), r);
  r = xsimd::select((x == -inf) & positive, xsimd::select(odd, -inf, inf), r);
  r = xsimd::select((x == -inf) & negative, xsimd::select(odd, -zero, zero), r);
  // An infinite exponent.
  r = xsimd::select(y == inf, xsimd::select(magnitude < one, zero, inf), r);
  r = xsimd::select(y == -inf, xsimd::select(magnitude < one, inf, zero), r);
  r = xsimd::select((magnitude == one) & xsimd::isinf(y), one, r);
  r = xsimd::select(xsimd::isnan(x) | xsimd::isnan(y), x + y, r);
  return xsimd::select((x == one) | (y == zero), one, r);
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

}  // namespace math
}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
