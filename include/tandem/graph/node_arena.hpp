#pragma once
// The memory of traced nodes (node_ref.hpp): a region per thread. A cached
// call traces its function again, making every node that holds data (each
// scalar, each op above one), and frees them all before it returns. From
// the caching allocator's bins each node cost about 60 instructions, an
// eighth of a 10-node graph's call; here a node is a bump of a pointer in
// the thread's chunk, and the chunk starts over whenever no node in it is
// alive, so every call reuses the same few hot lines.
//
// A chunk counts its live nodes in two parts. While it is its thread's
// current chunk, that thread's own makes and frees change `owned`, which no
// other thread touches, so a traced call takes no locked instruction even in
// a process with threads (about 6 ns each on the Xeon measured, more than
// the rest of a node's cost). Everything else goes to `shared`,
// atomically: a node freed by another thread while the chunk is current
// (counted down from zero), and, once the thread lets the chunk go (it is
// full, or the thread exits), every node left, which the thread hands over
// from `owned`. A node may outlive its call (a recorded run keeps it for the
// backward) and die on another thread: its chunk is freed by whoever drops
// the last count, and until then the thread fills a fresh chunk. A node
// over an eighth of a chunk, and any node made once its thread is exiting,
// gets a chunk of its own.

#include <cstddef>
#include <cstdint>
#include <new>

#include "tandem/detail/reference_count.hpp"

namespace tandem::detail {

class node_arena {
 public:
  static constexpr std::size_t chunk_bytes = std::size_t{1} << 15;
  // Larger nodes get a chunk of their own, so that one does not waste most
  // of a shared chunk.
  static constexpr std::size_t largest_shared = chunk_bytes / 8;

  // Blocks are multiples of the grain, so that a chunk's top stays
  // aligned for every node that is not over-aligned.
  static constexpr std::size_t grain = 16;

  template <std::size_t Bytes, std::size_t Alignment>
  static void* allocate() {
    static_assert(Alignment < chunk_bytes / 2, "tandem internal: a traced node is aligned beyond a chunk");
    constexpr std::size_t rounded = (Bytes + grain - 1) / grain * grain;
    if constexpr (rounded <= largest_shared && Alignment <= grain) {
      if (chunk* c = current_) [[likely]] {
        // Only this thread makes nodes in its chunk, so with none alive
        // none can be until it makes one.
        if (c->owned + count_now(c->shared) == 0) c->top = c->first();
        if (rounded <= static_cast<std::size_t>(c->limit - c->top)) return bump(c, rounded);
      }
      return allocate_in_fresh_chunk(rounded);
    } else {
      return allocate_alone(Bytes, Alignment);
    }
  }

  static void deallocate(void* block) noexcept {
    chunk* c = chunk_of(block);
    if (c == current_) --c->owned;
    else if (count_down(c->shared)) free_chunk(c);
  }

 private:
  struct alignas(grain) chunk {
    int owned;
    int shared;
    char* top;
    char* limit;
    char* first() { return reinterpret_cast<char*>(this) + sizeof(chunk); }
  };

  static char* align_up(char* p, std::size_t alignment) {
    auto address = reinterpret_cast<std::uintptr_t>(p);
    return p + ((alignment - address % alignment) % alignment);
  }
  // Every block of a chunk lies within its first chunk_bytes, the chunk
  // aligned to them.
  static chunk* chunk_of(void* block) {
    return reinterpret_cast<chunk*>(reinterpret_cast<std::uintptr_t>(block) & ~(chunk_bytes - 1));
  }

  static chunk* new_chunk(std::size_t bytes, int shared) {
    void* memory = ::operator new(bytes, std::align_val_t{chunk_bytes});
    auto* c = static_cast<chunk*>(memory);
    c->owned = 0;
    c->shared = shared;
    c->top = c->first();
    c->limit = static_cast<char*>(memory) + bytes;
    return c;
  }
  static void free_chunk(chunk* c) noexcept { ::operator delete(c, std::align_val_t{chunk_bytes}); }

  // A chunk holding one node, never a thread's current one: its shared
  // count is that node's.
  static void* allocate_alone(std::size_t bytes, std::size_t alignment) {
    chunk* c = new_chunk(sizeof(chunk) + alignment + bytes, 1);
    return align_up(c->first(), alignment);
  }

  static void* bump(chunk* c, std::size_t rounded) {
    char* block = c->top;
    c->top = block + rounded;
    ++c->owned;
    return block;
  }

  // The thread's current chunk is no longer its own: its nodes still alive
  // are counted in `shared` from now on, and free it when they go.
  static void let_go_of_current() noexcept {
    if (chunk* c = current_) {
      current_ = nullptr;
      if (count_add(c->shared, c->owned) == 0) free_chunk(c);
    }
  }

  static void* allocate_in_fresh_chunk(std::size_t rounded) {
    if (thread_gone_) return allocate_alone(rounded, grain);
    static thread_local current_releaser releaser;
    chunk* fresh = new_chunk(chunk_bytes, 0);
    let_go_of_current();
    current_ = fresh;
    return bump(fresh, rounded);
  }

  struct current_releaser {
    ~current_releaser() {
      thread_gone_ = true;
      let_go_of_current();
    }
  };

  static inline constinit thread_local chunk* current_ = nullptr;
  static inline constinit thread_local bool thread_gone_ = false;
};

}  // namespace tandem::detail
