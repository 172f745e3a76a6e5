#pragma once
// Activations: tanh sigmoid relu gelu softplus, each stable over the whole
// float range (no overflow to NaN at large |x|).

#include <numbers>

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {
namespace op {

struct tanh : detail::floating_rule {
  static constexpr const char* name = "tanh";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::tanh(x); }
};
struct sigmoid : detail::floating_rule {
  static constexpr const char* name = "sigmoid";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return V(1) / (V(1) + detail::math::exp(-x)); }
};
// max(x, 0), with NaN kept as NaN.
struct relu : detail::same_type_rule {
  static constexpr const char* name = "relu";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::maximum(x, V(0)); }
};
// The exact form, x * Phi(x), with Phi the standard normal CDF written with
// erfc so that the left tail keeps its relative precision.
struct gelu : detail::floating_rule {
  static constexpr const char* name = "gelu";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const {
    return V(0.5) * x * detail::math::erfc(x * V(-std::numbers::sqrt2 / 2));
  }
};
// log(1 + e^x) as max(x, 0) + log1p(e^-|x|), which neither overflows nor loses small values.
struct softplus : detail::floating_rule {
  static constexpr const char* name = "softplus";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const {
    return detail::math::maximum(x, V(0)) + detail::math::log1p(detail::math::exp(-detail::math::abs(x)));
  }
};

}  // namespace op

template <element T> auto tanh(const tensor<T>& x) { return detail::map(op::tanh{}, x); }
template <element T> auto sigmoid(const tensor<T>& x) { return detail::map(op::sigmoid{}, x); }
template <element T> auto relu(const tensor<T>& x) { return detail::map(op::relu{}, x); }
template <element T> auto gelu(const tensor<T>& x) { return detail::map(op::gelu{}, x); }
template <element T> auto softplus(const tensor<T>& x) { return detail::map(op::softplus{}, x); }

}  // namespace tandem
