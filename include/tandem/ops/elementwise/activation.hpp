#pragma once
// Activations: tanh sigmoid relu gelu softplus, each stable over the whole
// float range (no overflow to NaN at large |x|).

#include <cstddef>
#include <numbers>

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {

struct tanh_op : detail::floating_rule {
  static constexpr const char* name = "tanh";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  static constexpr bool saves_inputs = false, saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::tanh(x); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const X&) const { return g * (1 - square(y)); }
};
struct sigmoid_op : detail::floating_rule {
  static constexpr const char* name = "sigmoid";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  static constexpr bool saves_inputs = false, saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return V(1) / (V(1) + detail::math::exp(-x)); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const X&) const { return g * y * (1 - y); }
};
// relu's backward fused into one SIMD pass: g where x > 0, else 0.
struct relu_backward_op : detail::same_type_rule {
  static constexpr const char* name = "relu_backward";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& g, const V& x) const {
    return detail::math::select(x > V(0), g, V(0));
  }
  template <std::size_t I, class G, class Y, class GI, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& gg, const Y&, const GI&, const X& x) const {
    if constexpr (I == 0) return elementwise(relu_backward_op{}, gg, x);
    else return gg * 0;
  }
};
// max(x, 0), with NaN kept as NaN. Its gradient at 0 is 0, as in PyTorch.
struct relu_op : detail::same_type_rule {
  static constexpr const char* name = "relu";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::maximum(x, V(0)); }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return elementwise(relu_backward_op{}, g, x); }
};
// The exact form, x * Phi(x), with Phi the standard normal CDF written with
// erfc so that the left tail keeps its relative precision.
struct gelu_op : detail::floating_rule {
  static constexpr const char* name = "gelu";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const {
    return V(0.5) * x * detail::math::erfc(x * V(-std::numbers::sqrt2 / 2));
  }
  // Phi(x) + x phi(x)
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const {
    return g * (erfc(x * (-std::numbers::sqrt2 / 2)) * 0.5 +
                x * exp(square(x) * -0.5) * (std::numbers::inv_sqrtpi / std::numbers::sqrt2));
  }
};
// The tanh form, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as
// GPT-2 was trained with (PyTorch's approximate='tanh'). Computed as
// x sigmoid(2 u), the same function, since 1 + tanh(u) loses the left
// tail's relative precision to cancellation.
struct gelu_tanh_op : detail::floating_rule {
  static constexpr const char* name = "gelu_tanh";
  static constexpr int instructions_per_batch = detail::transcendental_instructions;
  static constexpr double twice_root_two_over_pi = 2 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
  static constexpr double cubic = 0.044715;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const {
    return x / (V(1) + detail::math::exp(V(-twice_root_two_over_pi) * (x + V(cubic) * x * x * x)));
  }
  // s + x s (1 - s) 2 sqrt(2 / pi) (1 + 3 * 0.044715 x^2), s = sigmoid(2 u)
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const {
    auto s = sigmoid((x + x * x * x * cubic) * twice_root_two_over_pi);
    return g * (s + x * s * (1 - s) * (1 + square(x) * (3 * cubic)) * twice_root_two_over_pi);
  }
};
// Selects gelu's tanh form: gelu(x, approximate_tanh).
struct gelu_approximation_tanh {};
inline constexpr gelu_approximation_tanh approximate_tanh{};

// log(1 + e^x) as max(x, 0) + log1p(e^-|x|), which neither overflows nor loses small values.
struct softplus_op : detail::floating_rule {
  static constexpr const char* name = "softplus";
  static constexpr int instructions_per_batch = 2 * detail::transcendental_instructions;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const {
    return detail::math::maximum(x, V(0)) + detail::math::log1p(detail::math::exp(-detail::math::abs(x)));
  }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x) const { return g * sigmoid(x); }
};


template <detail::unary_operand X> auto tanh(const X& x) { return detail::map(tanh_op{}, x); }
template <detail::unary_operand X> auto sigmoid(const X& x) { return detail::map(sigmoid_op{}, x); }
template <detail::unary_operand X> auto relu(const X& x) { return detail::map(relu_op{}, x); }
template <detail::unary_operand X> auto gelu(const X& x) { return detail::map(gelu_op{}, x); }
template <detail::unary_operand X> auto gelu(const X& x, gelu_approximation_tanh) { return detail::map(gelu_tanh_op{}, x); }
template <detail::unary_operand X> auto softplus(const X& x) { return detail::map(softplus_op{}, x); }

}  // namespace tandem
