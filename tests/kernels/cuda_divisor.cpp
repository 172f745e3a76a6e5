// The GPU's strided kernels divide indices by the axes' extents with
// axis_divisor; it must be exact for every index below 2^31.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "tandem/kernels/cuda/divisor.hpp"

using tandem::detail::axis_divisor;

TEST_CASE("an axis divisor divides every index below 2^31 exactly") {
  constexpr std::uint32_t largest = (std::uint32_t{1} << 31) - 1;
  std::mt19937 gen(5);
  std::uniform_int_distribution<std::uint32_t> any_index(0, largest);
  std::vector<std::uint32_t> divisors{1, 2, 3, 5, 7, 9, 10, 14, 28, 196, 784, 1000003, 65535, 65536, 65537,
                                      (1u << 30) - 1, 1u << 30, (1u << 30) + 1, largest, 1u << 31};
  for (int shift = 0; shift <= 31; ++shift) divisors.push_back(1u << shift);
  for (int shift = 0; shift < 31; ++shift) divisors.push_back((1u << shift) + 3);
  std::uniform_int_distribution<std::uint32_t> any_divisor(1, std::uint32_t{1} << 31);
  for (int i = 0; i < 200; ++i) divisors.push_back(any_divisor(gen));
  for (std::uint32_t d : divisors) {
    const axis_divisor by(d);
    // The edges: 0, the multiples of d and their neighbours, the largest index.
    for (std::uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 2 * d, largest - 1, largest}) {
      if (n > largest) continue;
      INFO("n = " << n << ", d = " << d);
      CHECK(by.quotient(n) == n / d);
    }
    for (int i = 0; i < 2000; ++i) {
      const std::uint32_t n = any_index(gen);
      if (by.quotient(n) != n / d) {
        INFO("n = " << n << ", d = " << d);
        CHECK(by.quotient(n) == n / d);
      }
    }
  }
}
