#pragma once
// A static graph's call on one thread: it traces the function, runs the
// plan and drops the traced nodes before it returns, and while it lasts no
// other thread can reach a node it made. Symbolic values belong to the
// thread that traces them (tandem runs no part of a trace elsewhere, and a
// traced function must not hand them to another thread); the nodes a call
// keeps (a recorded run's, for the backward) reach other threads only
// through what the call returns, after it returns. So inside the call a
// node made there counts its owners with plain instructions
// (node_ref.hpp), even in a process with threads, where every count is
// otherwise locked: a 10-node graph's call took 49 locked instructions
// there, 2.2x its time in a process that never started a thread, on the
// Xeon measured (docs/benchmarks/static_graph.md).
//
// Each call is a region with an id no other call, on any thread, ever has;
// a node records the region it was made in. A nested call (a graph called
// inside another's trace or run) stays in the outer region.

#include <atomic>
#include <cstdint>

#include "tandem/core/config.hpp"

namespace tandem::detail {

class confined_call {
 public:
  confined_call() : outermost_(current_ == 0) {
    if (outermost_) current_ = next_ != last_ ? next_++ : first_of_fresh_block();
  }
  ~confined_call() {
    if (outermost_) current_ = 0;
  }
  confined_call(const confined_call&) = delete;
  confined_call& operator=(const confined_call&) = delete;

  // The calling thread's region, or 0 outside every call.
  static std::uint64_t current() { return current_; }
  // The region a node made now is in: outside every call, one that is
  // never current, so that a node's region is current only where it is
  // confined (one comparison).
  static std::uint64_t for_new_node() { return current_ != 0 ? current_ : never; }

 private:
  static constexpr std::uint64_t never = ~std::uint64_t{0};

  // Ids are reserved per thread in blocks, so that a call takes no locked
  // instruction for its id either.
  TANDEM_COLD static std::uint64_t first_of_fresh_block() {
    constexpr std::uint64_t block = std::uint64_t{1} << 20;
    next_ = reserved_.fetch_add(block, std::memory_order_relaxed);
    last_ = next_ + block;
    return next_++;
  }

  bool outermost_;
  static inline constinit thread_local std::uint64_t current_ = 0;
  static inline constinit thread_local std::uint64_t next_ = 0;
  static inline constinit thread_local std::uint64_t last_ = 0;
  // 0 is no region.
  static inline constinit std::atomic<std::uint64_t> reserved_{1};
};

}  // namespace tandem::detail
