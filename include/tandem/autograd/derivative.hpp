#pragma once
// Derivative rules and how to replace them. Each op's own rule is its member
// template derivative<I>(g, y, x...): the gradient with respect to input I,
// given the output's gradient g, the output y and the inputs x..., written
// with tandem ops (called unqualified, so that they also resolve for the
// symbolic values of static graphs). Specializing tandem::derivative<Op>
// replaces the rule of an existing op (MindSpore's bprop registration):
//
//   template <> struct tandem::derivative<tandem::relu_op> {
//     template <std::size_t I, class G, class Y, class X>
//     static auto gradient(const relu_op&, const G& g, const Y& y, const X& x) { ... }
//   };
//
// Like any specialization, it must be visible wherever the op is used.

#include <cstddef>

namespace tandem {

template <class Op>
struct derivative {
  static constexpr bool primary_template = true;
};

namespace detail {

template <class Op>
concept has_replaced_derivative = !requires { derivative<Op>::primary_template; };

// Whether an op, called with these values, has a rule for input 0.
template <class Op, class G, class... X>
concept has_derivative_rule = has_replaced_derivative<Op> || requires(const Op& op, const G& g, const X&... x) {
  op.template derivative<0>(g, g, x...);
};

template <std::size_t I, class Op, class G, class Y, class... X>
auto apply_rule(const Op& op, const G& g, const Y& y, const X&... x) {
  if constexpr (has_replaced_derivative<Op>) return derivative<Op>::template gradient<I>(op, g, y, x...);
  else return op.template derivative<I>(g, y, x...);
}

}  // namespace detail
}  // namespace tandem
