#pragma once
// How tandem ops build graph nodes when given symbolic values. Elementwise
// ops arrive through symbolic_map (called by the same tandem::add, exp,
// where... that run eagerly on tensors); every other op goes through
// symbolic_apply with a function that runs its eager kernel later, on the
// materialized operands.

#include <tuple>
#include <type_traits>
#include <utility>

#include "tandem/graph/symbol.hpp"
#include "tandem/ops/elementwise/map.hpp"

namespace tandem::detail {

// An operand of a traced op as a symbolic value: scalars become constant
// nodes in the kind of the operands beside them (sym<float> * 2.0 stays
// float), tensors become captured inputs.
template <class Base, class X>
auto as_symbol(const X& x) {
  if constexpr (is_symbolic_v<X>) return x;
  else if constexpr (is_tensor_v<X>) {
    using T = typename X::value_type;
    return make_sym<captured_node<T>>(static_cast<const tensor<T>&>(x));
  } else {
    using T = with_scalar<Base, X>;
    return make_sym<constant_node<T>>(static_cast<T>(x));
  }
}

template <class Op, class... X>
auto symbolic_map(const Op& op, const X&... x) {
  static_assert(std::is_empty_v<Op>,
                "tandem::jit: an elementwise op used inside a static graph must be a stateless struct; pass its "
                "runtime values as scalar operands instead");
  using base = typename tensors_promoted<X...>::type;
  using node = map_node<Op, typename decltype(as_symbol<base>(x))::node_type...>;
  return make_sym<node>(op, make_operands(as_symbol<base>(x)...));
}

// A node for a non-elementwise op: `fn(tensor<C>...)` computes it eagerly.
template <class T, class Fn, class... N>
auto symbolic_apply(const char* name, Fn fn, const sym<N>&... x) {
  return make_sym<apply_node<Fn, T, N...>>(std::move(fn), name, make_operands(x...));
}

}  // namespace tandem::detail
