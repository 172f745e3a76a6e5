#pragma once
// + - * / neg pow maximum minimum. Each op is one struct in tandem::op: its
// name, its type rule, its element math (written once for scalars and SIMD
// batches) and its derivative rule derivative<I>(g, y, x...), the gradient
// for input I written with tandem ops. The free functions below apply the
// ops to tensors and scalars.

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {
struct add_op : detail::same_type_rule {
  static constexpr const char* name = "add";
  static constexpr bool saves_inputs = false;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a + b; }
  template <std::size_t I, class G, class Y, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const A&, const B&) const { return g; }
};
struct sub_op : detail::same_type_rule {
  static constexpr const char* name = "sub";
  static constexpr bool saves_inputs = false;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a - b; }
  template <std::size_t I, class G, class Y, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const A&, const B&) const {
    if constexpr (I == 0) return g;
    else return -g;
  }
};
struct mul_op : detail::same_type_rule {
  static constexpr const char* name = "mul";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a * b; }
  template <std::size_t I, class G, class Y, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const A& a, const B& b) const {
    if constexpr (I == 0) return g * b;
    else return g * a;
  }
};
// True division: integer operands divide as float, as in NumPy and PyTorch.
struct div_op : detail::floating_rule {
  static constexpr const char* name = "div";
  static constexpr bool saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a / b; }
  template <std::size_t I, class G, class Y, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const A&, const B& b) const {
    if constexpr (I == 0) return g / b;
    else return -(g * y / b);
  }
};
struct neg_op : detail::same_type_rule {
  static constexpr const char* name = "neg";
  static constexpr bool saves_inputs = false;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a) const { return -a; }
  template <std::size_t I, class G, class Y, class X>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X&) const { return -g; }
};
struct pow_op : detail::floating_rule {
  static constexpr const char* name = "pow";
  static constexpr int instructions_per_batch = 2 * detail::transcendental_instructions;
  static constexpr bool saves_output = true;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::pow(a, b); }
  template <std::size_t I, class G, class Y, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y& y, const A& a, const B& b) const {
    if constexpr (I == 0) return g * b * pow(a, b - 1);
    else if constexpr (std::is_arithmetic_v<A>) return g * y * std::log(a);
    else return g * y * log(a);
  }
};
// Where the operands tie, each gets half of the gradient.
struct maximum_op : detail::same_type_rule {
  static constexpr const char* name = "maximum";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::maximum(a, b); }
  template <std::size_t I, class G, class Y, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const A& a, const B& b) const {
    if constexpr (I == 0) return where(a > b, g, where(a == b, g * 0.5, 0));
    else return where(b > a, g, where(a == b, g * 0.5, 0));
  }
};
struct minimum_op : detail::same_type_rule {
  static constexpr const char* name = "minimum";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::minimum(a, b); }
  template <std::size_t I, class G, class Y, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const A& a, const B& b) const {
    if constexpr (I == 0) return where(a < b, g, where(a == b, g * 0.5, 0));
    else return where(b < a, g, where(a == b, g * 0.5, 0));
  }
};


namespace detail {
template <class... X>
inline constexpr bool any_bool_tensor = (std::is_same_v<X, tensor<bool>> || ...);
}

template <class A, class B> requires detail::elementwise_operands<A, B>
auto add(const A& a, const B& b) { return detail::map(add_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto sub(const A& a, const B& b) {
  static_assert(!(detail::any_bool_tensor<A> && detail::any_bool_tensor<B>),
                "tandem::sub: bool tensors cannot be subtracted; use logical_xor");
  return detail::map(sub_op{}, a, b);
}
template <class A, class B> requires detail::elementwise_operands<A, B>
auto mul(const A& a, const B& b) { return detail::map(mul_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto div(const A& a, const B& b) { return detail::map(div_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto pow(const A& a, const B& b) { return detail::map(pow_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto maximum(const A& a, const B& b) { return detail::map(maximum_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto minimum(const A& a, const B& b) { return detail::map(minimum_op{}, a, b); }

template <detail::unary_operand X>
auto neg(const X& x) {
  static_assert(!std::is_same_v<typename X::value_type, bool>,
                "tandem::neg: a bool tensor has no negation; use logical_not");
  return detail::map(neg_op{}, x);
}

template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator+(const A& a, const B& b) { return add(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator-(const A& a, const B& b) { return sub(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator*(const A& a, const B& b) { return mul(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator/(const A& a, const B& b) { return div(a, b); }
template <detail::unary_operand X>
auto operator-(const X& x) { return neg(x); }

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
