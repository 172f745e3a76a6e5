#pragma once
// The owner of a traced node that holds data. A graph of n such nodes has
// n node types, each named by the whole subgraph under it; with
// std::shared_ptr every one of them instantiated a control block (six
// virtual functions whose names spell the subgraph), the shared_ptr class
// and its converting constructors: 14 types and 84 functions in a 10-node
// graph with its gradient. Here the count lives in a header in front of the
// node, and the only function per type is the one that deletes it.

#include <cstdint>
#include <new>
#include <utility>

#include "tandem/detail/reference_count.hpp"
#include "tandem/graph/confined_call.hpp"
#include "tandem/graph/node_arena.hpp"

namespace tandem::detail {

struct counted_header {
  int references;
  void (*destroy)(counted_header*);
  // The confined call the node was made in (confined_call.hpp).
  std::uint64_t region;
};

template <class N>
struct counted_node : counted_header {
  N node;
};

// A cached graph's call traces the function again, making and freeing
// every node that holds data: they live in the node arena, uncounted like
// a call's other bookkeeping.
template <class N>
void* allocate_counted() {
  return node_arena::allocate<sizeof(counted_node<N>), alignof(counted_node<N>)>();
}

template <class N>
void destroy_counted(counted_header* header) {
  auto* counted = static_cast<counted_node<N>*>(header);
  counted->~counted_node<N>();
  node_arena::deallocate(counted);
}

// Whether only this thread can reach the node: it was made in the call
// this thread is in.
inline bool confined_to_this_thread(const counted_header* header) {
  return header->region == confined_call::current();
}

inline void retain(counted_header* header) {
  if (!header) return;
  if (confined_to_this_thread(header)) ++header->references;
  else count_up(header->references);
}

inline void release(counted_header* header) {
  if (!header) return;
  if (confined_to_this_thread(header) ? header->references-- == 1 : count_down(header->references))
    header->destroy(header);
}

// Shared ownership of one immutable node of type N, as a shared_ptr<const N>
// without its machinery.
template <class N>
class node_ref {
 public:
  node_ref() = default;
  template <class... Args>
  static node_ref make(Args&&... args) {
    void* memory = allocate_counted<N>();
    try {
      return node_ref(new (memory) counted_node<N>{{1, &destroy_counted<N>, confined_call::for_new_node()},
                                                   N{std::forward<Args>(args)...}});
    } catch (...) {
      node_arena::deallocate(memory);
      throw;
    }
  }

  node_ref(const node_ref& other) : header_(other.header_) { retain(header_); }
  node_ref(node_ref&& other) noexcept : header_(std::exchange(other.header_, nullptr)) {}
  node_ref& operator=(node_ref other) noexcept {
    std::swap(header_, other.header_);
    return *this;
  }
  ~node_ref() { release(header_); }

  const N* get() const { return header_ ? &static_cast<const counted_node<N>*>(header_)->node : nullptr; }
  const N& operator*() const { return *get(); }
  const N* operator->() const { return get(); }

 private:
  explicit node_ref(counted_header* header) : header_(header) {}
  counted_header* header_ = nullptr;
};

}  // namespace tandem::detail
