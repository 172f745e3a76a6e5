// The caching allocator: sizes round to classes, freed blocks are reused,
// and live memory is observable.

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
