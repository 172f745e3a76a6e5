#pragma once
// scan(fn, carry, xs): a loop over the leading axis of xs that threads a
// carry and stacks an output per step, as JAX's lax.scan; an RNN over a
// sequence is one. fn(c..., x) returns std::tuple{c'..., y}, where c... is
// the carry (one tensor, or a std::tuple of them) and x is xs[t]; scan
// returns std::tuple{c_final..., ys}, ys the y of every step stacked along a
// new leading axis.
//
// Inside a static graph fn is a static graph of its own, traced once with
// the graph and run fused on every step, never traced again. Gradients flow
// to the carry, to xs and to the tensors fn captures (a cell's weights):
// each step's run is kept (its residuals: memory grows with the sequence)
// and the backward runs the steps' fused backwards in reverse. On tensors
// (and with jit disabled) fn runs as a static graph called eagerly, with the
// same results.

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/creation.hpp"
#include "tandem/core/error.hpp"
#include "tandem/graph/control.hpp"
#include "tandem/graph/loop.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/graph/static_graph.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem {
namespace detail {

// The number of steps of a scan over xs: its leading extent.
inline std::int64_t scan_length(const shape& xs) {
  if (xs.empty()) throw shape_error("tandem::scan: xs must have a leading axis to scan over, but is a scalar");
  if (xs[0] == 0)
    throw shape_error("tandem::scan: xs of shape " + to_string(xs) +
                      " has no steps, so the shape of the stacked outputs is unknown");
  return xs[0];
}

template <class T>
tensor<T> step_of(const tensor<T>& xs, std::int64_t t) {
  return xs.take(0, t, 1).squeeze(0);
}

template <class Fn, class X, class Y, class... C>
struct scan_construct {
  using step_graph = subgraph<Fn, C..., X>;
  // Shared with the backward, which runs it again where the step recomputes.
  std::shared_ptr<const step_graph> step;
  static constexpr bool reads_captured = step_graph::reads_captured;
  static constexpr bool recomputes = is_recomputed<Fn>;

  static construct_counters& counters() {
    static construct_counters counts("scan", {"step"});
    return counts;
  }
  template <class Visit>
  static void for_each_subgraph_root(Visit&& visit) {
    visit(std::type_identity<typename subgraph<Fn, C..., X>::root_type>{});
  }
  // Adds the sub-graphs to `out` (graph/dump.hpp).
  template <class Out>
  void describe(Out& out) const {
    out.push_back(describe_subgraph("step", step->root()));
  }

  static constexpr std::size_t carries = sizeof...(C);

