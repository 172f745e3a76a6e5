#pragma once
// run_graph (declared in autograd/engine.hpp): inline in header-only builds,
// compiled once into tandem::compiled (TANDEM_LIBRARY_FUNCTION,
// core/config.hpp).

#include <algorithm>
#include <queue>
#include <unordered_set>
#include <vector>

#include "tandem/autograd/engine.hpp"

namespace tandem::detail {

TANDEM_LIBRARY_FUNCTION void run_graph(node& root, const backward_context& context, capture_request* capture) {
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

TANDEM_LIBRARY_FUNCTION bool reaches_other_leaves(node& root, const std::vector<node*>& targets) {
  std::vector<node*> pending{&root};
  std::unordered_set<node*> seen{&root};
  while (!pending.empty()) {
    node* n = pending.back();
    pending.pop_back();
    if (n->is_leaf_accumulator() && std::find(targets.begin(), targets.end(), n) == targets.end()) return true;
    for (const auto& next : n->next())
      if (next && seen.insert(next.get()).second) pending.push_back(next.get());
  }
  return false;
}

}  // namespace tandem::detail
