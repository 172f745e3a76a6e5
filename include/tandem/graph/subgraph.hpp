#pragma once
// A sub-graph: a branch of cond or the body of a loop. Its function is
// traced once, on symbolic inputs, when the graph holding it is traced; each
// run (each iteration of a loop) executes that traced graph with the
// executor, fused as any static graph, without tracing again. A run that
// may be differentiated keeps its executor, whose backward turns the
// gradients of the sub-graph's outputs into those of its inputs and of the
// tensors it captured (a module's parameters).

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/graph/execute.hpp"
#include "tandem/graph/sharing.hpp"
#include "tandem/graph/structure.hpp"

namespace tandem::detail {

// One run of a sub-graph, whatever its type.
class subgraph_run {
 public:
  virtual ~subgraph_run() = default;
  const std::vector<any_tensor>& outputs() const { return outputs_; }
  std::vector<any_tensor> take_outputs() { return std::move(outputs_); }
  // The tensors the sub-graph captured, by key.
  virtual void captured(keyed_gradients& into) const = 0;
  // From the gradients of the outputs (none where none came), the gradients
  // of the inputs by position; those of captured tensors go to `captured`.
  virtual std::vector<std::optional<any_tensor>> backward(const std::vector<std::optional<any_tensor>>& seeds,
                                                          keyed_gradients& captured) = 0;

 protected:
  std::vector<any_tensor> outputs_;
};

template <class Root, class... T>
class typed_subgraph_run final : public subgraph_run {
  using inputs_type = std::tuple<const tensor<T>&...>;

 public:
  typed_subgraph_run(const Root& root, std::tuple<tensor<T>...> inputs, bool for_backward)
      : inputs_(std::move(inputs)),
        references_(std::apply([](const auto&... t) { return inputs_type(t...); }, inputs_)),
        executor_(references_, for_backward) {
    apply_operands(
        [&](const auto&... out) {
          (outputs_.push_back(any_tensor(executor_.value(out))), ...);
          // The outputs' keys, to seed them: only a backward needs them.
          if (for_backward) keys_ = {key_of(out)...};
        },
        root.children);
  }

  void captured(keyed_gradients& into) const override {
    executor_.captured().for_each([&](const void* key, const any_tensor& value) { into.emplace_back(key, value); });
  }

  std::vector<std::optional<any_tensor>> backward(const std::vector<std::optional<any_tensor>>& seeds,
                                                  keyed_gradients& captured) override {
    std::vector<std::pair<const void*, any_tensor>> keyed;
    for (std::size_t k = 0; k < seeds.size(); ++k)
      if (seeds[k]) keyed.emplace_back(keys_[k], *seeds[k]);
    executor_.backward(std::move(keyed));
    std::vector<std::optional<any_tensor>> inputs;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (inputs.push_back(found(key_of(sym<input_node<I, T>>{}))), ...);
    }(std::index_sequence_for<T...>{});
    executor_.captured().for_each([&](const void* key, const any_tensor&) {
      if (auto g = found(key)) captured.emplace_back(key, std::move(*g));
    });
    return inputs;
  }

 private:
  std::optional<any_tensor> found(const void* key) const {
    if (const any_tensor* g = executor_.gradient(key)) return *g;
    return std::nullopt;
  }

  std::tuple<tensor<T>...> inputs_;
  inputs_type references_;
  executor<Root, inputs_type, false> executor_;
  std::vector<const void*> keys_;
};

// The element types of a graph's outputs. (A trait, not a decltype of a
// lambda: clang 14 crashes reading such a decltype back from a precompiled
// header.)
template <class Root>
struct output_types_of;
template <class... C>
struct output_types_of<outputs_node<C...>> {
  using type = std::tuple<typename C::value_type...>;
};

// f traced on symbolic inputs of element types T...
template <class... T, class F>
auto trace_on_inputs(const F& f) {
  // Its inputs are its own, of shapes not known here.
  trace_inputs_scope scope(nullptr, 0);
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return outputs_root(f(sym<input_node<I, T>>{}...));
  }(std::index_sequence_for<T...>{});
}

// A function traced once on inputs of element types T...: its graph, and
// runs of it on tensors. The trace is taken when the graph is first needed:
// a cond traces only the branch it takes (the graph holding the construct
// is traced at each call, and so are its sub-graphs).
template <class F, class... T>
class subgraph {
 public:
  using root_type = decltype(trace_on_inputs<T...>(std::declval<const F&>()));
  static constexpr bool reads_captured = detail::reads_captured<root_type>();

  subgraph(const char* construct, F f) : construct_(construct), f_(std::move(f)) {}
  // Runs key the trace's nodes by address: a moved sub-graph traces anew.
  subgraph(subgraph&& other) : construct_(other.construct_), f_(std::move(other.f_)) {}
  subgraph& operator=(subgraph&&) = delete;

  const root_type& root() const {
    if (!root_) {
      root_.emplace(trace_on_inputs<T...>(f_));
      if (!sharing_check<root_type>(*root_).fits())
        throw error(std::string("tandem::") + construct_ +
                    ": a branch or loop body reads two different scalars through nodes of one type (as `x * 2 + "
                    "x * 3` does), which its static graph cannot hold; write them as one value or pass them as "
                    "tensors");
    }
    return *root_;
  }

  // The element types of the outputs.
  using output_types = typename output_types_of<root_type>::type;

  // The outputs of the graph on `inputs` from `first` on (tensors of the
  // types T..., in order), from a run that keeps nothing: its executor
  // lives on the stack.
  std::vector<any_tensor> evaluate(const std::vector<any_tensor>& inputs, std::size_t first = 0) const {
    using inputs_type = std::tuple<const tensor<T>&...>;
    const inputs_type references = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return inputs_type(std::get<tensor<T>>(inputs[first + I])...);
    }(std::index_sequence_for<T...>{});
    executor<root_type, inputs_type, false> run(references, false);
    return apply_operands([&](const auto&... out) { return std::vector<any_tensor>{any_tensor(run.value(out))...}; },
                          root().children);
  }

  // The same on typed tensors: a tuple of the outputs.
  auto evaluate(const tensor<T>&... x) const {
    using inputs_type = std::tuple<const tensor<T>&...>;
    const inputs_type references(x...);
    executor<root_type, inputs_type, false> run(references, false);
    return apply_operands([&](const auto&... out) { return std::tuple{run.value(out)...}; }, root().children);
  }

  // Runs the graph on `inputs` from `first` on, keeping the run for a
  // backward if `for_backward`.
  std::unique_ptr<subgraph_run> run(const std::vector<any_tensor>& inputs, bool for_backward,
                                    std::size_t first = 0) const {
    auto typed = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<tensor<T>...>(std::get<tensor<T>>(inputs[first + I])...);
    }(std::index_sequence_for<T...>{});
    return std::unique_ptr<subgraph_run>(
        static_cast<subgraph_run*>(new typed_subgraph_run<root_type, T...>(root(), std::move(typed), for_backward)));
  }

 private:
  const char* construct_;
  F f_;
  mutable std::optional<root_type> root_;
};

}  // namespace tandem::detail
