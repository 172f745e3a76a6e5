#pragma once
// A caching allocator for tensor buffers. Eager code allocates a result for
// every op; returning freed blocks to a per-thread cache keeps small-tensor
// dispatch cheap (no lock, no system call) and spares large tensors the page
// faults of fresh memory. Counters make allocations observable to tests.

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
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
    counters().allocations.fetch_add(1, std::memory_order_relaxed);
    counters().live_blocks.fetch_add(1, std::memory_order_relaxed);
    counters().live_bytes.fetch_add(static_cast<std::int64_t>(rounded), std::memory_order_relaxed);
    auto& bin = local().bins[bin_index(rounded)];
    if (!bin.empty()) {
      void* block = bin.back();
      bin.pop_back();
      local().cached_bytes -= rounded;
      return block;
    }
    return ::operator new(rounded, std::align_val_t{alignment});
  }

  static void deallocate(void* block, std::size_t bytes) noexcept {
    if (!block) return;
    std::size_t rounded = size_class(bytes);
    counters().live_blocks.fetch_sub(1, std::memory_order_relaxed);
    counters().live_bytes.fetch_sub(static_cast<std::int64_t>(rounded), std::memory_order_relaxed);
    auto& cache = local();
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

  static allocation_stats stats() {
    return {counters().live_blocks.load(std::memory_order_relaxed),
            counters().live_bytes.load(std::memory_order_relaxed),
            counters().allocations.load(std::memory_order_relaxed)};
  }

  // Returns the calling thread's cached blocks to the system.
  static void release_cached() noexcept { local().release(); }

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

  struct shared_counters {
    std::atomic<std::int64_t> live_blocks{0}, live_bytes{0}, allocations{0};
  };
  static shared_counters& counters() {
    static shared_counters c;
    return c;
  }

  struct thread_cache {
    std::array<std::vector<void*>, bin_count> bins;
    std::size_t cached_bytes = 0;
    void release() noexcept {
      for (auto& bin : bins) {
        for (void* block : bin) ::operator delete(block, std::align_val_t{alignment});
        bin.clear();
      }
      cached_bytes = 0;
    }
    ~thread_cache() { release(); }
  };
  static thread_cache& local() {
    thread_local thread_cache cache;
    return cache;
  }
};

}  // namespace detail

// Live tensor memory, as the caching allocator sees it.
inline allocation_stats memory_stats() { return detail::caching_allocator::stats(); }

}  // namespace tandem
