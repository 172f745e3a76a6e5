#pragma once
// The owner of a traced node that holds data. A graph of n such nodes has
// n node types, each named by the whole subgraph under it; with
// std::shared_ptr every one of them instantiated a control block (six
// virtual functions whose names spell the subgraph), the shared_ptr class
// and its converting constructors: 14 types and 84 functions in a 10-node
// graph with its gradient. Here the count lives in a header in front of the
// node, and the only function per type is the one that deletes it.

#include <new>
#include <utility>

#if defined(__GLIBCXX__)
#include <ext/atomicity.h>
#endif

#include "tandem/core/allocator.hpp"

namespace tandem::detail {

struct counted_header {
  int references;
  void (*destroy)(counted_header*);
};

template <class N>
struct counted_node : counted_header {
  N node;
};

// A cached graph's call traces the function again, allocating and freeing
// every node that holds data (each constant, each op above one): with
// malloc and free, a sixth of a 10-node graph's call. Nodes come from the
// caching allocator's per-thread bins, uncounted like a call's other
// bookkeeping.
template <class N>
void* allocate_counted() {
  static_assert(alignof(counted_node<N>) <= caching_allocator::alignment,
                "tandem internal: a traced node is aligned beyond the caching allocator's blocks");
  return caching_allocator::allocate_uncounted(sizeof(counted_node<N>));
}

template <class N>
void destroy_counted(counted_header* header) {
  auto* counted = static_cast<counted_node<N>*>(header);
  counted->~counted_node<N>();
  caching_allocator::deallocate_uncounted(counted, sizeof(counted_node<N>));
}

// Whether no second thread was ever started: then a count needs no locked
// instruction, as std::shared_ptr does with libstdc++. A small graph's call
// never starts the thread pool, and each locked update cost it about as
// much as the rest of the bookkeeping together.
inline bool process_single_threaded() {
#if defined(__GLIBCXX__)
  return __gnu_cxx::__is_single_threaded();
#else
  return false;
#endif
}

inline void retain(counted_header* header) {
  if (!header) return;
  if (process_single_threaded()) ++header->references;
  else __atomic_fetch_add(&header->references, 1, __ATOMIC_RELAXED);
}

// The last owner sees a count of one and no other thread can raise it (a
// copy needs an owner), so it destroys without a locked instruction: most
// traced nodes have one owner, and a call releases every node it traced.
inline void release(counted_header* header) {
  if (!header) return;
  bool last;
  if (process_single_threaded()) last = header->references-- == 1;
  else
    last = __atomic_load_n(&header->references, __ATOMIC_ACQUIRE) == 1 ||
           __atomic_fetch_sub(&header->references, 1, __ATOMIC_ACQ_REL) == 1;
  if (last) header->destroy(header);
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
      return node_ref(new (memory) counted_node<N>{{1, &destroy_counted<N>}, N{std::forward<Args>(args)...}});
    } catch (...) {
      caching_allocator::deallocate_uncounted(memory, sizeof(counted_node<N>));
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
