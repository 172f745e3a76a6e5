#pragma once
// A recorded op on the eager autograd graph. Nodes form a DAG through `next`
// (one edge per input, empty where the input needs no gradient). A node is
// created after the nodes of its inputs, so its sequence number is larger:
// running nodes in decreasing sequence order is a reverse topological order.
// Each node holds the gradient of its output while the engine collects it.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tandem/core/autocast.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/shape.hpp"

namespace tandem {
template <class T>
class tensor;

namespace detail {

// A gradient whose element type is known only at run time.
using any_gradient = std::variant<tensor<float>, tensor<double>>;

struct backward_context {
  bool create_graph = false;
  bool retain_graph = false;
  bool accumulate_into_leaves = true;
};

class node : public std::enable_shared_from_this<node> {
 public:
  node() : sequence_(next_sequence()) {}
  node(const node&) = delete;
  node& operator=(const node&) = delete;
  virtual ~node() = default;

  std::uint64_t sequence() const { return sequence_; }
  // The autocast the op ran under (core/autocast.hpp): its backward runs
  // under it too, wherever backward() is called.
  dtype recorded_autocast() const { return recorded_autocast_; }
  const std::vector<std::shared_ptr<node>>& next() const { return next_; }

  // Adds a gradient for this node's output (converted to its element type).
  virtual void receive(const tensor<float>& g) = 0;
  virtual void receive(const tensor<double>& g) = 0;
  virtual bool has_pending() const = 0;
  virtual any_gradient pending() const = 0;
  // The pending gradient plus `other` (what another run found for this node).
  virtual any_gradient pending_plus(const any_gradient& other) const = 0;
  virtual void clear_pending() = 0;
  // Turns the pending gradient into gradients for `next` and hands them on.
  virtual void run(const backward_context& context) = 0;
  // What the op is called, for error messages.
  virtual std::string name() const = 0;
  virtual bool is_leaf_accumulator() const { return false; }
  // Whether the engine runs this node as soon as every node that sends it
  // a gradient has run, rather than in sequence order (a leaf whose
  // gradient someone waits for: autograd/gradient_ready.hpp).
  virtual bool runs_when_ready() const { return false; }

  bool queued = false;
  // Recorded during a captured call, or fed by a node that was: the
  // engine then runs the backward under a capture too (engine-inl.hpp).
  bool recorded_in_capture = false;

 protected:
  std::vector<std::shared_ptr<node>> next_;

 private:
  static std::uint64_t next_sequence() {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t sequence_;
  dtype recorded_autocast_ = autocast_dtype();
};

// How many gradient-ready hooks exist: while there are none, the engine
// does not count the edges into leaves.
inline std::atomic<std::int64_t>& ready_hook_count() {
  static std::atomic<std::int64_t> count{0};
  return count;
}

}  // namespace detail
}  // namespace tandem
