#pragma once
// cond(pred, then_fn, else_fn, x...): then_fn(x...) where the boolean
// scalar pred holds, else_fn(x...): MindSpore graph mode's `if` on a tensor,
// JAX's lax.cond. Inside a static graph both branches are static graphs of
// their own, traced once with the graph; only the taken one runs, and
// gradients flow through it. On tensors (and with jit disabled) the taken
// branch runs as a static graph called eagerly, with the same results.
//
// The branches must return the same number of values, of the same element
// types (checked at compile time) and of the same shapes (checked at run
// time: the first call with each signature of operands runs the branch not
// taken as well, without gradients, and compares).

#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/graph/control.hpp"
#include "tandem/graph/plan.hpp"
#include "tandem/graph/static_graph.hpp"

namespace tandem {
namespace detail {

template <class X>
using operand_value_t = typename X::value_type;

template <class F, class... T>
using traced_result_types = typename subgraph<F, T...>::output_types;

// The signature of a construct's operands, as the plan cache keys calls.
inline signature signature_of_operands(const std::vector<any_tensor>& operands) {
  signature s;
  for (const any_tensor& t : operands) std::visit([&](const auto& x) { add_argument(s, x); }, t);
  return s;
}

// Compares the outputs of the two branches, shape by shape.
inline void require_same_shapes(const char* construct, const std::vector<any_tensor>& taken,
                                const std::vector<any_tensor>& other, bool then_taken) {
  for (std::size_t k = 0; k < taken.size(); ++k) {
    const shape& a = shape_of(taken[k]);
    const shape& b = shape_of(other[k]);
    if (a != b)
      throw shape_error(std::string("tandem::") + construct + ": the branches return different shapes for output " +
                        std::to_string(k) + ": " + to_string(then_taken ? a : b) + " from the true branch, " +
                        to_string(then_taken ? b : a) + " from the false branch");
  }
}

template <class Then, class Else, class... T>
struct cond_construct {
  subgraph<Then, T...> then_graph;
  subgraph<Else, T...> else_graph;

  control_run run(const std::vector<any_tensor>& operands, bool for_backward) const {
    const tensor<bool>& pred = std::get<tensor<bool>>(operands[0]);
    require_scalar_predicate("cond", pred.shape());
    std::vector<any_tensor> inputs(operands.begin() + 1, operands.end());
    const bool taken = pred.item();
    std::shared_ptr<subgraph_run> branch =
        taken ? then_graph.run(inputs, for_backward) : else_graph.run(inputs, for_backward);
    if (first_call_with(signature_of_operands(inputs))) {
      no_grad plain;
      auto other = taken ? else_graph.run(inputs, false) : then_graph.run(inputs, false);
      require_same_shapes("cond", branch->outputs(), other->outputs(), taken);
    }
    control_run result{branch->outputs(), {}, std::nullopt};
    branch->captured(result.captured);
    if (for_backward)
      result.backward = [branch](const std::vector<std::optional<any_tensor>>& seeds, keyed_gradients& captured) {
        std::vector<std::optional<any_tensor>> gradients{std::nullopt};
        for (auto& g : branch->backward(seeds, captured)) gradients.push_back(std::move(g));
        return gradients;
      };
    return result;
  }

  // Whether no call of this cond (this program point and operand types) had
  // these operand shapes before.
  static bool first_call_with(const signature& s) {
    static plan_cache checked;
    if (checked.known(s)) return false;
    checked.insert(s);
    return true;
  }
};

template <class Then, class Else, class... X>
constexpr void check_branches() {
  using then_types = traced_result_types<Then, operand_value_t<X>...>;
  using else_types = traced_result_types<Else, operand_value_t<X>...>;
  static_assert(std::tuple_size_v<then_types> == std::tuple_size_v<else_types>,
                "tandem::cond: the two branches must return the same number of values");
  static_assert(std::is_same_v<then_types, else_types>,
                "tandem::cond: the two branches must return values of the same element types");
}

}  // namespace detail

template <class P, class Then, class Else, class... X>
auto cond(const P& pred, Then then_fn, Else else_fn, const X&... x) {
  static_assert(is_tensor_v<P> || is_symbolic_v<P>,
                "tandem::cond: the predicate must be a bool tensor or a bool value of the static graph being traced");
  static_assert(((is_tensor_v<X> || is_symbolic_v<X>) && ...),
                "tandem::cond: every operand must be a tensor or a value of the static graph being traced");
  static_assert(std::is_same_v<typename P::value_type, bool>, "tandem::cond: the predicate must be a bool scalar");
  detail::check_branches<Then, Else, X...>();
  using construct = detail::cond_construct<Then, Else, typename X::value_type...>;
  using outputs = detail::traced_result_types<Then, typename X::value_type...>;
  if constexpr (detail::any_symbolic<P, X...>) {
    construct c{detail::subgraph<Then, typename X::value_type...>("cond", then_fn),
                detail::subgraph<Else, typename X::value_type...>("cond", else_fn)};
    return detail::single_or_tuple(std::apply(
        [&]<class... Out>(Out...) {
          return detail::make_control<Out...>("cond", std::move(c), detail::as_symbol<void>(pred),
                                              detail::as_symbol<void>(x)...);
        },
        outputs{}));
  } else {
    detail::require_scalar_predicate("cond", pred.shape());
    const bool taken = pred.item();
    auto result = taken ? detail::as_tuple(jit(then_fn)(x...)) : detail::as_tuple(jit(else_fn)(x...));
    if (construct::first_call_with(detail::signature_of(x...))) {
      no_grad plain;
      auto other = taken ? detail::as_tuple(jit(else_fn)(x...)) : detail::as_tuple(jit(then_fn)(x...));
      std::vector<detail::any_tensor> a, b;
      std::apply([&](const auto&... t) { (a.push_back(detail::any_tensor(t)), ...); }, result);
      std::apply([&](const auto&... t) { (b.push_back(detail::any_tensor(t)), ...); }, other);
      detail::require_same_shapes("cond", a, b, taken);
    }
    return detail::single_or_tuple(std::move(result));
  }
}

}  // namespace tandem
