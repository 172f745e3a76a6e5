#pragma once
// How control flow (cond, fori_loop, while_loop) sits in a static graph. A
// construct is one node, whose function holds its sub-graphs (traced once,
// graph/subgraph.hpp) and decides at run time which of them runs and how
// often; its outputs are one node each, reading the construct's results.
// The construct's own value is a placeholder: the executor keeps its
// outputs aside (graph/execute/control.hpp) and, for a backward, the
// gradients of the outputs until the construct's step sends them through
// the sub-graphs' runs in reverse.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/creation.hpp"
#include "tandem/core/error.hpp"
#include "tandem/detail/unique_function.hpp"
#include "tandem/graph/subgraph.hpp"
#include "tandem/graph/trace.hpp"

namespace tandem::detail {

// The function of a construct's node: `Impl::run(operands, for_backward)`
// gives a control_run.
template <class Impl>
struct control_flow {
  using impl_type = Impl;
  Impl impl;
};
template <class Impl>
inline constexpr bool is_control_flow<control_flow<Impl>> = true;

// The function of a construct's K-th output node.
template <std::size_t K>
struct control_output {
  static constexpr std::size_t index = K;
};
template <std::size_t K>
inline constexpr bool is_control_output<control_output<K>> = true;

// A node of the construct `impl` on `operands`, and its outputs, of element
// types Out..., as symbolic values.
template <class... Out, class Impl, class... N>
auto make_control(const char* name, Impl impl, const sym<N>&... operands) {
  using construct = apply_node<control_flow<Impl>, bool, N...>;
  sym<construct> node = make_sym<construct>(control_flow<Impl>{std::move(impl)}, name, make_operands(operands...));
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple{make_sym<apply_node<control_output<K>, Out, construct>>(control_output<K>{}, name,
                                                                                make_operands(node))...};
  }(std::index_sequence_for<Out...>{});
}

// A loop body whose residuals the backward recomputes instead of keeping
// them from the forward (recompute(body), graph/loop.hpp).
struct recompute_tag {};
template <class F>
using recomputed = tagged_function<recompute_tag, F>;
template <class F>
inline constexpr bool is_recomputed = false;
template <class F>
inline constexpr bool is_recomputed<tagged_function<recompute_tag, F>> = true;

// What a loop keeps of one iteration for its backward: the run, with its
// residuals; or, when its body recomputes, the run's inputs, to run it
// again (with residuals) when the backward reaches it.
class kept_iteration {
 public:
  explicit kept_iteration(std::unique_ptr<subgraph_run> run) : run_(std::move(run)) {}
  explicit kept_iteration(std::vector<any_tensor> inputs) : inputs_(std::move(inputs)) {}

  template <class Graph>
  std::unique_ptr<subgraph_run> take(const Graph& graph) {
    if (run_) return std::move(run_);
    return graph.run(inputs_, true);
  }

 private:
  std::unique_ptr<subgraph_run> run_;
  std::vector<any_tensor> inputs_;
};

// A construct's operand as a node of the graph: a traced value as it is, a
// tensor as a captured one.
template <class X>
auto as_operand(const X& x) {
  return as_symbol<void>(x);
}

// A tensor standing for `t` in a run that may be differentiated: where
// `wanted`, a fresh leaf that requires a gradient (if its type can have one).
inline any_tensor leaf_for(const any_tensor& t, bool wanted) {
  if (!wanted) return t;
  return std::visit(
      [](const auto& x) {
        using T = typename std::decay_t<decltype(x)>::value_type;
        auto leaf = x.detach();
        if constexpr (std::is_floating_point_v<T>) leaf.set_requires_grad(true);
        return any_tensor(leaf);
      },
      t);
}

inline bool requires_gradient(const any_tensor& t) {
  return std::visit([](const auto& x) { return x.requires_grad(); }, t);
}

// Whether a gradient could reach the values a sub-graph computed from these
// inputs and captured tensors.
inline bool any_requires_gradient(const std::vector<any_tensor>& inputs, const keyed_gradients& captured) {
  for (const any_tensor& t : inputs)
    if (requires_gradient(t)) return true;
  for (const auto& [key, t] : captured)
    if (requires_gradient(t)) return true;
  return false;
}

// Adds the gradients one run sent to captured tensors into the totals, one
// entry per tensor, so that a loop's per-iteration gradients of a weight do
// not outlive the iteration that made them.
inline void merge_gradients(keyed_gradients& totals, keyed_gradients&& more) {
  // Not a structured binding: clang 14 refuses to capture one in a lambda.
  for (auto& entry : more) {
    auto same = totals.begin();
    while (same != totals.end() && same->first != entry.first) ++same;
    if (same == totals.end()) {
      totals.push_back(std::move(entry));
      continue;
    }
    std::visit(
        [&](auto& sum) {
          using T = typename std::decay_t<decltype(sum)>::value_type;
          if constexpr (std::is_floating_point_v<T>) accumulate(sum, std::get<tensor<T>>(entry.second));
        },
        same->second);
  }
}

inline const shape& shape_of(const any_tensor& t) {
  return std::visit([](const auto& x) -> const shape& { return x.shape(); }, t);
}

// A predicate, an index or a loop bound (`what`): one value.
inline void require_one_value(const char* construct, const char* what, const shape& s) {
  if (numel(s) != 1)
    throw shape_error(std::string("tandem::") + construct + ": " + what + " must hold one value, but has shape " +
                      to_string(s));
}

// The value of an int32 or int64 scalar: an index or a loop bound (`what`).
inline std::int64_t integer_value(const char* construct, const char* what, const any_tensor& t) {
  return std::visit(
      [&](const auto& x) -> std::int64_t {
        using T = typename std::decay_t<decltype(x)>::value_type;
        if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
          require_one_value(construct, what, x.shape());
          return static_cast<std::int64_t>(x.item());
        } else {
          throw error(std::string("tandem::") + construct + ": " + what + " must be an int32 or int64 scalar");
        }
      },
      t);
}

// A tuple of tensors as a vector of any_tensor.
template <class Tuple>
std::vector<any_tensor> any_tensors(const Tuple& tensors) {
  return std::apply([](const auto&... t) { return std::vector<any_tensor>{any_tensor(t)...}; }, tensors);
}

// One output or a tuple of them, as the construct's function returned.
template <class Tuple>
auto single_or_tuple(Tuple&& t) {
  if constexpr (std::tuple_size_v<std::decay_t<Tuple>> == 1) return std::get<0>(std::forward<Tuple>(t));
  else return std::forward<Tuple>(t);
}

// A function's result as a tuple: its one tensor, or its tuple or pair.
template <class R>
auto as_tuple(R&& r) {
  if constexpr (is_tensor_v<std::decay_t<R>>) return std::tuple{std::forward<R>(r)};
  else return pair_as_tuple(std::forward<R>(r));
}

}  // namespace tandem::detail
