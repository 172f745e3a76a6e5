#pragma once
// + - * / neg pow maximum minimum. Each op is one struct in tandem::op: its
// name, its type rule and its element math, written once for scalars and
// SIMD batches; the free functions below apply it to tensors and scalars.

#include <type_traits>

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {
namespace op {

struct add : detail::same_type_rule {
  static constexpr const char* name = "add";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a + b; }
};
struct sub : detail::same_type_rule {
  static constexpr const char* name = "sub";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a - b; }
};
struct mul : detail::same_type_rule {
  static constexpr const char* name = "mul";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a * b; }
};
// True division: integer operands divide as float, as in NumPy and PyTorch.
struct div : detail::floating_rule {
  static constexpr const char* name = "div";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a / b; }
};
struct neg : detail::same_type_rule {
  static constexpr const char* name = "neg";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a) const { return -a; }
};
struct pow : detail::floating_rule {
  static constexpr const char* name = "pow";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::pow(a, b); }
};
struct maximum : detail::same_type_rule {
  static constexpr const char* name = "maximum";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::maximum(a, b); }
};
struct minimum : detail::same_type_rule {
  static constexpr const char* name = "minimum";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::minimum(a, b); }
};

}  // namespace op

namespace detail {
template <class... X>
inline constexpr bool any_bool_tensor = (std::is_same_v<X, tensor<bool>> || ...);
}

template <class A, class B> requires detail::elementwise_operands<A, B>
auto add(const A& a, const B& b) { return detail::map(op::add{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto sub(const A& a, const B& b) {
  static_assert(!(detail::any_bool_tensor<A> && detail::any_bool_tensor<B>),
                "tandem::sub: bool tensors cannot be subtracted; use logical_xor");
  return detail::map(op::sub{}, a, b);
}
template <class A, class B> requires detail::elementwise_operands<A, B>
auto mul(const A& a, const B& b) { return detail::map(op::mul{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto div(const A& a, const B& b) { return detail::map(op::div{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto pow(const A& a, const B& b) { return detail::map(op::pow{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto maximum(const A& a, const B& b) { return detail::map(op::maximum{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto minimum(const A& a, const B& b) { return detail::map(op::minimum{}, a, b); }

template <element T>
tensor<T> neg(const tensor<T>& x) {
  static_assert(!std::is_same_v<T, bool>, "tandem::neg: a bool tensor has no negation; use logical_not");
  return detail::map(op::neg{}, x);
}

template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator+(const A& a, const B& b) { return add(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator-(const A& a, const B& b) { return sub(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator*(const A& a, const B& b) { return mul(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator/(const A& a, const B& b) { return div(a, b); }
template <element T>
tensor<T> operator-(const tensor<T>& x) { return neg(x); }

// In place: x op= y writes into x's elements. x may be a temporary view
// (x.slice(...) *= 2): a tensor is a handle, so the write reaches its storage.
namespace detail {
template <class X, class Y>
concept writable_with = is_tensor_v<std::remove_cvref_t<X>> && !std::is_const_v<std::remove_reference_t<X>> &&
                        elementwise_operands<std::remove_cvref_t<X>, Y>;
}

template <class X, class Y> requires detail::writable_with<X, Y>
X operator+=(X&& x, const Y& y) { x.assign(add(x, y)); return std::forward<X>(x); }
template <class X, class Y> requires detail::writable_with<X, Y>
X operator-=(X&& x, const Y& y) { x.assign(sub(x, y)); return std::forward<X>(x); }
template <class X, class Y> requires detail::writable_with<X, Y>
X operator*=(X&& x, const Y& y) { x.assign(mul(x, y)); return std::forward<X>(x); }
template <class X, class Y> requires detail::writable_with<X, Y>
X operator/=(X&& x, const Y& y) { x.assign(div(x, y)); return std::forward<X>(x); }

}  // namespace tandem
