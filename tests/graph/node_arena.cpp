#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tandem/graph/node_arena.hpp"
#include "tandem/graph/node_ref.hpp"

using tandem::detail::node_arena;
using tandem::detail::node_ref;

namespace {

struct small_node {
  std::array<std::int64_t, 3> values;
};
// Over the largest node that shares a chunk.
struct large_node {
  std::array<char, node_arena::chunk_bytes / 4> bytes;
};
// Over a whole chunk.
struct huge_node {
  std::array<char, node_arena::chunk_bytes * 2> bytes;
};

void* small_block() { return node_arena::allocate<sizeof(small_node), alignof(small_node)>(); }

TEST_CASE("node_arena: a chunk with no live node starts over, so a call reuses the same memory") {
  void* first = small_block();
  node_arena::deallocate(first);
  void* again = small_block();
  CHECK(again == first);
  void* next = small_block();
  CHECK(next != again);
  CHECK(reinterpret_cast<std::uintptr_t>(next) % 16 == 0);
  node_arena::deallocate(again);
  node_arena::deallocate(next);
}

TEST_CASE("node_arena: live blocks never overlap, across chunks") {
  // Enough blocks to fill several chunks; each keeps its own bytes.
  std::vector<void*> blocks;
  const std::size_t count = 4 * node_arena::chunk_bytes / sizeof(small_node);
  for (std::size_t i = 0; i < count; ++i) {
    void* b = small_block();
    std::memset(b, static_cast<int>(i % 251), sizeof(small_node));
    blocks.push_back(b);
  }
  bool intact = true;
  for (std::size_t i = 0; i < count; ++i) {
    auto* bytes = static_cast<unsigned char*>(blocks[i]);
    for (std::size_t k = 0; k < sizeof(small_node); ++k) intact = intact && bytes[k] == i % 251;
  }
  CHECK(intact);
  for (void* b : blocks) node_arena::deallocate(b);
}

TEST_CASE("node_arena: nodes larger than a chunk's share get a chunk of their own") {
  void* large = node_arena::allocate<sizeof(large_node), alignof(large_node)>();
  void* huge = node_arena::allocate<sizeof(huge_node), alignof(huge_node)>();
  void* small = small_block();
  std::memset(large, 1, sizeof(large_node));
  std::memset(huge, 2, sizeof(huge_node));
  std::memset(small, 3, sizeof(small_node));
  CHECK(static_cast<unsigned char*>(huge)[sizeof(huge_node) - 1] == 2);
  CHECK(static_cast<unsigned char*>(large)[sizeof(large_node) - 1] == 1);
  node_arena::deallocate(huge);
  node_arena::deallocate(large);
  node_arena::deallocate(small);
}

TEST_CASE("node_arena: a node freed on another thread, after its thread moved on or exited") {
  // A recorded run may keep its nodes past the call and drop them on
  // another thread: the chunk goes with its last node, wherever.
  std::vector<node_ref<small_node>> kept;
  std::thread maker([&] {
    for (int i = 0; i < 1000; ++i) kept.push_back(node_ref<small_node>::make(small_node{{i, i + 1, i + 2}}));
  });
  maker.join();
  bool intact = true;
  for (int i = 0; i < 1000; ++i) intact = intact && kept[i]->values[2] == i + 2;
  CHECK(intact);
  std::thread dropper([&] { kept.clear(); });
  dropper.join();
  CHECK(kept.empty());
}

TEST_CASE("node_arena: a node freed on another thread while its chunk is still its maker's") {
  // The maker's own frees and the other thread's are counted apart; with
  // both in, the chunk is empty and starts over.
  void* kept = small_block();
  void* mine = small_block();
  std::thread dropper([kept] { node_arena::deallocate(kept); });
  dropper.join();
  node_arena::deallocate(mine);
  void* again = small_block();
  CHECK(again == kept);
  node_arena::deallocate(again);
}

TEST_CASE("node_arena: threads making and dropping nodes at once") {
  std::vector<std::thread> threads;
  std::array<int, 4> wrong{};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < 2000; ++i) {
        auto a = node_ref<small_node>::make(small_node{{t, i, 0}});
        auto b = node_ref<small_node>::make(small_node{{t, i, 1}});
        if (a->values[0] != t || b->values[1] != i || b->values[2] != 1) ++wrong[t];
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(wrong == std::array<int, 4>{});
}

}  // namespace
