#pragma once
// Attention dropout's draw, shared by the CPU's and the GPU's fused
// attention (kernels/cpu/attention.hpp, kernels/cuda/attention_rows.hpp) and
// the composed form (ops/attention.hpp), so that a seed drops the same
// (query, key) pairs on every device.

#include <cstdint>

#include "tandem/core/config.hpp"

namespace tandem::detail {

// Whether dropout keeps query i's key j in head n: a counter-based hash, so
// that the backward (and any thread) draws what the forward drew without a
// stored mask. Keeps when the hash is at or past `threshold` (the dropout
// probability times 2^64).
TANDEM_HOST_DEVICE inline bool attention_keeps(std::uint64_t seed, std::int64_t n, std::int64_t i, std::int64_t j,
                                               std::uint64_t threshold) {
  std::uint64_t z = seed ^ (static_cast<std::uint64_t>(n) * 0x9E3779B97F4A7C15ull) ^
                    (static_cast<std::uint64_t>(i) * 0xC2B2AE3D27D4EB4Full) ^
                    (static_cast<std::uint64_t>(j) * 0x165667B19E3779F9ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z >= threshold;
}

// The threshold for a dropout probability in [0, 1).
inline std::uint64_t attention_drop_threshold(double dropout) {
  return static_cast<std::uint64_t>(dropout * 18446744073709551616.0);
}

}  // namespace tandem::detail
