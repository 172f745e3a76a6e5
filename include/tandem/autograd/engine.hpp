#pragma once
// The backward engine. Starting from the node of an output that has received
// its seed gradient, it runs nodes in decreasing sequence number: every node
// is run once, after all nodes that feed it gradients. Leaves either add into
// grad() (backward) or are only read (the functional grad, which must not
// touch grad()). Whatever happens, no pending gradient outlives the call.

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <queue>
#include <vector>

#include "tandem/autograd/backward_options.hpp"
#include "tandem/core/config.hpp"
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

// Runs body(context) under a capture of its own: set by capture.hpp once a
// program captures (only then are nodes recorded in a capture), so that
// the engine names no capture code.
using capture_runner = void (*)(void (*body)(void*), void* context);
inline std::atomic<capture_runner>& backward_capture_runner() {
  static std::atomic<capture_runner> runner{nullptr};
  return runner;
}

// Runs the graph behind `root` (whose seed is pending), every node once, in
// decreasing sequence number; with `capture`, records what its targets
// received.
void run_graph(node& root, const backward_context& context, capture_request* capture);

// Whether the graph behind `root` reaches a tensor that requires a gradient
// other than `targets`: a tensor an enclosing grad differentiates with
// respect to, or a parameter. A functional grad whose output does must
// record its backward, or the derivative with respect to that tensor would
// be lost (d/dy of grad_x(x * y) would come out zero).
bool reaches_other_leaves(node& root, const std::vector<node*>& targets);

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

#if TANDEM_HEADER_ONLY
#include "tandem/autograd/engine-inl.hpp"
#endif
