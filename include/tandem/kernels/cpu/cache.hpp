#pragma once
// What the CPU kernels know of the machine's data caches: the L1 that sizes
// GEMM's passes over C, the L2 that sizes its blocks of B, and the output
// size past which an elementwise loop writes around the caches.

#include <algorithm>
#include <cstdint>

#if __has_include(<unistd.h>)
#include <unistd.h>
#endif

namespace tandem::detail {

// The CPU's L1 data cache per core, in bytes (32 KiB where the system does
// not say).
inline std::int64_t l1_data_cache_bytes() {
  static const std::int64_t bytes = [] {
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    const long reported = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    if (reported >= 4096) return static_cast<std::int64_t>(reported);
#endif
    return std::int64_t{32768};
  }();
  return bytes;
}

// The CPU's L2 cache per core, in bytes (1 MiB where the system does not
// say).
inline std::int64_t l2_cache_bytes() {
  static const std::int64_t bytes = [] {
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (reported >= 65536) return static_cast<std::int64_t>(reported);
#endif
    return std::int64_t{1} << 20;
  }();
  return bytes;
}

// Outputs larger than this are written with streaming stores. A cached
// store first reads its line from memory (a third of a one-input op's
// traffic), and an output far larger than the caches keeps none of itself
// there for the next reader anyway, only evicting the inputs. Where the
// output would still be in cache for the next op, streaming is a loss.
// Half the last-level cache, at most 32 MiB: a virtual machine reports its
// host's whole shared cache (480 MiB on the Xeon measured) and gets a share
// of it. On that Xeon, one thread, `y = x*x + 1` then `z = y*y + 1`: 16 MiB
// outputs ran both steps 1.3x slower streamed (y came back from memory),
// 64 MiB outputs 1.36x faster (docs/benchmarks/cpu_kernels.md).
inline std::int64_t streaming_output_bytes() {
  static const std::int64_t bytes = [] {
    constexpr std::int64_t most = std::int64_t{32} << 20;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    long reported = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (reported <= 0) reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (reported >= 65536) return std::min(most, static_cast<std::int64_t>(reported) / 2);
#endif
    return most;
  }();
  return bytes;
}

}  // namespace tandem::detail
