#pragma once
// How a static graph called while eager autograd records joins the eager
// graph: one node per call holds the run and, once every output's gradient
// is in, runs the graph's backward and hands the inputs' gradients on; each
// output's node seeds it.
//
// The fused backward computes numbers, not a graph: nothing above it could
// differentiate them. A backward that must itself be recorded (create_graph,
// a grad of a grad) or that runs a second time (retain_graph) replays the
// call's function eagerly on the same inputs, with autograd recording, and
// hands its output nodes their seeds: those nodes, newer than any other on
// the graph, take the join's place in this backward, and their own backward
// leads to the same inputs and captured tensors the join's edges do.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/autograd/node.hpp"
#include "tandem/core/config.hpp"
#include "tandem/detail/unique_function.hpp"
#include "tandem/graph/run.hpp"

namespace tandem::detail {

using graph_seeds = std::vector<std::pair<const void*, any_tensor>>;

// Runs the call's function eagerly, recording, and hands each output's node
// the seed of that output's key; returns the nodes that took one.
using recorded_backward = unique_function<std::vector<std::shared_ptr<node>>(const graph_seeds&)>;

class graph_join_node final : public typed_node<float> {
 public:
  graph_join_node(std::shared_ptr<graph_run> run, recorded_backward replay, std::vector<std::shared_ptr<node>> edges,
                  std::vector<const void*> input_keys);
  void seed(const void* key, any_tensor g) { seeds_.emplace_back(key, std::move(g)); }
  TANDEM_LIBRARY_VIRTUAL void run(const backward_context& context) override;
  TANDEM_LIBRARY_VIRTUAL std::string name() const override;

 private:
  std::shared_ptr<graph_run> run_;
  std::optional<recorded_backward> replay_;
  std::vector<std::shared_ptr<node>> edges_;
  std::vector<const void*> keys_;
  graph_seeds seeds_;
};

template <class T>
class graph_output_node final : public typed_node<T> {
 public:
  graph_output_node(std::shared_ptr<graph_join_node> join, const void* key) : key_(key) {
    this->next_ = {std::move(join)};
  }
  void run(const backward_context&) override {
    auto join = std::static_pointer_cast<graph_join_node>(this->next_[0]);
    join->seed(key_, this->take_pending());
    join->receive(tensor<float>(shape{}));
  }
  std::string name() const override { return "static_graph output"; }

 private:
  const void* key_;
};

}  // namespace tandem::detail

#if TANDEM_HEADER_ONLY
#include "tandem/graph/join-inl.hpp"
#endif
