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
#include <variant>
#include <vector>

#include "tandem/autograd/backward_options.hpp"
#include "tandem/core/config.hpp"
#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/node.hpp"
#include "tandem/autograd/record.hpp"

namespace tandem {

namespace detail {

// Nodes whose gradient the caller wants back, and what they received. The
// first `collected_only` targets are leaves that exist only to collect a
// gradient (a static graph's stand-ins for an eager kernel's operands):
// their gradient goes back to the caller and nowhere else, not into a
// .grad that nothing reads (a copy of an activation-sized tensor each).
struct capture_request {
  std::vector<node*> targets;
  std::vector<std::optional<any_gradient>> results;
  std::size_t collected_only = 0;
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

template <class T>
void run_graph_from(const tensor<T>& output, const tensor<T>& seed, const backward_context& context,
                    capture_request* capture = nullptr) {
  std::shared_ptr<node> root = edge_of(output);
  root->receive(seed);
  run_graph(*root, context, capture);
}

// Two gradients of one leaf, from two runs that reached it (a template: the
// sum is the op's, which its instantiation finds where it is used).
template <class G = any_gradient>
G sum_of(const G& a, const G& b) {
  return std::visit(
      [](const auto& x, const auto& y) -> G {
        using T = typename std::decay_t<decltype(x)>::value_type;
        if constexpr (std::is_same_v<T, typename std::decay_t<decltype(y)>::value_type>) return x + y;
        else return x + y.template astype<T>();
      },
      a, b);
}

// The run under way on this thread, while a node of it runs.
struct active_run {
  const backward_context* context;
  capture_request* capture;
};
inline thread_local active_run* current_run = nullptr;

// The backward of `output` started by a node of the run under way (a
// static graph's node runs the eager backward its eager kernels recorded):
// returns what reached `leaves` (the kernels' stand-ins for their
// operands), and serves that run's caller with the rest, as the run would:
// a leaf the functional grad asked for is captured for it, and leaves go
// into .grad only where the run puts them there. With no run under way,
// as an ordinary backward would.
template <class T>
std::vector<std::optional<any_gradient>> backward_within_run(const tensor<T>& output, const tensor<T>& seed,
                                                             const std::vector<node*>& leaves) {
  active_run* outer = current_run;
  capture_request request;
  request.targets = leaves;
  request.collected_only = leaves.size();
  if (outer && outer->capture)
    request.targets.insert(request.targets.end(), outer->capture->targets.begin(), outer->capture->targets.end());
  request.results.resize(request.targets.size());
  run_graph_from(output, seed, outer ? *outer->context : backward_context{}, &request);
  if (outer && outer->capture)
    for (std::size_t k = 0; k < outer->capture->targets.size(); ++k)
      if (auto& got = request.results[leaves.size() + k]) {
        auto& result = outer->capture->results[k];
        result = result ? sum_of(*result, *got) : *got;
      }
  request.results.resize(leaves.size());
  return request.results;
}

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