  // operands: the carry, then xs.
  control_run run(const std::vector<any_tensor>& operands, bool for_backward) const {
    const tensor<X>& xs = std::get<tensor<X>>(operands.back());
    const std::int64_t length = scan_length(xs.shape());
    std::vector<any_tensor> carry(operands.begin(), operands.end() - 1);
    std::vector<tensor<Y>> ys;
    std::vector<kept_iteration> steps;
    control_run result{{}, {}, std::nullopt};
    // Only inputs a gradient can reach require one: the carry from the first
    // step on which anything did, xs's steps where xs does.
    bool carry_needs = false;
    for (std::int64_t t = 0; t < length; ++t) {
      std::vector<any_tensor> inputs;
      for (const any_tensor& c : carry) inputs.push_back(t == 0 ? c : leaf_for(c, for_backward && carry_needs));
      inputs.push_back(leaf_for(any_tensor(step_of(xs, t)), for_backward && xs.requires_grad()));
      std::unique_ptr<subgraph_run> run = step->run(inputs, for_backward && !recomputes);
      counters().ran(0);
      if (t == 0) run->captured(result.captured);
      carry_needs = carry_needs || any_requires_gradient(inputs, result.captured);
      std::vector<any_tensor> next(run->outputs().begin(), run->outputs().begin() + carries);
      require_state_shapes("scan", carry, next);
      const tensor<Y>& y = std::get<tensor<Y>>(run->outputs().back());
      if (!ys.empty() && y.shape() != ys.front().shape())
        throw shape_error("tandem::scan: the step's output changed shape from " + to_string(ys.front().shape()) +
                          " to " + to_string(y.shape()) + " at step " + std::to_string(t));
      ys.push_back(y);
      carry = std::move(next);
      if (for_backward && recomputes) steps.emplace_back(std::move(inputs));
      else if (for_backward) steps.emplace_back(std::move(run));
    }
    result.outputs = carry;
    result.outputs.push_back(any_tensor(stack(ys)));
    if (for_backward)
      result.backward = [steps = std::move(steps), step = step, xs_shape = xs.shape()](
                            const std::vector<std::optional<any_tensor>>& seeds, keyed_gradients& captured) mutable {
        std::vector<std::optional<any_tensor>> carry_gradients(seeds.begin(), seeds.begin() + carries);
        const std::optional<any_tensor>& ys_gradient = seeds.back();
        std::vector<std::optional<tensor<X>>> x_gradients(steps.size());
        bool any_x = false;
        for (std::size_t t = steps.size(); t-- > 0;) {
          std::vector<std::optional<any_tensor>> step_seeds = carry_gradients;
          if (ys_gradient)
            step_seeds.push_back(any_tensor(step_of(std::get<tensor<Y>>(*ys_gradient), static_cast<std::int64_t>(t))));
          else
            step_seeds.push_back(std::nullopt);
          keyed_gradients weights;
          // A graph's fused backward runs once: each step's residuals go as
          // soon as it is done.
          std::vector<std::optional<any_tensor>> inputs = steps[t].take(*step)->backward(step_seeds, weights);
          merge_gradients(captured, std::move(weights));
          carry_gradients.assign(inputs.begin(), inputs.begin() + carries);
          if (inputs.back()) {
            x_gradients[t] = std::get<tensor<X>>(*inputs.back());
            any_x = true;
          }
        }
        std::vector<std::optional<any_tensor>> gradients = std::move(carry_gradients);
        if (any_x) {
          shape step_shape(xs_shape.begin() + 1, xs_shape.end());
          std::vector<tensor<X>> rows;
          for (auto& g : x_gradients) rows.push_back(g ? *g : zeros<X>(step_shape));
          gradients.push_back(any_tensor(stack(rows)));
        } else {
          gradients.push_back(std::nullopt);
        }
        return gradients;
      };
    return result;
  }
};

template <class C>
auto carry_tuple(const C& c) {
  if constexpr (is_tensor_v<C> || is_symbolic_v<C>) return std::tuple<const C&>(c);
  else return std::apply([](const auto&... x) { return std::tuple<const std::decay_t<decltype(x)>&...>(x...); }, c);
}

// scan on one carry of types C... (a function template, so that the branch
// not taken is never instantiated).
template <class Fn, class Xs, class... C>
auto scan_over(Fn fn, const Xs& xs, const C&... c) {
  static_assert(((is_tensor_v<C> || is_symbolic_v<C>) && ...),
                "tandem::scan: the carry must be a tensor, a value of the static graph being traced, or a "
                "std::tuple of them");
  using X = typename Xs::value_type;
  using outputs = typename detail::subgraph<Fn, typename C::value_type..., X>::output_types;
  static_assert(std::tuple_size_v<outputs> == sizeof...(C) + 1,
                "tandem::scan: the step must return std::tuple{carry..., y}: the new carry and the step's "
                "output");
  using Y = std::tuple_element_t<sizeof...(C), outputs>;
  static_assert(std::is_same_v<outputs, std::tuple<typename C::value_type..., Y>>,
                "tandem::scan: the step must return a carry of the element types it is given");
  if constexpr (detail::any_symbolic<C..., Xs>) {
    using construct_type = detail::scan_construct<Fn, X, Y, typename C::value_type...>;
    using step_graph = typename construct_type::step_graph;
    construct_type construct{std::shared_ptr<const step_graph>(new step_graph("scan", fn))};
    return detail::make_control<typename C::value_type..., Y>("scan", std::move(construct),
                                                               detail::as_operand(c)..., detail::as_operand(xs));
  } else {
    const std::int64_t length = detail::scan_length(xs.shape());
    auto graph = jit(std::move(fn));
    std::tuple<tensor<typename C::value_type>...> current{c...};
    std::vector<tensor<Y>> ys;
    for (std::int64_t t = 0; t < length; ++t) {
      auto out = std::apply(
          [&](const auto&... s) { return graph(s..., xs.take(0, t, 1).squeeze(0)); }, current);
      auto next = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::tuple<tensor<typename C::value_type>...>{std::get<K>(out)...};
      }(std::index_sequence_for<C...>{});
      detail::require_state_shapes("scan", detail::any_tensors(current), detail::any_tensors(next));
      const tensor<Y>& y = std::get<sizeof...(C)>(out);
      if (!ys.empty() && y.shape() != ys.front().shape())
        throw shape_error("tandem::scan: the step's output changed shape from " + to_string(ys.front().shape()) +
                          " to " + to_string(y.shape()) + " at step " + std::to_string(t));
      ys.push_back(y);
      current = std::move(next);
    }
    return std::tuple_cat(std::move(current), std::tuple{stack(ys)});
  }
}

}  // namespace detail

template <class Fn, class Carry, class Xs>
auto scan(Fn fn, const Carry& carry, const Xs& xs) {
  static_assert(is_tensor_v<Xs> || is_symbolic_v<Xs>,
                "tandem::scan: xs must be a tensor or a value of the static graph being traced");
  return std::apply([&](const auto&... c) { return detail::scan_over(std::move(fn), xs, c...); },
                    detail::carry_tuple(carry));
}

}  // namespace tandem
