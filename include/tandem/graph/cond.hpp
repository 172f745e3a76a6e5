#pragma once
// cond(pred, then_fn, else_fn, x...): then_fn(x...) where the boolean
// scalar pred holds, else_fn(x...) where not: MindSpore graph mode's `if` on
// a tensor, JAX's lax.cond. switch_case(index, std::tuple{fn...}, x...):
// the index-th function of the tuple on x..., for an int32 or int64 scalar
// index (JAX's lax.switch; an index out of range throws). Inside a static
// graph every branch is a static graph of its own, traced once with the
// graph; only the taken one runs, and gradients flow through it. On tensors
// (and with jit disabled) the taken branch runs as a static graph called
// eagerly, with the same results.
//
// The branches must return the same number of values, of the same element
// types (checked at compile time) and of the same shapes (checked at run
// time: the first call with each signature of operands runs the branches
// not taken as well, without gradients, and compares).

#include <cstdint>
#include <memory>
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

// Which branch a predicate or an index picks, of `count`.
template <class T>
std::size_t branch_index(const char* construct, const tensor<T>& selector, std::size_t count) {
  if constexpr (std::is_same_v<T, bool>) {
    require_one_value(construct, "the predicate", selector.shape());
    return selector.item() ? 0 : 1;
  } else {
    const std::int64_t index = integer_value(construct, "the index", any_tensor(selector));
    if (index < 0 || index >= static_cast<std::int64_t>(count))
      throw value_error(std::string("tandem::") + construct + ": the index " + std::to_string(index) +
                        " picks none of the " + std::to_string(count) + " branches");
    return static_cast<std::size_t>(index);
  }
}
inline std::size_t branch_index(const char* construct, const any_tensor& selector, std::size_t count) {
  return std::visit([&](const auto& x) { return branch_index(construct, x, count); }, selector);
}

// Compares the outputs of two branches, shape by shape.
inline void require_same_shapes(const char* construct, const std::vector<any_tensor>& taken, std::size_t taken_index,
                                const std::vector<any_tensor>& other, std::size_t other_index, bool boolean) {
  auto branch = [&](std::size_t k) {
    if (boolean) return std::string(k == 0 ? "the true branch" : "the false branch");
    return "branch " + std::to_string(k);
  };
  for (std::size_t k = 0; k < taken.size(); ++k) {
    const shape& a = shape_of(taken[k]);
    const shape& b = shape_of(other[k]);
    if (a != b)
      throw shape_error(std::string("tandem::") + construct + ": the branches return different shapes for output " +
                        std::to_string(k) + ": " + to_string(a) + " from " + branch(taken_index) + ", " +
                        to_string(b) + " from " + branch(other_index));
  }
}

// Whether no call of the construct `Tag` (a program point and its operand
// types) had operands of this signature before. A hot loop calls with one
// signature over and over: each thread compares with the last one it saw
// before it builds one and asks the shared cache, which takes a lock.
template <class Tag, class... X>
bool first_call_with(const X&... operands) {
  static plan_cache checked;
  static thread_local signature last;
  if (is_signature_of(last, operands...)) return false;
  last = signature_of(operands...);
  if (checked.known(last)) return false;
  checked.insert(last);
  return true;
}

template <bool Boolean, class Branches, class... T>
struct branch_construct;

template <bool Boolean, class... F, class... T>
struct branch_construct<Boolean, std::tuple<F...>, T...> {
  static constexpr const char* name = Boolean ? "cond" : "switch_case";
  std::tuple<subgraph<F, T...>...> branches;
  static constexpr bool reads_captured = (subgraph<F, T...>::reads_captured || ...);

  static construct_counters& counters() {
    static construct_counters counts(name, [] {
      std::vector<std::string> names;
      for (std::size_t k = 0; k < sizeof...(F); ++k)
        names.push_back(Boolean ? (k == 0 ? "true branch" : "false branch") : "branch " + std::to_string(k));
      return names;
    }());
    return counts;
  }
  template <class Visit>
  static void for_each_subgraph_root(Visit&& visit) {
    (visit(std::type_identity<typename subgraph<F, T...>::root_type>{}), ...);
  }
  // Adds the sub-graphs to `out` (graph/dump.hpp).
  template <class Out>
  void describe(Out& out) const {
    const auto& names = counters().subgraphs;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (out.push_back(describe_subgraph(names[K], std::get<K>(branches).root())), ...);
    }(std::index_sequence_for<F...>{});
  }

  // operands: the predicate or index, then the branches' operands.
  // A run a backward may follow; one no backward follows calls forward().
  control_run run(const std::vector<any_tensor>& operands, bool) const {
    const std::size_t taken = branch_index(name, operands[0], sizeof...(F));
    counters().ran(taken);
    std::unique_ptr<subgraph_run> branch = run_branch(taken, operands);
    control_run result{branch->outputs(), {}, std::nullopt};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      check_branches_agree(taken, result.outputs, std::get<tensor<T>>(operands[1 + I])...);
    }(std::index_sequence_for<T...>{});
    branch->captured(result.captured);
    result.backward = [branch = std::move(branch)](const std::vector<std::optional<any_tensor>>& seeds,
                                                   keyed_gradients& captured) {
      std::vector<std::optional<any_tensor>> gradients{std::nullopt};
      for (auto& g : branch->backward(seeds, captured)) gradients.push_back(std::move(g));
      return gradients;
    };
    return result;
  }

  // The same on a forward-only run, on typed tensors: the executor runs
  // this instead of run() (graph/execute/control.hpp).
  static constexpr bool forward_only_typed = true;
  template <class S>
  auto forward(const tensor<S>& selector, const tensor<T>&... x) const {
    const std::size_t taken = branch_index(name, selector, sizeof...(F));
    counters().ran(taken);
    auto outputs = evaluate_branch(taken, x...);
    check_branches_agree(taken, outputs, x...);
    return outputs;
  }

  // On the first call with these operands' signature, the branches not
  // taken run too, without gradients, and must give the taken one's shapes.
  template <class Outputs>
  void check_branches_agree(std::size_t taken, const Outputs& outputs, const tensor<T>&... x) const {
    if (!first_call_with<branch_construct>(x...)) return;
    no_grad plain;
    std::vector<any_tensor> values;
    if constexpr (std::is_same_v<Outputs, std::vector<any_tensor>>) values = outputs;
    else values = any_tensors(outputs);
    for (std::size_t other = 0; other < sizeof...(F); ++other)
      if (other != taken) require_same_shapes(name, values, taken, any_tensors(evaluate_branch(other, x...)), other, Boolean);
  }
  auto evaluate_branch(std::size_t index, const tensor<T>&... x) const {
    std::optional<decltype(std::get<0>(branches).evaluate(x...))> outputs;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((K == index ? (outputs.emplace(std::get<K>(branches).evaluate(x...)), 0) : 0), ...);
    }(std::index_sequence_for<F...>{});
    return std::move(*outputs);
  }

  // The branch `index` on the operands after the predicate, kept for a backward.
  std::unique_ptr<subgraph_run> run_branch(std::size_t index, const std::vector<any_tensor>& operands) const {
    std::unique_ptr<subgraph_run> run;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((K == index ? (run = std::get<K>(branches).run(operands, true, 1), 0) : 0), ...);
    }(std::index_sequence_for<F...>{});
    return run;
  }
};

