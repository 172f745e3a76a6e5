#pragma once
// How ops evaluate inside a fused kernel: on a register "lane" (a SIMD batch
// or, in scalar tails and on the device, one element) of the group's compute
// type. Comparisons give 1 or 0 in that type, so a condition fused into a
// `where` stays in registers.
//
// lane<V> also lets the ops' derivative rules (the same member templates
// that eager backward runs on tensors) run unchanged on registers: the
// functions below are found by argument-dependent lookup when a rule calls
// `where`, `exp`, `square`... unqualified on lanes.

#include <type_traits>

#include "tandem/core/config.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise.hpp"

namespace tandem::detail::fused {

template <class V>
struct element_of {
  using type = V;
};
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
template <class T, class A>
struct element_of<xsimd::batch<T, A>> {
  using type = T;
};
#endif
template <class V>
using element_t = typename element_of<V>::type;

template <class V, class M>
TANDEM_HOST_DEVICE V from_mask(const M& mask) {
  if constexpr (std::is_arithmetic_v<V>) return mask ? V(1) : V(0);
  else return detail::math::select(mask, V(1), V(0));
}

template <class V>
TANDEM_HOST_DEVICE auto holds(const V& c) {
  if constexpr (std::is_arithmetic_v<V>) return c != V(0);
  else return c == V(1);
}

template <class Op>
inline constexpr bool is_comparison = std::is_same_v<Op, eq_op> || std::is_same_v<Op, ne_op> ||
                                      std::is_same_v<Op, lt_op> || std::is_same_v<Op, le_op> ||
                                      std::is_same_v<Op, gt_op> || std::is_same_v<Op, ge_op>;
template <class Op>
inline constexpr bool is_logical = std::is_same_v<Op, logical_and_op> || std::is_same_v<Op, logical_or_op> ||
                                   std::is_same_v<Op, logical_xor_op> || std::is_same_v<Op, logical_not_op>;

// Whether a group holding Op can run on SIMD batches.
template <class Op>
constexpr bool vectorizable() {
  if constexpr (std::is_same_v<Op, where_op> || is_comparison<Op> || is_logical<Op>) return true;
  else if constexpr (std::is_same_v<typename Op::template result<float>, bool>) return false;
  else return op_is_vectorizable<Op>();
}

// Op applied to lanes, giving a lane of the same type.
template <class Op, class V, class... R>
TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE V apply(const Op& op, const V& a, const R&... rest) {
  if constexpr (std::is_same_v<Op, where_op>) {
    return [](const V& c, const V& x, const V& y) {
      if constexpr (std::is_arithmetic_v<V>) return c != V(0) ? x : y;
      else return detail::math::select(c == V(1), x, y);
    }(a, rest...);
  } else if constexpr (is_comparison<Op>) {
    const V& b = (rest, ...);
    if constexpr (std::is_same_v<Op, eq_op>) return from_mask<V>(a == b);
    else if constexpr (std::is_same_v<Op, ne_op>) return V(1) - from_mask<V>(a == b);
    else if constexpr (std::is_same_v<Op, lt_op>) return from_mask<V>(a < b);
    else if constexpr (std::is_same_v<Op, le_op>) return from_mask<V>(a <= b);
    else if constexpr (std::is_same_v<Op, gt_op>) return from_mask<V>(a > b);
    else return from_mask<V>(a >= b);
  } else if constexpr (is_logical<Op> && !std::is_same_v<V, bool>) {
    if constexpr (std::is_same_v<Op, logical_not_op>) return V(1) - from_mask<V>(holds(a));
    else {
      V x = from_mask<V>(holds(a)), y = from_mask<V>(holds((rest, ...)));
      if constexpr (std::is_same_v<Op, logical_and_op>) return x * y;
      else if constexpr (std::is_same_v<Op, logical_or_op>) return x + y - x * y;
      else return (x - y) * (x - y);
    }
  } else if constexpr (std::is_same_v<typename Op::template result<element_t<V>>, bool>) {
    return V(op(a, rest...) ? 1 : 0);
  } else {
    return op(a, rest...);
  }
}

template <class V>
struct lane {
  V v;
};

template <class V, class S>
TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE V value_of(const S& s) {
  if constexpr (std::is_arithmetic_v<S>) return V(static_cast<element_t<V>>(s));
  else return s.v;
}

template <class X>
inline constexpr bool is_lane = false;
template <class V>
inline constexpr bool is_lane<lane<V>> = true;

// The lane type among the operands (at least one is a lane).
template <class... X>
struct lane_of;
template <class V, class... R>
struct lane_of<lane<V>, R...> {
  using type = V;
};
template <class X, class... R>
struct lane_of<X, R...> : lane_of<R...> {};

template <class... X>
concept lane_operands = (is_lane<X> || ...) && ((is_lane<X> || std::is_arithmetic_v<X>) && ...);

template <class Op, class... X>
  requires lane_operands<X...>
TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE auto apply_lanes(const Op& op, const X&... x) {
  using V = typename lane_of<X...>::type;
  return lane<V>{apply(op, value_of<V>(x)...)};
}

template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator+(const A& a, const B& b) { return apply_lanes(add_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator-(const A& a, const B& b) { return apply_lanes(sub_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator*(const A& a, const B& b) { return apply_lanes(mul_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator/(const A& a, const B& b) { return apply_lanes(div_op{}, a, b); }
template <class V>
TANDEM_HOST_DEVICE auto operator-(const lane<V>& a) { return apply_lanes(neg_op{}, a); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator==(const A& a, const B& b) { return apply_lanes(eq_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator!=(const A& a, const B& b) { return apply_lanes(ne_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator<(const A& a, const B& b) { return apply_lanes(lt_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator<=(const A& a, const B& b) { return apply_lanes(le_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator>(const A& a, const B& b) { return apply_lanes(gt_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto operator>=(const A& a, const B& b) { return apply_lanes(ge_op{}, a, b); }

template <class C, class A, class B> requires lane_operands<C, A, B>
TANDEM_HOST_DEVICE auto where(const C& c, const A& a, const B& b) { return apply_lanes(where_op{}, c, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto logical_and(const A& a, const B& b) { return apply_lanes(logical_and_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto logical_or(const A& a, const B& b) { return apply_lanes(logical_or_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto pow(const A& a, const B& b) { return apply_lanes(pow_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto maximum(const A& a, const B& b) { return apply_lanes(maximum_op{}, a, b); }
template <class A, class B> requires lane_operands<A, B>
TANDEM_HOST_DEVICE auto minimum(const A& a, const B& b) { return apply_lanes(minimum_op{}, a, b); }
template <class Op, class... X> requires lane_operands<X...>
TANDEM_HOST_DEVICE auto elementwise(const Op& op, const X&... x) { return apply_lanes(op, x...); }

template <class V> TANDEM_HOST_DEVICE auto abs(const lane<V>& x) { return apply_lanes(abs_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto sign(const lane<V>& x) { return apply_lanes(sign_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto square(const lane<V>& x) { return apply_lanes(square_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto exp(const lane<V>& x) { return apply_lanes(exp_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto log(const lane<V>& x) { return apply_lanes(log_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto log1p(const lane<V>& x) { return apply_lanes(log1p_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto expm1(const lane<V>& x) { return apply_lanes(expm1_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto sqrt(const lane<V>& x) { return apply_lanes(sqrt_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto rsqrt(const lane<V>& x) { return apply_lanes(rsqrt_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto sin(const lane<V>& x) { return apply_lanes(sin_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto cos(const lane<V>& x) { return apply_lanes(cos_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto erf(const lane<V>& x) { return apply_lanes(erf_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto erfc(const lane<V>& x) { return apply_lanes(erfc_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto tanh(const lane<V>& x) { return apply_lanes(tanh_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto sigmoid(const lane<V>& x) { return apply_lanes(sigmoid_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto relu(const lane<V>& x) { return apply_lanes(relu_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto gelu(const lane<V>& x) { return apply_lanes(gelu_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto gelu(const lane<V>& x, gelu_approximation_tanh) { return apply_lanes(gelu_tanh_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto softplus(const lane<V>& x) { return apply_lanes(softplus_op{}, x); }
template <class V> TANDEM_HOST_DEVICE auto logical_not(const lane<V>& x) { return apply_lanes(logical_not_op{}, x); }

}  // namespace tandem::detail::fused
