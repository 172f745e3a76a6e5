#pragma once
// run_graph (declared in autograd/engine.hpp): inline in header-only builds,
// compiled once into tandem::compiled (TANDEM_LIBRARY_FUNCTION,
// core/config.hpp).

#include <algorithm>
#include <cstdint>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tandem/autograd/engine.hpp"
#include "tandem/core/autocast.hpp"
#include "tandem/core/deferred.hpp"
#include "tandem/core/profiling.hpp"
#include "tandem/graph/mode.hpp"

namespace tandem::detail {

// For each node reachable from root that runs when ready: how many edges
// from reachable nodes lead to it.
inline std::unordered_map<node*, std::int64_t> edges_into_nodes_run_when_ready(node& root) {
  std::unordered_map<node*, std::int64_t> count;
  std::vector<node*> pending{&root};
  std::unordered_set<node*> seen{&root};
  while (!pending.empty()) {
    node* n = pending.back();
    pending.pop_back();
    for (const auto& next : n->next()) {
      if (!next) continue;
      if (next->runs_when_ready()) ++count[next.get()];
      if (seen.insert(next.get()).second) pending.push_back(next.get());
    }
  }
  return count;
}

inline void run_graph_now(node& root, const backward_context& context, capture_request* capture) {
  profile_range whole(profile_category::backward, "backward");
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

  auto mark = [&](node* n) {
    n->queued = true;
    seen.push_back(n);
  };
  auto enqueue = [&](node* n) {
    if (n->queued) return;
    mark(n);
    ready.push(n);
  };
  // Nodes that start a backward of their own (backward_within_run) serve
  // this run's caller through it.
  active_run here{&context, capture};
  struct restore {
    active_run* outer;
    ~restore() { current_run = outer; }
  } restored{current_run};
  current_run = &here;
  auto run_one = [&](node* n) {
    if (capture) {
      auto at = std::find(capture->targets.begin(), capture->targets.end(), n);
      // Added to what backwards started inside this run found for it.
      if (at != capture->targets.end()) {
        const auto k = static_cast<std::size_t>(at - capture->targets.begin());
        auto& result = capture->results[k];
        result = result ? n->pending_plus(*result) : n->pending();
        if (k < capture->collected_only && n->is_leaf_accumulator()) return n->clear_pending();
      }
    }
    profile_range range(profile_category::backward, named_by, [&] { return n->name() + " backward"; });
    const autocast as_recorded(n->recorded_autocast());
    n->run(context);
  };
  // A leaf someone waits for (a data-parallel bucket) runs once every
  // node that sends it a gradient has, as PyTorch counts dependencies,
  // instead of last (a reused leaf's accumulator is older than the whole
  // graph). Counted only while such leaves exist.
  std::unordered_map<node*, std::int64_t> waiting;
  if (ready_hook_count().load(std::memory_order_relaxed) > 0) waiting = edges_into_nodes_run_when_ready(root);

  enqueue(&root);
  while (!ready.empty()) {
    node* n = ready.top();
    ready.pop();
    run_one(n);
    for (const auto& next : n->next()) {
      if (!next) continue;
      if (auto w = waiting.find(next.get()); w != waiting.end()) {
        if (--w->second == 0 && next->has_pending() && !next->queued) {
          mark(next.get());
          run_one(next.get());
        }
        continue;
      }
      if (next->has_pending()) enqueue(next.get());
    }
  }
  // Those that a reachable node never sent its part to (it had none).
  std::vector<node*> late;
  for (const auto& [n, edges] : waiting)
    if (!n->queued && n->has_pending()) late.push_back(n);
  std::sort(late.begin(), late.end(), later);
  for (auto n = late.rbegin(); n != late.rend(); ++n) {
    mark(*n);
    run_one(*n);
  }
}

// The backward of a captured call's ops is captured too: its elementwise
// ops (the derivative rules, the sums of gradients) run fused, region by
// region, as the forward did. Under a capture already (a training step's
// backward inside the captured call), they join it.
TANDEM_LIBRARY_FUNCTION void run_graph(node& root, const backward_context& context, capture_request* capture) {
  capture_runner runner = backward_capture_runner().load(std::memory_order_acquire);
  if (!root.recorded_in_capture || !runner || active_deferred_work() || !jit_enabled())
    return run_graph_now(root, context, capture);
  struct arguments {
    node& root;
    const backward_context& context;
    capture_request* capture;
  } args{root, context, capture};
  runner([](void* a) {
    auto* run = static_cast<arguments*>(a);
    run_graph_now(run->root, run->context, run->capture);
  }, &args);
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