template <class F, class... X>
using branch_outputs = typename subgraph<F, typename X::value_type...>::output_types;

// The branches on tensors: the taken one as a static graph, and, on the
// first call with these operands' shapes, the others to compare with.
template <class Tag, class... F, class... X>
auto run_branches_eagerly(const char* name, std::size_t taken, bool boolean, const std::tuple<F...>& fns,
                          const X&... x) {
  auto call = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    return as_tuple(jit(std::get<K>(fns))(x...));
  };
  using result_type = decltype(call(std::integral_constant<std::size_t, 0>{}));
  auto collect = [&](std::size_t index) {
    std::vector<any_tensor> values;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((K == index ? (values = any_tensors(call(std::integral_constant<std::size_t, K>{})), 0) : 0), ...);
    }(std::index_sequence_for<F...>{});
    return values;
  };
  std::optional<result_type> result;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((K == taken ? (result.emplace(call(std::integral_constant<std::size_t, K>{})), 0) : 0), ...);
  }(std::index_sequence_for<F...>{});
  if (first_call_with<Tag>(x...)) {
    no_grad plain;
    const std::vector<any_tensor> values = any_tensors(*result);
    for (std::size_t other = 0; other < sizeof...(F); ++other)
      if (other != taken) require_same_shapes(name, values, taken, collect(other), other, boolean);
  }
  return single_or_tuple(std::move(*result));
}

template <class S, class... F, class... X>
auto branch_on(const char* name, const S& selector, const std::tuple<F...>& fns, const X&... x) {
  static_assert(is_tensor_v<S> || is_symbolic_v<S>,
                "tandem::cond: the predicate (switch_case: the index) must be a tensor or a value of the static "
                "graph being traced");
  static_assert(((is_tensor_v<X> || is_symbolic_v<X>) && ...),
                "tandem::cond: every operand must be a tensor or a value of the static graph being traced");
  using first = std::tuple_element_t<0, std::tuple<F...>>;
  using outputs = branch_outputs<first, X...>;
  static_assert(((std::tuple_size_v<branch_outputs<F, X...>> == std::tuple_size_v<outputs>) && ...),
                "tandem::cond: the branches must return the same number of values");
  static_assert((std::is_same_v<branch_outputs<F, X...>, outputs> && ...),
                "tandem::cond: the branches must return values of the same element types");
  constexpr bool boolean = std::is_same_v<typename S::value_type, bool>;
  using construct = branch_construct<boolean, std::tuple<F...>, typename X::value_type...>;
  if constexpr (any_symbolic<S, X...>) {
    construct c{std::apply(
                          [&](const F&... f) {
                            return std::tuple<subgraph<F, typename X::value_type...>...>(
                                subgraph<F, typename X::value_type...>(name, f)...);
                          },
                          fns)};
    return single_or_tuple(std::apply(
        [&]<class... Out>(Out...) {
          return make_control<Out...>(name, std::move(c), as_operand(selector), as_operand(x)...);
        },
        outputs{}));
  } else {
    const std::size_t taken = branch_index(name, selector, sizeof...(F));
    return run_branches_eagerly<construct>(name, taken, boolean, fns, x...);
  }
}

}  // namespace detail

template <class P, class Then, class Else, class... X>
auto cond(const P& pred, Then then_fn, Else else_fn, const X&... x) {
  static_assert(std::is_same_v<typename P::value_type, bool>, "tandem::cond: the predicate must be a bool scalar");
  return detail::branch_on("cond", pred, std::tuple<Then, Else>(std::move(then_fn), std::move(else_fn)), x...);
}

template <class I, class... F, class... X>
auto switch_case(const I& index, std::tuple<F...> branches, const X&... x) {
  static_assert(sizeof...(F) > 0, "tandem::switch_case: needs at least one branch");
  static_assert(std::is_same_v<typename I::value_type, std::int32_t> ||
                    std::is_same_v<typename I::value_type, std::int64_t>,
                "tandem::switch_case: the index must be an int32 or int64 scalar");
  return detail::branch_on("switch_case", index, branches, x...);
}

}  // namespace tandem
