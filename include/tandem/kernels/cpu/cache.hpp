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

// The size the system reports for the cache of `level` (1: L1 data, 2, 3),
// in bytes, or 0 where it reports none.
inline std::int64_t reported_cache_bytes(int level) {
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  const long reported =
      sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  return reported > 0 ? static_cast<std::int64_t>(reported) : 0;
#else
  (void)level;
  return 0;
#endif
}

// The CPU's L1 data cache per core, in bytes (32 KiB where the system does
// not say).
inline std::int64_t l1_data_cache_bytes() {
  static const std::int64_t reported = reported_cache_bytes(1);
  return reported >= 4096 ? reported : std::int64_t{32768};
}

// The CPU's L2 cache per core, in bytes (1 MiB where the system does not
// say).
inline std::int64_t l2_cache_bytes() {
  static const std::int64_t reported = reported_cache_bytes(2);
  return reported >= 65536 ? reported : std::int64_t{1} << 20;
}

// Outputs larger than this are written with streaming stores, by loops
// whose arithmetic is light (streaming_pays, elementwise.hpp). A cached
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
    std::int64_t reported = reported_cache_bytes(3);
    if (reported == 0) reported = reported_cache_bytes(2);
    return reported >= 65536 ? std::min(most, reported / 2) : most;
  }();
  return bytes;
}

}  // namespace tandem::detail
