#pragma once
// Random tensors from an explicit, seeded generator. Element i of a draw is a
// pure function of (seed, position of the draw, i) through the Philox4x32-10
// counter-based generator, so the same seed gives the same numbers on every
// run, machine and thread count, however the work is split. A draw for a GPU
// is made on the host and copied there: the same numbers on either device.

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem {

class generator {
 public:
  explicit generator(std::uint64_t seed = 0) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  // Reserves `count` counters for one draw and returns the first.
  std::uint64_t take(std::uint64_t count) {
    std::uint64_t first = next_;
    next_ += count;
    return first;
  }

 private:
  std::uint64_t seed_;
  std::uint64_t next_ = 0;
};

namespace detail {

// Four 32-bit random words for one counter (Salmon et al., SC'11).
inline std::array<std::uint32_t, 4> philox(std::uint64_t seed, std::uint64_t counter) {
  std::uint32_t c0 = static_cast<std::uint32_t>(counter), c1 = static_cast<std::uint32_t>(counter >> 32), c2 = 0,
                c3 = 0;
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0;
    std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * c2;
    std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<std::uint32_t>(p1);
    c3 = static_cast<std::uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

// A double in [0, 1) from 53 random bits.
inline double unit_double(std::uint32_t hi, std::uint32_t lo) {
  return static_cast<double>(((std::uint64_t{hi} << 32) | lo) >> 11) * 0x1.0p-53;
}

template <element T, class Draw>
tensor<T> draw(shape s, generator& gen, Draw one) {
  tensor<T> out(std::move(s));
  std::uint64_t first = gen.take(static_cast<std::uint64_t>(out.numel()));
  T* p = out.data();
  std::uint64_t seed = gen.seed();
  parallel_for(out.numel(), 16384, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) p[i] = one(philox(seed, first + static_cast<std::uint64_t>(i)));
  });
  return out;
}

}  // namespace detail

// Values uniform in [low, high).
template <floating_element T = float>
tensor<T> uniform(shape s, double low, double high, generator& gen, device where = device::cpu) {
  if (!(low < high))
    throw value_error("tandem::uniform: low must be below high (got " + std::to_string(low) + ", " +
                      std::to_string(high) + ")");
  return detail::draw<T>(std::move(s), gen, [=](const std::array<std::uint32_t, 4>& w) {
    T x = static_cast<T>(low + (high - low) * detail::unit_double(w[0], w[1]));
    return x < static_cast<T>(high) ? x : std::nextafter(static_cast<T>(high), static_cast<T>(low));
  }).to(where);
}

// Normally distributed values (Box-Muller).
template <floating_element T = float>
tensor<T> normal(shape s, double mean, double stddev, generator& gen, device where = device::cpu) {
  if (!(stddev >= 0)) throw value_error("tandem::normal: stddev must not be negative (got " + std::to_string(stddev) + ")");
  return detail::draw<T>(std::move(s), gen, [=](const std::array<std::uint32_t, 4>& w) {
    double u1 = 1.0 - detail::unit_double(w[0], w[1]);
    double u2 = detail::unit_double(w[2], w[3]);
    return static_cast<T>(mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
  }).to(where);
}

// Integers uniform in [low, high).
template <element T = std::int64_t>
tensor<T> integers(shape s, std::int64_t low, std::int64_t high, generator& gen, device where = device::cpu) {
  if (!(low < high))
    throw value_error("tandem::integers: low must be below high (got " + std::to_string(low) + ", " +
                      std::to_string(high) + ")");
  auto range = static_cast<std::uint64_t>(high - low);
  return detail::draw<T>(std::move(s), gen, [=](const std::array<std::uint32_t, 4>& w) {
    std::uint64_t bits = (std::uint64_t{w[0]} << 32) | w[1];
    __extension__ using wide = unsigned __int128;
    auto pick = static_cast<std::uint64_t>((static_cast<wide>(bits) * range) >> 64);
    return static_cast<T>(low + static_cast<std::int64_t>(pick));
  }).to(where);
}

}  // namespace tandem
