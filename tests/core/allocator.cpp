// The caching allocator: sizes round to classes, freed blocks are reused,
// and live memory is observable.

#include <thread>
#include <vector>

#include "support/check.hpp"

using namespace tandem;
using detail::caching_allocator;

TEST_CASE("size classes waste at most a quarter") {
  for (std::size_t bytes : {1ul, 63ul, 64ul, 65ul, 255ul, 257ul, 1000ul, 4097ul, 1ul << 20, (1ul << 20) + 1, 123456789ul}) {
    std::size_t rounded = caching_allocator::size_class(bytes);
    CHECK(rounded >= bytes);
    CHECK(rounded <= std::max<std::size_t>(64, bytes + bytes / 4 + 64));
    CHECK(rounded % 64 == 0);
  }
}

TEST_CASE("freed blocks are reused and live memory returns to where it was") {
  allocation_stats before = memory_stats();
  void* first = caching_allocator::allocate(1000);
  caching_allocator::deallocate(first, 1000);
  void* second = caching_allocator::allocate(900);
  CHECK(second == first);
  caching_allocator::deallocate(second, 900);
  {
    tensor<float> a = ones({1000}), b = a * 2 + 1;
    CHECK(memory_stats().live_blocks >= before.live_blocks + 2);
  }
  CHECK(memory_stats().live_blocks == before.live_blocks);
  CHECK(memory_stats().live_bytes == before.live_bytes);
  CHECK(memory_stats().allocations > before.allocations);
  caching_allocator::release_cached();
}

TEST_CASE("allocations and frees from several threads keep live memory exact") {
  allocation_stats before = memory_stats();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 1);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &ok] {
      for (int i = 0; i < 200; ++i) {
        std::size_t bytes = 64 * static_cast<std::size_t>(1 + (i * 7 + t) % 50);
        void* block = caching_allocator::allocate(bytes);
        static_cast<char*>(block)[0] = static_cast<char>(i);
        caching_allocator::deallocate(block, bytes);
        tensor<float> a = ones({100 + t}), b = a * 2;
        if (b.at(0) != 2.0f) ok[t] = 0;
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(ok == std::vector<int>{1, 1, 1, 1});
  CHECK(memory_stats().live_blocks == before.live_blocks);
  CHECK(memory_stats().live_bytes == before.live_bytes);
  caching_allocator::release_cached();
}
