#pragma once
// Division by an axis's extent in the GPU's strided kernels, as a
// multiply-high, an add and a shift (Granlund and Montgomery, "Division by
// invariant integers using multiplication", 1994). A GPU has no integer
// divider: a 64-bit division is a software routine of dozens of
// instructions, which made every strided kernel several times slower than
// its memory traffic (a broadcast multiply of 64M floats: 7.1 ms, against
// 0.19 ms dense, on an H100). Host and device code, so the host tests it.

#include <cstdint>

#include "tandem/core/config.hpp"

namespace tandem::detail {

// n / divisor for every n below 2^31, the divisor from 1 to 2^31.
class axis_divisor {
 public:
  axis_divisor() = default;
  explicit axis_divisor(std::uint32_t divisor) {
    while ((std::uint64_t{1} << shift_) < divisor) ++shift_;
    // The least magic with floor((magic + 2^32) n / 2^(32 + shift)) = n / divisor.
    magic_ = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift_) - divisor)) /
                                            divisor +
                                        1);
  }

  TANDEM_HOST_DEVICE std::uint32_t quotient(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t high = __umulhi(n, magic_);
#else
    const auto high = static_cast<std::uint32_t>((std::uint64_t{n} * magic_) >> 32);
#endif
    // high <= n < 2^31: the sum does not wrap.
    return (high + n) >> shift_;
  }

 private:
  std::uint32_t magic_ = 1, shift_ = 0;
};

}  // namespace tandem::detail
