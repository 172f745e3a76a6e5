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

#include <array>
#include <cstddef>
#include <string_view>

#include "tandem/core/config.hpp"

// The compiler's name of a type. Outside namespace tandem: GCC leaves out
// the namespaces a function's name shares with the type.
namespace tandem_type_name {
template <class T>
constexpr std::string_view of() {
  std::string_view function = __PRETTY_FUNCTION__;
  std::size_t at = function.find("T = ");
  return at == std::string_view::npos ? std::string_view{} : function.substr(at + 4);
}
}  // namespace tandem_type_name

namespace tandem {

template <class Op>
struct derivative {
  static constexpr bool primary_template = true;
};

namespace detail {

template <class Op>
concept has_replaced_derivative = !requires { derivative<Op>::primary_template; };

// Whether tandem defines Op (in tandem or tandem::detail): the ops whose
// built-in rules the compiled library (tandem::compiled) has instantiated.
// Read from the type's name, since a user's op often derives from tandem's
// type rules, which makes tandem an associated namespace of it.
template <class Op>
constexpr bool defined_by_tandem() {
  return tandem_type_name::of<Op>().starts_with("tandem::");
}

// Whether an op, called with these values, has a rule for input 0.
template <class Op, class G, class... X>
concept has_derivative_rule = has_replaced_derivative<Op> || requires(const Op& op, const G& g, const X&... x) {
  op.template derivative<0>(g, g, x...);
};

// Whether an op gives every input's gradient in one call,
// gradients(wanted, g, y, x...) returning a tuple (an input not wanted gets
// an empty tensor): for ops whose gradients share their work, as batch
// norm's share its sums over the batch. The op keeps derivative<I> too.
template <class Op, class G, class... X>
concept has_joint_gradients = requires(const Op& op, const std::array<bool, sizeof...(X)>& wanted, const G& g,
                                       const X&... x) { op.gradients(wanted, g, g, x...); };

// Which rule an op's gradient comes from. It is a template argument of
// everything that applies a rule (apply_rule, op_node), so that a translation
// unit that replaces an op's rule and one that does not (the compiled
// library's, say) instantiate two functions with two names, instead of one
// name that the linker would pick either body for.
enum class rule { built_in, replaced };

template <class Op>
inline constexpr rule rule_of = has_replaced_derivative<Op> ? rule::replaced : rule::built_in;

// A program that links tandem::compiled runs tandem's ops through compiled
// code built with their built-in rules (the eager ops, their nodes, and the
// ops those rules call), so it may replace the rules of its own ops only.
// Checked where a program's own code first sees the op: its eager entry
// (detail::map) and record.
template <class Op>
constexpr void require_rule_of_compiled_library() {
#if defined(TANDEM_COMPILED_LIBRARY)
  static_assert(rule_of<Op> == rule::built_in || !defined_by_tandem<Op>(),
                "tandem::derivative<Op>: a program that links tandem::compiled cannot replace the rule of one "
                "of tandem's ops, whose compiled nodes use the built-in rule; link tandem::tandem instead");
#endif
}

template <std::size_t I, class Op, rule Rule = rule_of<Op>, class G, class Y, class... X>
TANDEM_HOST_DEVICE auto apply_rule(const Op& op, const G& g, const Y& y, const X&... x) {
  if constexpr (Rule == rule::replaced) return derivative<Op>::template gradient<I>(op, g, y, x...);
  else return op.template derivative<I>(g, y, x...);
}

}  // namespace detail
}  // namespace tandem
