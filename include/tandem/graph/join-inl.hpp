#pragma once
// graph_join_node's functions (declared in graph/join.hpp): inline in
// header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp), with the node's vtable.

#include <type_traits>
#include <variant>

#include "tandem/graph/join.hpp"

namespace tandem::detail {

TANDEM_LIBRARY_FUNCTION graph_join_node::graph_join_node(std::shared_ptr<graph_run> run, recorded_backward replay,
                                                         std::vector<std::shared_ptr<node>> edges,
                                                         std::vector<const void*> input_keys)
    : run_(std::move(run)), replay_(std::move(replay)), edges_(std::move(edges)), keys_(std::move(input_keys)) {
  this->next_ = edges_;
}

TANDEM_LIBRARY_FUNCTION void graph_join_node::run(const backward_context& context) {
  this->take_pending();
  graph_seeds seeds = std::move(seeds_);
  seeds_.clear();
  // The engine hands gradients on to next() after run(): the replay's
  // output nodes when they stand in for the join, else the join's edges.
  if (context.create_graph || !run_) {
    if (!replay_)
      throw error("tandem::backward: the graph through a static graph was freed by an earlier backward (pass "
                  "retain_graph to run a backward through it again)");
    this->next_ = (*replay_)(seeds);
  } else {
    run_->backward(std::move(seeds));
    this->next_ = edges_;
    for (std::size_t k = 0; k < keys_.size(); ++k) {
      if (!edges_[k]) continue;
      if (const any_tensor* g = run_->gradient(keys_[k]))
        std::visit(
            [&](const auto& t) {
              using T = typename std::decay_t<decltype(t)>::value_type;
              if constexpr (std::is_floating_point_v<T>) edges_[k]->receive(t);
            },
            *g);
    }
    run_.reset();
  }
  if (!context.retain_graph) replay_.reset();
}

TANDEM_LIBRARY_FUNCTION std::string graph_join_node::name() const { return "static_graph"; }

}  // namespace tandem::detail
