#pragma once
// Comparisons (to bool tensors), logical ops, where and clamp.

#include <cstddef>

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {
struct eq_op : detail::predicate_rule {
  static constexpr const char* name = "eq";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a == b; }
};
struct ne_op : detail::predicate_rule {
  static constexpr const char* name = "ne";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a != b; }
};
struct lt_op : detail::predicate_rule {
  static constexpr const char* name = "lt";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a < b; }
};
struct le_op : detail::predicate_rule {
  static constexpr const char* name = "le";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a <= b; }
};
struct gt_op : detail::predicate_rule {
  static constexpr const char* name = "gt";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a > b; }
};
struct ge_op : detail::predicate_rule {
  static constexpr const char* name = "ge";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a >= b; }
};
struct logical_and_op : detail::logical_rule {
  static constexpr const char* name = "logical_and";
  TANDEM_HOST_DEVICE bool operator()(bool a, bool b) const { return a && b; }
};
struct logical_or_op : detail::logical_rule {
  static constexpr const char* name = "logical_or";
  TANDEM_HOST_DEVICE bool operator()(bool a, bool b) const { return a || b; }
};
struct logical_xor_op : detail::logical_rule {
  static constexpr const char* name = "logical_xor";
  TANDEM_HOST_DEVICE bool operator()(bool a, bool b) const { return a != b; }
};
struct logical_not_op : detail::logical_rule {
  static constexpr const char* name = "logical_not";
  TANDEM_HOST_DEVICE bool operator()(bool a) const { return !a; }
};
// where(c, a, b): a where c holds, b elsewhere. The condition is computed as
// bool; the values in the promoted type of a and b.
struct where_op {
  static constexpr const char* name = "where";
  static constexpr bool vectorizable = false;
  template <class Cond, class... T>
  using compute = promote_t<T...>;
  template <class Cond, class... T>
  using result = promote_t<T...>;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& c, const V& a, const V& b) const {
    return c != V(0) ? a : b;
  }
  template <std::size_t I, class G, class Y, class C, class A, class B>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const C& c, const A&, const B&) const {
    if constexpr (I == 1) return where(c, g, 0);
    else return where(c, 0, g);
  }
};
// The gradient goes to x inside [low, high], to a bound where it binds.
struct clamp_op : detail::same_type_rule {
  static constexpr const char* name = "clamp";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x, const V& low, const V& high) const {
    return detail::math::minimum(detail::math::maximum(x, low), high);
  }
  template <std::size_t I, class G, class Y, class X, class L, class H>
  TANDEM_HOST_DEVICE auto derivative(const G& g, const Y&, const X& x, const L& low, const H& high) const {
    if constexpr (I == 0) return where(logical_and(x >= low, x <= high), g, 0);
    else if constexpr (I == 1) return where(x < low, g, 0);
    else return where(x > high, g, 0);
  }
};


template <class A, class B> requires detail::elementwise_operands<A, B>
auto eq(const A& a, const B& b) { return detail::map(eq_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto ne(const A& a, const B& b) { return detail::map(ne_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto lt(const A& a, const B& b) { return detail::map(lt_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto le(const A& a, const B& b) { return detail::map(le_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto gt(const A& a, const B& b) { return detail::map(gt_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto ge(const A& a, const B& b) { return detail::map(ge_op{}, a, b); }

template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator==(const A& a, const B& b) { return eq(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator!=(const A& a, const B& b) { return ne(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator<(const A& a, const B& b) { return lt(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator<=(const A& a, const B& b) { return le(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator>(const A& a, const B& b) { return gt(a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto operator>=(const A& a, const B& b) { return ge(a, b); }

template <class A, class B> requires detail::elementwise_operands<A, B>
auto logical_and(const A& a, const B& b) { return detail::map(logical_and_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto logical_or(const A& a, const B& b) { return detail::map(logical_or_op{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto logical_xor(const A& a, const B& b) { return detail::map(logical_xor_op{}, a, b); }
template <detail::unary_operand X>
auto logical_not(const X& x) { return detail::map(logical_not_op{}, x); }

// where(cond, a, b) with a and b tensors or scalars, all broadcast together.
template <detail::unary_operand Cond, class A, class B>
  requires std::is_same_v<typename Cond::value_type, bool> && detail::elementwise_operands<Cond, A, B>
auto where(const Cond& cond, const A& a, const B& b) { return detail::map(where_op{}, cond, a, b); }

// Each element limited to [low, high]; bounds are scalars or tensors.
template <detail::unary_operand X, class L, class H> requires detail::elementwise_operands<X, L, H>
auto clamp(const X& x, const L& low, const H& high) { return detail::map(clamp_op{}, x, low, high); }

}  // namespace tandem
