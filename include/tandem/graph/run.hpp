#pragma once
// What a run of a static graph shows outside the executor: how values are
// keyed, the counters tests and plan statistics read, and graph_run, the
// interface through which the eager graph runs a graph's backward without
// naming the graph's type.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/core/allocator.hpp"
#include "tandem/core/any_tensor.hpp"
#include "tandem/core/config.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/detail/unique_function.hpp"
#include "tandem/graph/key_map.hpp"
#include "tandem/graph/symbol.hpp"

namespace tandem::detail {

using tandem::any_tensor;

template <class N>
inline constexpr char class_tag = 0;

// How a value is found again: by type for pure classes, by address else.
template <class N>
const void* key_of(const sym<N>& s) {
  if constexpr (is_pure<N>) return &class_tag<N>;
  else return s.identity();
}

// Counts kept for tests and the plan statistics: fused loops and eager
// kernels run, and buffers made for values that are not outputs.
struct run_counters {
  std::int64_t fused_loops = 0;
  std::int64_t eager_kernels = 0;
  // Fused reductions that ran their group's backward in the forward pass.
  std::int64_t forward_backward_passes = 0;
  // Groups run inside a GEMM, on each block of the product it finished.
  std::int64_t matmul_epilogues = 0;
};

// What the eager graph keeps of a run that recorded for backward: its
// backward and the gradients it leaves. The eager graph's nodes see only
// this, never the executor's type, which names the whole graph type.
class graph_run {
 public:
  virtual ~graph_run() = default;
  virtual void backward(std::vector<std::pair<const void*, any_tensor>> seeds) = 0;
  virtual const any_tensor* gradient(const void* key) const = 0;
};

// sum += g, for a gradient sum: in place when sum is contiguous, of g's
// shape and held nowhere else (a loop's body sends the gradient of a
// captured weight once per iteration), else into a fresh tensor. Defined
// in run-inl.hpp: compiled once into tandem::compiled.
void accumulate(tensor<float>& sum, const tensor<float>& g);
void accumulate(tensor<double>& sum, const tensor<double>& g);

// Gradients (or values) by key: what reached the tensors a sub-graph of a
// control-flow construct captured (graph/subgraph.hpp).
using keyed_gradients = std::vector<std::pair<const void*, any_tensor>>;

// What a construct's run leaves: its outputs, the tensors its sub-graphs
// captured (by key: they join the graph's captured tensors, so that their
// gradients reach a module's parameters), and, when the run may be
// differentiated, how to turn the outputs' gradients into the operands'.
struct control_run {
  using backward_function = unique_function<std::vector<std::optional<any_tensor>>(
      const std::vector<std::optional<any_tensor>>&, keyed_gradients&)>;
  std::vector<any_tensor> outputs;
  keyed_gradients captured;
  std::optional<backward_function> backward;
};

// The tensors a run captured, by key. A call captures few (a layer's weight
// and bias), so the first four stay in the map itself: allocating its table
// was 340 of the 2,475 instructions of a cached call of jit(x * w), w
// captured.
using captured_tensors = key_map<any_tensor, 4>;

// The gradients a finished backward left at a graph's captured tensors,
// looked up by the leaf tensor a value was captured from. A tensor captured
// at several places in the graph gets the sum of their gradients.
class captured_gradients {
 public:
  // None: a step that ran eagerly leaves its gradients in the tensors' .grad.
  captured_gradients() = default;
  captured_gradients(std::shared_ptr<graph_run> run, const captured_tensors& captured) : run_(std::move(run)) {
    captured_.reserve(captured.size());
    captured.for_each([&](const void* key, const any_tensor& value) { captured_.emplace_back(key, value); });
  }

  // A captured value that eager ops computed from parameters while the
  // graph was traced (`sum(w * w)` of two tensors is one eager value) hands
  // its gradient on through the eager graph, to the parameters' `.grad`.
  void continue_through_eager_graph() const;

  template <class T>
  std::optional<tensor<T>> of(const tensor<T>& t) const {
    std::optional<tensor<T>> total;
    for (const auto& [key, value] : captured_) {
      const auto* same = std::get_if<tensor<T>>(&value);
      if (!same || !same->is_leaf() || same->device() != t.device() || same->device_data() != t.device_data() ||
          same->shape() != t.shape() ||
          !std::ranges::equal(same->strides(), t.strides()))
        continue;
      const any_tensor* g = run_->gradient(key);
      if (!g) continue;
      const tensor<T>& gradient = std::get<tensor<T>>(*g);
      total = total ? *total + gradient : gradient;
    }
    return total;
  }

 private:
  std::shared_ptr<graph_run> run_;
  std::vector<std::pair<const void*, any_tensor>> captured_;
};

}  // namespace tandem::detail

#if TANDEM_HEADER_ONLY
#include "tandem/graph/run-inl.hpp"
#endif
