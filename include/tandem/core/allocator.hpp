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
#include <new>
#include <utility>
#include <vector>

#include "tandem/core/config.hpp"

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

  static void* allocate(std::size_t bytes);
  static void deallocate(void* block, std::size_t bytes) noexcept;
  // The same bins, not counted in stats(): for what a static graph's call
  // builds and drops before it returns (its memo, its bookkeeping), so that
  // a call's count is what it leaves behind.
  static void* allocate_uncounted(std::size_t bytes);
  static void deallocate_uncounted(void* block, std::size_t bytes) noexcept;
  enum class tally : bool { counted, uncounted };
  // Sums the counters of every thread, living or gone.
  static allocation_stats stats();
  // Returns the calling thread's cached blocks to the system.
  static void release_cached() noexcept;

  // Sizes round up to 64 bytes, then to one of four steps per power of two, so
  // a reused block wastes at most a quarter of its size.
  // (Quarters are powers of two: a mask, not a division, which cost every
  // allocation and every free two of its longest instructions.)
  static std::size_t size_class(std::size_t bytes) {
    if (bytes <= 256) return bytes <= 64 ? 64 : (bytes + 63) / 64 * 64;
    std::size_t quarter = std::bit_floor(bytes - 1) / 4;
    return (bytes + quarter - 1) & ~(quarter - 1);
  }

 private:
  static constexpr std::size_t cache_limit = std::size_t{1} << 30;
  static constexpr std::size_t bin_count = 4 * 64;

  static std::size_t bin_index(std::size_t rounded) {
    if (rounded <= 256) return rounded / 64 - 1;
    std::size_t top = std::bit_floor(rounded - 1);
    auto log_top = static_cast<std::size_t>(std::countr_zero(top));
    std::size_t step = (rounded - top) >> (log_top - 2);
    return log_top * 4 + step - 1;
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

  // Every thread's counters and those of threads gone, under a lock
  // (allocator-inl.hpp: <mutex> stays out of this header).
  struct counts_registry;
  static counts_registry& registry();
  static void count_retired(std::int64_t blocks, std::int64_t bytes);

  struct thread_cache {
    std::array<std::vector<void*>, bin_count> bins;
    std::size_t cached_bytes = 0;
    thread_counts counts;

    thread_cache();
    // A block of a rounded size from its bin, else a fresh one.
    void* take(std::size_t rounded);
    // Back to its bin, else (the cache full) to the system.
    void give(void* block, std::size_t rounded) noexcept;
    void release() noexcept;
    ~thread_cache();
  };
  // Set once a thread's cache is destroyed (at thread exit), so that blocks
  // freed later, by static objects at program exit, go straight back to the
  // system. A bool stays usable after thread_local destructors have run.
  static bool& cache_gone() noexcept;
  static thread_cache& local();
};

// The caching allocator for standard containers and allocate_shared: the
// small objects every op makes (storage headers, autograd nodes) come from
// the same per-thread bins as tensor buffers; uncounted, a static graph's
// per-call bookkeeping.
template <class T, caching_allocator::tally Counting = caching_allocator::tally::counted>
struct cached {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = cached<U, Counting>;
  };
  cached() = default;
  template <class U>
  cached(const cached<U, Counting>&) {}
  T* allocate(std::size_t n) {
    if constexpr (Counting == caching_allocator::tally::counted)
      return static_cast<T*>(caching_allocator::allocate(n * sizeof(T)));
    else
      return static_cast<T*>(caching_allocator::allocate_uncounted(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) {
    if constexpr (Counting == caching_allocator::tally::counted) caching_allocator::deallocate(p, n * sizeof(T));
    else caching_allocator::deallocate_uncounted(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const cached<U, Counting>&) const {
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

#if TANDEM_HEADER_ONLY
#include "tandem/core/allocator-inl.hpp"
#endif
