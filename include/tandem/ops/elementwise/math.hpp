#pragma once
// Unary math: abs sign square exp log log1p expm1 sqrt rsqrt sin cos, and the
// predicates isnan isinf isfinite.

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {
namespace op {

struct abs : detail::same_type_rule {
  static constexpr const char* name = "abs";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::abs(x); }
};
// -1, 0 or 1; NaN stays NaN and -0 stays -0.
struct sign : detail::same_type_rule {
  static constexpr const char* name = "sign";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const {
    return detail::math::select(x > V(0), V(1), detail::math::select(x < V(0), V(-1), x));
  }
};
struct square : detail::same_type_rule {
  static constexpr const char* name = "square";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return x * x; }
};
struct exp : detail::floating_rule {
  static constexpr const char* name = "exp";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::exp(x); }
};
struct log : detail::floating_rule {
  static constexpr const char* name = "log";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::log(x); }
};
struct log1p : detail::floating_rule {
  static constexpr const char* name = "log1p";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::log1p(x); }
};
struct expm1 : detail::floating_rule {
  static constexpr const char* name = "expm1";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::expm1(x); }
};
struct sqrt : detail::floating_rule {
  static constexpr const char* name = "sqrt";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::sqrt(x); }
};
struct rsqrt : detail::floating_rule {
  static constexpr const char* name = "rsqrt";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return V(1) / detail::math::sqrt(x); }
};
struct sin : detail::floating_rule {
  static constexpr const char* name = "sin";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::sin(x); }
};
struct cos : detail::floating_rule {
  static constexpr const char* name = "cos";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x) const { return detail::math::cos(x); }
};
struct isnan : detail::predicate_rule {
  static constexpr const char* name = "isnan";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& x) const { return x != x; }
};
struct isinf : detail::predicate_rule {
  static constexpr const char* name = "isinf";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& x) const {
    return x == x && x - x != x - x;
  }
};
struct isfinite : detail::predicate_rule {
  static constexpr const char* name = "isfinite";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& x) const { return x - x == x - x; }
};

}  // namespace op

template <element T> auto abs(const tensor<T>& x) { return detail::map(op::abs{}, x); }
template <element T> auto sign(const tensor<T>& x) { return detail::map(op::sign{}, x); }
template <element T> auto square(const tensor<T>& x) { return detail::map(op::square{}, x); }
template <element T> auto exp(const tensor<T>& x) { return detail::map(op::exp{}, x); }
template <element T> auto log(const tensor<T>& x) { return detail::map(op::log{}, x); }
template <element T> auto log1p(const tensor<T>& x) { return detail::map(op::log1p{}, x); }
template <element T> auto expm1(const tensor<T>& x) { return detail::map(op::expm1{}, x); }
template <element T> auto sqrt(const tensor<T>& x) { return detail::map(op::sqrt{}, x); }
template <element T> auto rsqrt(const tensor<T>& x) { return detail::map(op::rsqrt{}, x); }
template <element T> auto sin(const tensor<T>& x) { return detail::map(op::sin{}, x); }
template <element T> auto cos(const tensor<T>& x) { return detail::map(op::cos{}, x); }
template <element T> auto isnan(const tensor<T>& x) { return detail::map(op::isnan{}, x); }
template <element T> auto isinf(const tensor<T>& x) { return detail::map(op::isinf{}, x); }
template <element T> auto isfinite(const tensor<T>& x) { return detail::map(op::isfinite{}, x); }

}  // namespace tandem
