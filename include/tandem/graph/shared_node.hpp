#pragma once
// How a traced graph holds a node that carries runtime values (a scalar, a
// captured tensor, a shape op's arguments): one block shared by every value
// that reads the node, so that a graph in memory is as large as the program
// that built it.
//
// Not std::shared_ptr. A static graph is traced again on every call, and
// `shared_ptr<const N>(new N{...})` costs two heap allocations per node (the
// node and its count), a third of a small graph's call; make_shared's
// allocator machinery costs GCC the checks that operand_list avoids
// (graph/symbol.hpp). Here the count sits in the node's block, which comes
// from the caching allocator's per-thread bins, uncounted: the trace is
// gone when the call returns, so memory_stats() still counts what a call
// leaves behind.

#include <atomic>
#include <cstddef>
#include <new>
#include <utility>

#include "tandem/core/allocator.hpp"

namespace tandem::detail {

template <class N>
class shared_node {
 public:
  shared_node() = default;

  // A new node, built from its members as an aggregate: N{members...}.
  template <class... Members>
  static shared_node make(Members&&... members) {
    void* memory = caching_allocator::allocate_uncounted(sizeof(block));
    try {
      return shared_node(::new (memory) block{1, N{std::forward<Members>(members)...}});
    } catch (...) {
      caching_allocator::deallocate_uncounted(memory, sizeof(block));
      throw;
    }
  }

  shared_node(const shared_node& other) noexcept : block_(other.block_) {
    if (block_) block_->owners.fetch_add(1, std::memory_order_relaxed);
  }
  shared_node(shared_node&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  shared_node& operator=(shared_node other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  // A graph kept for backward may be let go on another thread than the one
  // that traced it, hence an atomic count.
  ~shared_node() {
    if (block_ && block_->owners.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      block_->~block();
      caching_allocator::deallocate_uncounted(block_, sizeof(block));
    }
  }

  const N& operator*() const { return block_->node; }
  const N* get() const { return block_ ? &block_->node : nullptr; }

 private:
  struct block {
    std::atomic<std::size_t> owners;
    N node;
  };
  explicit shared_node(block* b) : block_(b) {}

  block* block_ = nullptr;
};

}  // namespace tandem::detail
