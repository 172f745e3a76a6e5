#pragma once
// A caching allocator for tensor buffers. Eager code allocates a result for
// every op; returning freed blocks to a per-thread cache keeps small-tensor
// dispatch cheap (no lock, no system call) and spares large tensors the page
// faults of fresh memory. Counters make allocations observable to tests.

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace tandem {

struct allocation_stats {
  std::int64_t live_blocks;   // blocks handed out and not yet returned
  std::int64_t live_bytes;    // their rounded sizes
  std::int64_t allocations;   // calls to allocate since the start
};

namespace detail {

class caching_allocator {
 public:
  static constexpr std::size_t alignment = 64;

  static void* allocate(std::size_t bytes) {
    std::size_t rounded = size_class(bytes);
    if (cache_gone()) {
      count_retired(1, static_cast<std::int64_t>(rounded));
      return ::operator new(rounded, std::align_val_t{alignment});
    }
    thread_cache& cache = local();
    cache.counts.add(1, static_cast<std::int64_t>(rounded));
    auto& bin = cache.bins[bin_index(rounded)];
    if (!bin.empty()) {
      void* block = bin.back();
      bin.pop_back();
      cache.cached_bytes -= rounded;
      return block;
    }
    return ::operator new(rounded, std::align_val_t{alignment});
  }

  static void deallocate(void* block, std::size_t bytes) noexcept {
    if (!block) return;
    std::size_t rounded = size_class(bytes);
    if (cache_gone()) {
      count_retired(-1, -static_cast<std::int64_t>(rounded));
      ::operator delete(block, std::align_val_t{alignment});
      return;
    }
    thread_cache& cache = local();
    cache.counts.add(-1, -static_cast<std::int64_t>(rounded));
    if (cache.cached_bytes + rounded <= cache_limit) {
      try {
        cache.bins[bin_index(rounded)].push_back(block);
        cache.cached_bytes += rounded;
        return;
      } catch (const std::bad_alloc&) {
      }
    }
    ::operator delete(block, std::align_val_t{alignment});
  }

  // Sums the counters of every thread, living or gone.
  static allocation_stats stats() {
    std::lock_guard lock(registry().mutex);
    allocation_stats total = registry().retired;
    for (const thread_counts* counts : registry().threads) {
      total.live_blocks += counts->live_blocks.load(std::memory_order_relaxed);
      total.live_bytes += counts->live_bytes.load(std::memory_order_relaxed);
      total.allocations += counts->allocations.load(std::memory_order_relaxed);
    }
    return total;
  }

  // Returns the calling thread's cached blocks to the system.
  static void release_cached() noexcept {
    if (!cache_gone()) local().release();
  }

  // Sizes round up to 64 bytes, then to one of four steps per power of two, so
  // a reused block wastes at most a quarter of its size.
  static std::size_t size_class(std::size_t bytes) {
    if (bytes <= 256) return bytes <= 64 ? 64 : (bytes + 63) / 64 * 64;
    std::size_t top = std::bit_floor(bytes - 1);
    std::size_t quarter = top / 4;
    return (bytes + quarter - 1) / quarter * quarter;
  }

 private:
  static constexpr std::size_t cache_limit = std::size_t{1} << 30;
  static constexpr std::size_t bin_count = 4 * 64;

  static std::size_t bin_index(std::size_t rounded) {
    if (rounded <= 256) return rounded / 64 - 1;
    std::size_t top = std::bit_floor(rounded - 1);
    std::size_t step = (rounded - top) / (top / 4);
    return static_cast<std::size_t>(std::countr_zero(top)) * 4 + step - 1;
  }

  // One thread's counters: written only by that thread (plain relaxed
  // stores, no locked instruction on the hot path), read by stats().
  struct thread_counts {
    std::atomic<std::int64_t> live_blocks{0}, live_bytes{0}, allocations{0};
    void add(std::int64_t blocks, std::int64_t bytes) {
      live_blocks.store(live_blocks.load(std::memory_order_relaxed) + blocks, std::memory_order_relaxed);
      live_bytes.store(live_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
      if (blocks > 0) allocations.store(allocations.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
  };

  struct counts_registry {
    std::mutex mutex;
    std::vector<const thread_counts*> threads;
    allocation_stats retired{0, 0, 0};
  };
  static counts_registry& registry() {
    static counts_registry* r = new counts_registry;  // never destroyed: threads may exit after static destruction
    return *r;
  }
  static void count_retired(std::int64_t blocks, std::int64_t bytes) {
    std::lock_guard lock(registry().mutex);
    registry().retired.live_blocks += blocks;
    registry().retired.live_bytes += bytes;
    if (blocks > 0) ++registry().retired.allocations;
  }

  struct thread_cache {
    std::array<std::vector<void*>, bin_count> bins;
    std::size_t cached_bytes = 0;
    thread_counts counts;

    thread_cache() {
      std::lock_guard lock(registry().mutex);
      registry().threads.push_back(&counts);
    }
    void release() noexcept {
      for (auto& bin : bins) {
        for (void* block : bin) ::operator delete(block, std::align_val_t{alignment});
        bin.clear();
      }
      cached_bytes = 0;
    }
    ~thread_cache() {
      release();
      std::lock_guard lock(registry().mutex);
      auto& threads = registry().threads;
      threads.erase(std::find(threads.begin(), threads.end(), &counts));
      registry().retired.live_blocks += counts.live_blocks.load(std::memory_order_relaxed);
      registry().retired.live_bytes += counts.live_bytes.load(std::memory_order_relaxed);
      registry().retired.allocations += counts.allocations.load(std::memory_order_relaxed);
      cache_gone() = true;
    }
  };
  // Set once a thread's cache is destroyed (at thread exit), so that blocks
  // freed later, by static objects at program exit, go straight back to the
  // system. A bool stays usable after thread_local destructors have run.
  static bool& cache_gone() noexcept {
    thread_local bool gone = false;
    return gone;
  }
  static thread_cache& local() {
    thread_local thread_cache cache;
    return cache;
  }
};

// The caching allocator for standard containers and allocate_shared: the
// small objects every op makes (storage headers, autograd nodes) come from
// the same per-thread bins as tensor buffers.
template <class T>
struct cached {
  using value_type = T;
  cached() = default;
  template <class U>
  cached(const cached<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(caching_allocator::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { caching_allocator::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const cached<U>&) const {
    return true;
  }
};

template <class T, class... A>
std::shared_ptr<T> make_cached(A&&... args) {
  return std::allocate_shared<T>(cached<T>{}, std::forward<A>(args)...);
}

}  // namespace detail

// Live tensor memory, as the caching allocator sees it.
inline allocation_stats memory_stats() { return detail::caching_allocator::stats(); }

}  // namespace tandem
