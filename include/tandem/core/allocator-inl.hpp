#pragma once
// The caching allocator's functions (declared in core/allocator.hpp): inline
// in header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <algorithm>
#include <mutex>
#include <new>

#include "tandem/core/allocator.hpp"
#include "tandem/core/profiling.hpp"

namespace tandem::detail {

struct caching_allocator::counts_registry {
  std::mutex mutex;
  std::vector<const thread_counts*> threads;
  allocation_stats retired{0, 0, 0};
};

TANDEM_LIBRARY_FUNCTION void* caching_allocator::thread_cache::take(std::size_t rounded) {
  auto& bin = bins[bin_index(rounded)];
  if (bin.empty()) return ::operator new(rounded, std::align_val_t{alignment});
  void* block = bin.back();
  bin.pop_back();
  cached_bytes -= rounded;
  return block;
}

TANDEM_LIBRARY_FUNCTION void caching_allocator::thread_cache::give(void* block, std::size_t rounded) noexcept {
  if (cached_bytes + rounded <= cache_limit) {
    try {
      bins[bin_index(rounded)].push_back(block);
      cached_bytes += rounded;
      return;
    } catch (const std::bad_alloc&) {
    }
  }
  ::operator delete(block, std::align_val_t{alignment});
}

TANDEM_LIBRARY_FUNCTION void* caching_allocator::allocate(std::size_t bytes) {
  std::size_t rounded = size_class(bytes);
  if (cache_gone()) {
    count_retired(1, static_cast<std::int64_t>(rounded));
    return ::operator new(rounded, std::align_val_t{alignment});
  }
  thread_cache& cache = local();
  cache.counts.add(1, static_cast<std::int64_t>(rounded));
  profile_allocation(static_cast<std::int64_t>(rounded));
  return cache.take(rounded);
}

TANDEM_LIBRARY_FUNCTION void caching_allocator::deallocate(void* block, std::size_t bytes) noexcept {
  if (!block) return;
  std::size_t rounded = size_class(bytes);
  if (cache_gone()) {
    count_retired(-1, -static_cast<std::int64_t>(rounded));
    ::operator delete(block, std::align_val_t{alignment});
    return;
  }
  thread_cache& cache = local();
  cache.counts.add(-1, -static_cast<std::int64_t>(rounded));
  profile_allocation(-static_cast<std::int64_t>(rounded));
  cache.give(block, rounded);
}

TANDEM_LIBRARY_FUNCTION void* caching_allocator::allocate_uncounted(std::size_t bytes) {
  std::size_t rounded = size_class(bytes);
  if (cache_gone()) return ::operator new(rounded, std::align_val_t{alignment});
  return local().take(rounded);
}

TANDEM_LIBRARY_FUNCTION void caching_allocator::deallocate_uncounted(void* block, std::size_t bytes) noexcept {
  if (!block) return;
  std::size_t rounded = size_class(bytes);
  if (cache_gone()) ::operator delete(block, std::align_val_t{alignment});
  else local().give(block, rounded);
}

TANDEM_LIBRARY_FUNCTION allocation_stats caching_allocator::stats() {
  std::lock_guard lock(registry().mutex);
  allocation_stats total = registry().retired;
  for (const thread_counts* counts : registry().threads) {
    total.live_blocks += counts->live_blocks.load(std::memory_order_relaxed);
    total.live_bytes += counts->live_bytes.load(std::memory_order_relaxed);
    total.allocations += counts->allocations.load(std::memory_order_relaxed);
  }
  return total;
}

TANDEM_LIBRARY_FUNCTION void caching_allocator::release_cached() noexcept {
  if (!cache_gone()) local().release();
}

TANDEM_LIBRARY_FUNCTION caching_allocator::counts_registry& caching_allocator::registry() {
  static counts_registry* r = new counts_registry;  // never destroyed: threads may exit after static destruction
  return *r;
}

TANDEM_LIBRARY_FUNCTION void caching_allocator::count_retired(std::int64_t blocks, std::int64_t bytes) {
  std::lock_guard lock(registry().mutex);
  registry().retired.live_blocks += blocks;
  registry().retired.live_bytes += bytes;
  if (blocks > 0) ++registry().retired.allocations;
}

TANDEM_LIBRARY_FUNCTION caching_allocator::thread_cache::thread_cache() {
  std::lock_guard lock(registry().mutex);
  registry().threads.push_back(&counts);
}

TANDEM_LIBRARY_FUNCTION void caching_allocator::thread_cache::release() noexcept {
  for (auto& bin : bins) {
    for (void* block : bin) ::operator delete(block, std::align_val_t{alignment});
    bin.clear();
  }
  cached_bytes = 0;
}

TANDEM_LIBRARY_FUNCTION caching_allocator::thread_cache::~thread_cache() {
  release();
  std::lock_guard lock(registry().mutex);
  auto& threads = registry().threads;
  threads.erase(std::find(threads.begin(), threads.end(), &counts));
  registry().retired.live_blocks += counts.live_blocks.load(std::memory_order_relaxed);
  registry().retired.live_bytes += counts.live_bytes.load(std::memory_order_relaxed);
  registry().retired.allocations += counts.allocations.load(std::memory_order_relaxed);
  cache_gone() = true;
}

TANDEM_LIBRARY_FUNCTION bool& caching_allocator::cache_gone() noexcept {
  thread_local bool gone = false;
  return gone;
}

TANDEM_LIBRARY_FUNCTION caching_allocator::thread_cache& caching_allocator::local() {
  thread_local thread_cache cache;
  return cache;
}

}  // namespace tandem::detail
