#pragma once
// The owner of a traced node that holds data. A graph of n such nodes has
// n node types, each named by the whole subgraph under it; with
// std::shared_ptr every one of them instantiated a control block (six
// virtual functions whose names spell the subgraph), the shared_ptr class
// and its converting constructors: 14 types and 84 functions in a 10-node
// graph with its gradient. Here the count lives in a header in front of the
// node, and the only function per type is the one that deletes it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#if defined(__GLIBCXX__)
#include <ext/atomicity.h>
#endif

namespace tandem::detail {

// The memory of traced nodes. A cached graph's call traces the function
// again, allocating and freeing every node that holds data (each constant,
// each op above one): malloc and free were a sixth of a 10-node graph's
// call. Each thread keeps the blocks it frees in lists by size (16-byte
// classes up to 512 bytes, 64 blocks a class) and takes from them first.
// Under AddressSanitizer every node comes from the heap, so that a node used
// after its release is still reported.
#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_POOLED_NODES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TANDEM_POOLED_NODES 0
#endif
#endif
#if !defined(TANDEM_POOLED_NODES)
#define TANDEM_POOLED_NODES 1
#endif
class node_memory {
  static constexpr std::size_t step = 16, largest = 512, kept = 64;
  struct free_block {
    free_block* next;
  };
  struct lists {
    std::array<free_block*, largest / step> head{};
    std::array<std::uint8_t, largest / step> count{};
    ~lists() {
      for (free_block* block : head)
        while (block) ::operator delete(std::exchange(block, block->next));
      gone() = true;
    }
  };
  static lists& local() {
    thread_local lists kept_blocks;
    return kept_blocks;
  }
  // Set when the thread's lists are destroyed, at its exit: a node freed
  // after that (by a static object) goes straight back to the heap.
  static bool& gone() {
    thread_local bool destroyed = false;
    return destroyed;
  }
  static constexpr std::size_t size_class(std::size_t bytes) { return (bytes + step - 1) / step - 1; }

 public:
  // Not templates: one pair of functions for every node type.
  static void* allocate(std::size_t bytes, std::size_t alignment) {
    if (!pooled(bytes, alignment)) return ::operator new(bytes, std::align_val_t{alignment});
    const std::size_t c = size_class(bytes);
    if (!gone()) {
      lists& l = local();
      if (free_block* block = l.head[c]) {
        l.head[c] = block->next;
        --l.count[c];
        return block;
      }
    }
    return ::operator new((c + 1) * step);
  }
  static void deallocate(void* p, std::size_t bytes, std::size_t alignment) {
    if (!pooled(bytes, alignment)) return ::operator delete(p, std::align_val_t{alignment});
    const std::size_t c = size_class(bytes);
    if (!gone()) {
      lists& l = local();
      if (l.count[c] < kept) {
        l.head[c] = new (p) free_block{l.head[c]};
        ++l.count[c];
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  static constexpr bool pooled(std::size_t bytes, std::size_t alignment) {
    return TANDEM_POOLED_NODES && bytes <= largest && alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  }
};

struct counted_header {
  int references;
  void (*destroy)(counted_header*);
};

template <class N>
struct counted_node : counted_header {
  N node;
};

template <class N>
void destroy_counted(counted_header* header) {
  auto* counted = static_cast<counted_node<N>*>(header);
  counted->~counted_node<N>();
  node_memory::deallocate(counted, sizeof(counted_node<N>), alignof(counted_node<N>));
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
    void* memory = node_memory::allocate(sizeof(counted_node<N>), alignof(counted_node<N>));
    try {
      return node_ref(new (memory) counted_node<N>{{1, &destroy_counted<N>}, N{std::forward<Args>(args)...}});
    } catch (...) {
      node_memory::deallocate(memory, sizeof(counted_node<N>), alignof(counted_node<N>));
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
