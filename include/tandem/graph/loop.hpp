#pragma once
// Loops whose trip count is known only at run time, over a state of
// tensors: fori_loop(lo, hi, body, state...) runs state = body(i, state...)
// for i from lo to hi, i a scalar int64 tensor; while_loop(cond_fn, body,
// state...) runs state = body(state...) while cond_fn(state...) holds. They
// return the final state (one tensor, or a tuple).
//
// Inside a static graph the body is a static graph of its own, traced once
// with the graph and run fused on every iteration, never traced again. A
// fori_loop is differentiable: each iteration's run is kept (its residuals:
// memory grows with the trip count) and the backward runs the iterations'
// fused backwards in reverse. A while_loop is not: its trip count depends
// on the values, so it refuses inputs that require a gradient. On tensors
// (and with jit disabled) the body runs as a static graph called eagerly,
// with the same results.
//
// The body must return a state of the types it was given (checked at
// compile time) and of the same shapes (checked on every iteration).

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/creation.hpp"
#include "tandem/core/error.hpp"
#include "tandem/graph/control.hpp"
#include "tandem/graph/static_graph.hpp"

namespace tandem {
namespace detail {

inline void require_state_shapes(const char* construct, const std::vector<any_tensor>& before,
                                 const std::vector<any_tensor>& after) {
  for (std::size_t k = 0; k < before.size(); ++k)
    if (shape_of(before[k]) != shape_of(after[k]))
      throw shape_error(std::string("tandem::") + construct + ": the body changed the shape of state " +
                        std::to_string(k) + " from " + to_string(shape_of(before[k])) + " to " +
                        to_string(shape_of(after[k])));
}

template <class Body, class... T>
struct fori_construct {
  using body_graph = subgraph<Body, std::int64_t, T...>;
  // Shared with the backward, which runs it again where the body recomputes.
  std::shared_ptr<const body_graph> body;
  static constexpr bool reads_captured = body_graph::reads_captured;
  static constexpr bool recomputes = is_recomputed<Body>;

  static construct_counters& counters() {
    static construct_counters counts("fori_loop", {"body"});
    return counts;
  }
  template <class Visit>
  static void for_each_subgraph_root(Visit&& visit) {
    visit(std::type_identity<typename subgraph<Body, std::int64_t, T...>::root_type>{});
  }
  // Adds the sub-graphs to `out` (graph/dump.hpp).
  template <class Out>
  void describe(Out& out) const {
    out.push_back(describe_subgraph("body", body->root()));
  }

  // The final state of a run no backward will follow: each iteration's
  // executor on the stack, nothing kept.
  std::vector<any_tensor> forward_only(std::int64_t lo, std::int64_t hi, std::vector<any_tensor> state) const {
    std::vector<any_tensor> inputs(state.size() + 1);
    for (std::int64_t i = lo; i < hi; ++i) {
      inputs[0] = full<std::int64_t>({}, i);
      std::copy(state.begin(), state.end(), inputs.begin() + 1);
      std::vector<any_tensor> next = body->evaluate(inputs);
      counters().ran(0);
      require_state_shapes("fori_loop", state, next);
      state = std::move(next);
    }
    return state;
  }

