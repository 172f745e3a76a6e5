#pragma once
// Comparisons (to bool tensors), logical ops, where and clamp.

#include "tandem/detail/math.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem {
namespace op {

struct eq : detail::predicate_rule {
  static constexpr const char* name = "eq";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a == b; }
};
struct ne : detail::predicate_rule {
  static constexpr const char* name = "ne";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a != b; }
};
struct lt : detail::predicate_rule {
  static constexpr const char* name = "lt";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a < b; }
};
struct le : detail::predicate_rule {
  static constexpr const char* name = "le";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a <= b; }
};
struct gt : detail::predicate_rule {
  static constexpr const char* name = "gt";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a > b; }
};
struct ge : detail::predicate_rule {
  static constexpr const char* name = "ge";
  template <class V> TANDEM_HOST_DEVICE bool operator()(const V& a, const V& b) const { return a >= b; }
};
struct logical_and : detail::logical_rule {
  static constexpr const char* name = "logical_and";
  TANDEM_HOST_DEVICE bool operator()(bool a, bool b) const { return a && b; }
};
struct logical_or : detail::logical_rule {
  static constexpr const char* name = "logical_or";
  TANDEM_HOST_DEVICE bool operator()(bool a, bool b) const { return a || b; }
};
struct logical_xor : detail::logical_rule {
  static constexpr const char* name = "logical_xor";
  TANDEM_HOST_DEVICE bool operator()(bool a, bool b) const { return a != b; }
};
struct logical_not : detail::logical_rule {
  static constexpr const char* name = "logical_not";
  TANDEM_HOST_DEVICE bool operator()(bool a) const { return !a; }
};
// where(c, a, b): a where c holds, b elsewhere. The condition is computed as
// bool; the values in the promoted type of a and b.
struct where {
  static constexpr const char* name = "where";
  static constexpr bool vectorizable = false;
  template <class Cond, class... T>
  using compute = promote_t<T...>;
  template <class Cond, class... T>
  using result = promote_t<T...>;
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& c, const V& a, const V& b) const {
    return c != V(0) ? a : b;
  }
};
struct clamp : detail::same_type_rule {
  static constexpr const char* name = "clamp";
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& x, const V& low, const V& high) const {
    return detail::math::minimum(detail::math::maximum(x, low), high);
  }
};

}  // namespace op

template <class A, class B> requires detail::elementwise_operands<A, B>
auto eq(const A& a, const B& b) { return detail::map(op::eq{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto ne(const A& a, const B& b) { return detail::map(op::ne{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto lt(const A& a, const B& b) { return detail::map(op::lt{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto le(const A& a, const B& b) { return detail::map(op::le{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto gt(const A& a, const B& b) { return detail::map(op::gt{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto ge(const A& a, const B& b) { return detail::map(op::ge{}, a, b); }

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
auto logical_and(const A& a, const B& b) { return detail::map(op::logical_and{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto logical_or(const A& a, const B& b) { return detail::map(op::logical_or{}, a, b); }
template <class A, class B> requires detail::elementwise_operands<A, B>
auto logical_xor(const A& a, const B& b) { return detail::map(op::logical_xor{}, a, b); }
template <element T>
auto logical_not(const tensor<T>& x) { return detail::map(op::logical_not{}, x); }

// where(cond, a, b) with a and b tensors or scalars, all broadcast together.
template <class A, class B> requires detail::elementwise_operands<tensor<bool>, A, B>
auto where(const tensor<bool>& cond, const A& a, const B& b) { return detail::map(op::where{}, cond, a, b); }

// Each element limited to [low, high]; bounds are scalars or tensors.
template <element T, class L, class H> requires detail::elementwise_operands<tensor<T>, L, H>
auto clamp(const tensor<T>& x, const L& low, const H& high) { return detail::map(op::clamp{}, x, low, high); }

}  // namespace tandem
