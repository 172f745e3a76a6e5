#pragma once
// Unary math: abs sign square exp log log1p expm1 sqrt rsqrt sin cos erf
// erfc, and the predicates isnan isinf isfinite. Each op: name, type rule,
// element math, derivative rule (what it saves for backward is declared:
// inputs by default, the output where the rule reads it instead).

#include <cstddef>
#include <numbers>

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {

struct abs_op : detail::same_type_rule {
  static constexpr const char* name = "abs";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::abs(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g * sign(x); }
};
// -1, 0 or 1; NaN stays NaN and -0 stays -0. Its gradient is zero.
struct sign_op : detail::same_type_rule {
  static constexpr const char* name = "sign";
  static constexpr bool saves_inputs = false;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const {
    return detail::math::select(x > V(0), V(1), detail::math::select(x < V(0), V(-1), x));
  }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X&) const { return g * 0; }
};
struct square_op : detail::same_type_rule {
  static constexpr const char* name = "square";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return x * x; }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g * x * 2; }
};
struct exp_op : detail::floating_rule {
  static constexpr const char* name = "exp";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  static constexpr bool saves_inputs = false, saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::exp(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const X&) const { return g * y; }
};
struct log_op : detail::floating_rule {
  static constexpr const char* name = "log";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::log(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g / x; }
};
struct log1p_op : detail::floating_rule {
  static constexpr const char* name = "log1p";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::log1p(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g / (x + 1); }
};
struct expm1_op : detail::floating_rule {
  static constexpr const char* name = "expm1";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  static constexpr bool saves_inputs = false, saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::expm1(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const X&) const { return g * (y + 1); }
};
struct sqrt_op : detail::floating_rule {
  static constexpr const char* name = "sqrt";
  static constexpr bool saves_inputs = false, saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::sqrt(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const X&) const { return g * 0.5 / y; }
};
struct rsqrt_op : detail::floating_rule {
  static constexpr const char* name = "rsqrt";
  static constexpr bool saves_inputs = false, saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return V(1) / detail::math::sqrt(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const X&) const { return g * y * y * y * -0.5; }
};
struct sin_op : detail::floating_rule {
  static constexpr const char* name = "sin";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::sin(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g * cos(x); }
};
struct cos_op : detail::floating_rule {
  static constexpr const char* name = "cos";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::cos(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return -(g * sin(x)); }
};
struct erf_op : detail::floating_rule {
  static constexpr const char* name = "erf";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::erf(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g * exp(-square(x)) * std::numbers::inv_sqrtpi * 2; }
};
struct erfc_op : detail::floating_rule {
  static constexpr const char* name = "erfc";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::erfc(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g * exp(-square(x)) * (-std::numbers::inv_sqrtpi * 2); }
};
struct isnan_op : detail::predicate_rule {
  static constexpr const char* name = "isnan";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& x) const { return x != x; }
};
struct isinf_op : detail::predicate_rule {
  static constexpr const char* name = "isinf";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& x) const { return x == x && x - x != x - x; }
};
struct isfinite_op : detail::predicate_rule {
  static constexpr const char* name = "isfinite";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& x) const { return x - x == x - x; }
};

template <detail::unary_operand X> auto abs(const X& x) { return detail::map(abs_op{}, x); }
template <detail::unary_operand X> auto sign(const X& x) { return detail::map(sign_op{}, x); }
template <detail::unary_operand X> auto square(const X& x) { return detail::map(square_op{}, x); }
template <detail::unary_operand X> auto exp(const X& x) { return detail::map(exp_op{}, x); }
template <detail::unary_operand X> auto log(const X& x) { return detail::map(log_op{}, x); }
template <detail::unary_operand X> auto log1p(const X& x) { return detail::map(log1p_op{}, x); }
template <detail::unary_operand X> auto expm1(const X& x) { return detail::map(expm1_op{}, x); }
template <detail::unary_operand X> auto sqrt(const X& x) { return detail::map(sqrt_op{}, x); }
template <detail::unary_operand X> auto rsqrt(const X& x) { return detail::map(rsqrt_op{}, x); }
template <detail::unary_operand X> auto sin(const X& x) { return detail::map(sin_op{}, x); }
template <detail::unary_operand X> auto cos(const X& x) { return detail::map(cos_op{}, x); }
template <detail::unary_operand X> auto erf(const X& x) { return detail::map(erf_op{}, x); }
template <detail::unary_operand X> auto erfc(const X& x) { return detail::map(erfc_op{}, x); }
template <detail::unary_operand X> auto isnan(const X& x) { return detail::map(isnan_op{}, x); }
template <detail::unary_operand X> auto isinf(const X& x) { return detail::map(isinf_op{}, x); }
template <detail::unary_operand X> auto isfinite(const X& x) { return detail::map(isfinite_op{}, x); }

}  // namespace tandem