  // operands: lo, hi, then the state.
  control_run run(const std::vector<any_tensor>& operands, bool for_backward) const {
    const std::int64_t lo = integer_value("fori_loop", "a loop bound", operands[0]);
    const std::int64_t hi = integer_value("fori_loop", "a loop bound", operands[1]);
    std::vector<any_tensor> state(operands.begin() + 2, operands.end());
    if (!for_backward) return {forward_only(lo, hi, std::move(state)), {}, std::nullopt};
    std::vector<kept_iteration> iterations;
    control_run result{{}, {}, std::nullopt};
    // Only a state a gradient can reach requires one: from the first
    // iteration on which anything did.
    bool state_needs = false;
    for (std::int64_t i = lo; i < hi; ++i) {
      std::vector<any_tensor> inputs{any_tensor(full<std::int64_t>({}, i))};
      for (const any_tensor& s : state) inputs.push_back(i == lo ? s : leaf_for(s, for_backward && state_needs));
      std::unique_ptr<subgraph_run> step = body->run(inputs, for_backward && !recomputes);
      counters().ran(0);
      if (i == lo) step->captured(result.captured);
      state_needs = state_needs || any_requires_gradient(inputs, result.captured);
      require_state_shapes("fori_loop", state, step->outputs());
      state = for_backward && !recomputes ? step->outputs() : step->take_outputs();
      if (for_backward && recomputes) iterations.emplace_back(std::move(inputs));
      else if (for_backward) iterations.emplace_back(std::move(step));
    }
    result.outputs = state;
    if (for_backward)
      result.backward = [iterations = std::move(iterations), body = body](
                            const std::vector<std::optional<any_tensor>>& seeds, keyed_gradients& captured) mutable {
        std::vector<std::optional<any_tensor>> state_gradients = seeds;
        for (std::size_t k = iterations.size(); k-- > 0;) {
          keyed_gradients weights;
          // A graph's fused backward runs once: each iteration's residuals go
          // as soon as it is done.
          std::vector<std::optional<any_tensor>> inputs = iterations[k].take(*body)->backward(state_gradients, weights);
          merge_gradients(captured, std::move(weights));
          state_gradients.assign(inputs.begin() + 1, inputs.end());
        }
        std::vector<std::optional<any_tensor>> gradients{std::nullopt, std::nullopt};
        for (auto& g : state_gradients) gradients.push_back(std::move(g));
        return gradients;
      };
    return result;
  }
};

template <class Cond, class Body, class... T>
struct while_construct {
  subgraph<Cond, T...> condition;
  subgraph<Body, T...> body;
  static constexpr bool reads_captured =
      subgraph<Cond, T...>::reads_captured || subgraph<Body, T...>::reads_captured;

  static construct_counters& counters() {
    static construct_counters counts("while_loop", {"condition", "body"});
    return counts;
  }
  template <class Visit>
  static void for_each_subgraph_root(Visit&& visit) {
    visit(std::type_identity<typename subgraph<Cond, T...>::root_type>{});
    visit(std::type_identity<typename subgraph<Body, T...>::root_type>{});
  }
  // Adds the sub-graphs to `out` (graph/dump.hpp).
  template <class Out>
  void describe(Out& out) const {
    out.push_back(describe_subgraph("condition", condition.root()));
    out.push_back(describe_subgraph("body", body.root()));
  }

