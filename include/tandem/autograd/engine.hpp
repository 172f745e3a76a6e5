#pragma once
// The backward engine. Starting from the node of an output that has received
// its seed gradient, it runs nodes in decreasing sequence number: every node
// is run once, after all nodes that feed it gradients. Leaves either add into
// grad() (backward) or are only read (the functional grad, which must not
// touch grad()). Whatever happens, no pending gradient outlives the call.

#include <algorithm>
#include <memory>
#include <optional>
#include <queue>
#include <vector>

#include "tandem/autograd/backward_options.hpp"
#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/node.hpp"
#include "tandem/autograd/record.hpp"

namespace tandem {

namespace detail {

// Nodes whose gradient the caller wants back, and what they received.
struct capture_request {
  std::vector<node*> targets;
  std::vector<std::optional<any_gradient>> results;
};

inline void run_graph(node& root, const backward_context& context, capture_request* capture) {
  grad_mode_guard mode(context.create_graph);
  auto later = [](const node* a, const node* b) { return a->sequence() < b->sequence(); };
  std::priority_queue<node*, std::vector<node*>, decltype(later)> ready(later);
  std::vector<node*> seen;
  struct cleanup {
    std::vector<node*>& seen;
    ~cleanup() {
      for (node* n : seen) {
        n->queued = false;
        n->clear_pending();
      }
    }
  } reset{seen};

  auto enqueue = [&](node* n) {
    if (n->queued) return;
    n->queued = true;
    seen.push_back(n);
    ready.push(n);
  };
  enqueue(&root);
  while (!ready.empty()) {
    node* n = ready.top();
    ready.pop();
    if (capture) {
      auto at = std::find(capture->targets.begin(), capture->targets.end(), n);
      if (at != capture->targets.end()) capture->results[at - capture->targets.begin()] = n->pending();
    }
    n->run(context);
    for (const auto& next : n->next())
      if (next && next->has_pending()) enqueue(next.get());
  }
}

template <class T>
void backward(const tensor<T>& output, const tensor<T>& seed, const backward_options& options) {
  static_assert(std::is_floating_point_v<T>, "tandem::backward: only float and double tensors have gradients");
  if (!output.requires_grad())
    throw error("tandem::backward: the tensor of shape " + to_string(output.shape()) +
                " does not require a gradient (no input of the ops that made it requires one)");
  if (seed.shape() != output.shape())
    throw shape_error("tandem::backward: the sensitivity of shape " + to_string(seed.shape()) +
                      " does not match the output of shape " + to_string(output.shape()));
  std::shared_ptr<node> root = edge_of(output);
  root->receive(seed);
  run_graph(*root, {options.create_graph, options.retain_graph || options.create_graph, true}, nullptr);
}

}  // namespace detail
}  // namespace tandem