  control_run run(const std::vector<any_tensor>& operands, bool for_backward) const {
    std::vector<any_tensor> state = operands;
    control_run result{{}, {}, std::nullopt};
    auto refuse_gradients = [&](const subgraph_run& run) {
      if (!for_backward) return;
      keyed_gradients captured;
      run.captured(captured);
      bool any = false;
      for (const auto& [key, value] : captured)
        std::visit([&](const auto& x) { any = any || x.requires_grad(); }, value);
      for (const auto& s : operands) std::visit([&](const auto& x) { any = any || x.requires_grad(); }, s);
      if (any)
        throw error(
            "tandem::while_loop: has no derivative (its trip count depends on the values), but an input or a "
            "tensor its body uses requires a gradient; use fori_loop with a bound, or run it under no_grad");
    };
    while (true) {
      auto test = condition.run(state, false);
      counters().ran(0);
      refuse_gradients(*test);
      const tensor<bool>& holds = std::get<tensor<bool>>(test->outputs()[0]);
      require_one_value("while_loop", "the condition", holds.shape());
      if (!holds.item()) break;
      auto step = body.run(state, false);
      counters().ran(1);
      refuse_gradients(*step);
      require_state_shapes("while_loop", state, step->outputs());
      state = step->outputs();
    }
    result.outputs = state;
    return result;
  }
};

}  // namespace detail

// A loop body (fori_loop, scan) whose backward runs each iteration's
// forward again instead of keeping its residuals from the forward: memory
// per iteration is its inputs, for the cost of a second forward. Inside a
// static graph; on tensors the body runs as before (eager autograd keeps
// what it keeps).
template <class F>
auto recompute(F body) {
  return detail::recomputed<F>{std::move(body)};
}

template <class Lo, class Hi, class Body, class... X>
auto fori_loop(const Lo& lo, const Hi& hi, Body body, const X&... state) {
  static_assert(sizeof...(X) > 0, "tandem::fori_loop: the loop needs a state of one tensor or more");
  static_assert(((is_tensor_v<X> || is_symbolic_v<X>) && ...),
                "tandem::fori_loop: every state value must be a tensor or a value of the static graph being traced");
  using construct = detail::fori_construct<Body, typename X::value_type...>;
  static_assert(std::is_same_v<typename detail::subgraph<Body, std::int64_t, typename X::value_type...>::output_types,
                               std::tuple<typename X::value_type...>>,
                "tandem::fori_loop: the body must return the state it is given: as many values, of the same "
                "element types");
  auto bound = [](const auto& b) {
    if constexpr (std::is_integral_v<std::decay_t<decltype(b)>>) return full<std::int64_t>({}, static_cast<std::int64_t>(b));
    else return b;
  };
  if constexpr (detail::any_symbolic<Lo, Hi, X...>) {
    using body_graph = typename construct::body_graph;
    construct c{std::shared_ptr<const body_graph>(new body_graph("fori_loop", body))};
    return detail::single_or_tuple(detail::make_control<typename X::value_type...>(
        "fori_loop", std::move(c), detail::as_operand(bound(lo)), detail::as_operand(bound(hi)),
        detail::as_operand(state)...));
  } else {
    const std::int64_t first = detail::integer_value("fori_loop", "a loop bound", detail::any_tensor(bound(lo)));
    const std::int64_t last = detail::integer_value("fori_loop", "a loop bound", detail::any_tensor(bound(hi)));
    auto graph = jit(std::move(body));
    std::tuple<tensor<typename X::value_type>...> current{state...};
    for (std::int64_t i = first; i < last; ++i) {
      auto next = detail::as_tuple(
          std::apply([&](const auto&... s) { return graph(full<std::int64_t>({}, i), s...); }, current));
      detail::require_state_shapes("fori_loop", detail::any_tensors(current), detail::any_tensors(next));
      current = std::move(next);
    }
    return detail::single_or_tuple(std::move(current));
  }
}

template <class Cond, class Body, class... X>
auto while_loop(Cond cond_fn, Body body, const X&... state) {
  static_assert(sizeof...(X) > 0, "tandem::while_loop: the loop needs a state of one tensor or more");
  static_assert(((is_tensor_v<X> || is_symbolic_v<X>) && ...),
                "tandem::while_loop: every state value must be a tensor or a value of the static graph being traced");
  static_assert(std::is_same_v<typename detail::subgraph<Cond, typename X::value_type...>::output_types, std::tuple<bool>>,
                "tandem::while_loop: the condition must return one bool value");
  static_assert(std::is_same_v<typename detail::subgraph<Body, typename X::value_type...>::output_types,
                               std::tuple<typename X::value_type...>>,
                "tandem::while_loop: the body must return the state it is given: as many values, of the same "
                "element types");
  if constexpr (detail::any_symbolic<X...>) {
    detail::while_construct<Cond, Body, typename X::value_type...> c{
        detail::subgraph<Cond, typename X::value_type...>("while_loop", cond_fn),
        detail::subgraph<Body, typename X::value_type...>("while_loop", body)};
    return detail::single_or_tuple(
        detail::make_control<typename X::value_type...>("while_loop", std::move(c), detail::as_operand(state)...));
  } else {
    if (is_grad_enabled() && (detail::input_requires_grad(state) || ...))
      throw error(
          "tandem::while_loop: has no derivative (its trip count depends on the values), but an input requires a "
          "gradient; use fori_loop with a bound, or run it under no_grad");
    auto test = jit(std::move(cond_fn));
    auto graph = jit(std::move(body));
    std::tuple<tensor<typename X::value_type>...> current{state...};
    while (true) {
      tensor<bool> holds = std::apply(test, current);
      detail::require_one_value("while_loop", "the condition", holds.shape());
      if (!holds.item()) break;
      auto next = detail::as_tuple(std::apply(graph, current));
      detail::require_state_shapes("while_loop", detail::any_tensors(current), detail::any_tensors(next));
      if (std::apply([](const auto&... s) { return (s.requires_grad() || ...); }, next))
        throw error(
            "tandem::while_loop: has no derivative (its trip count depends on the values), but a tensor its body "
            "uses requires a gradient; use fori_loop with a bound, or run it under no_grad");
      current = std::move(next);
    }
    return detail::single_or_tuple(std::move(current));
  }
}

}  // namespace tandem
