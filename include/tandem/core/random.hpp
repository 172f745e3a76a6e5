#pragma once
// Random tensors from an explicit, seeded generator. Element i of a draw is a
// pure function of (seed, position of the draw, i) through the Philox4x32-10
// counter-based generator, so the same seed gives the same numbers on every
// run, machine and thread count, however the work is split. Each law turns
// one counter's words into one value by the same host-and-device code, so a
// draw made on a GPU (by the kernel <tandem/cuda.hpp> compiles) gives the
// host's numbers: uniform and integer draws bit for bit; normal ones within
// the few ulp by which the GPU's log and cos differ from the host's.

#include <cmath>
#include <cstdint>
#include <numbers>

#include "tandem/core/config.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
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

struct random_words {
  std::uint32_t word[4];
};

// Four 32-bit random words for one counter (Salmon et al., SC'11).
TANDEM_HOST_DEVICE inline random_words philox(std::uint64_t seed, std::uint64_t counter) {
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
  return {{c0, c1, c2, c3}};
}

// A double in [0, 1) from 53 random bits.
TANDEM_HOST_DEVICE inline double unit_double(std::uint32_t hi, std::uint32_t lo) {
  return static_cast<double>(((std::uint64_t{hi} << 32) | lo) >> 11) * 0x1.0p-53;
}

// The high half of a 64 x 64-bit product.
TANDEM_HOST_DEVICE inline std::uint64_t high_product(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  __extension__ using wide = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<wide>(a) * b) >> 64);
#endif
}

// low + width u, rounded after the product and after the sum on every
// device and build: nvcc fuses a product and a sum into one FMA by default,
// and g++ does where the target has FMA (gnu++ modes), which changes the
// last bit of some draws.
TANDEM_HOST_DEVICE inline double scaled_unit(double low, double width, double u) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(low, __dmul_rn(width, u));
#else
  double product = width * u;
#if defined(__GNUC__)
  asm("" : "+g"(product));  // an opaque value: not fused into the sum
#endif
  return low + product;
#endif
}

// The laws: one value from one counter's words. Their parameters are
// plain values so that a GPU kernel takes them by value.

// Uniform in [low, high); where rounding to T reaches high, the largest T
// below it.
template <class T>
struct uniform_law {
  double low, high;
  T below_high;
  TANDEM_HOST_DEVICE T operator()(const random_words& w) const {
    T x = static_cast<T>(scaled_unit(low, high - low, unit_double(w.word[0], w.word[1])));
    return x < static_cast<T>(high) ? x : below_high;
  }
};

// Normal (Box-Muller).
template <class T>
struct normal_law {
  double mean, stddev;
  TANDEM_HOST_DEVICE T operator()(const random_words& w) const {
    double u1 = 1.0 - unit_double(w.word[0], w.word[1]);
    double u2 = unit_double(w.word[2], w.word[3]);
    return static_cast<T>(mean + stddev * math::sqrt(-2.0 * math::log(u1)) * math::cos(2 * std::numbers::pi * u2));
  }
};

// Integers uniform in [low, low + range), by the high half of a 64-bit
// fraction times the range (Lemire's multiply, without its rejection step:
// the bias is below range / 2^64).
template <class T>
struct integer_law {
  std::int64_t low;
  std::uint64_t range;
  TANDEM_HOST_DEVICE T operator()(const random_words& w) const {
    std::uint64_t bits = (std::uint64_t{w.word[0]} << 32) | w.word[1];
    return static_cast<T>(low + static_cast<std::int64_t>(high_product(bits, range)));
  }
};

// A draw of `s` on `where`: counters first, first + 1, ... in row-major
// order. On a GPU, by the program's kernel for the law, or, in a program
// without one, on the host and copied: the same numbers either way.
template <element T, class Law>
tensor<T> draw(shape s, generator& gen, const Law& law, device where) {
  const std::int64_t count = numel(s);
  const std::uint64_t first = gen.take(static_cast<std::uint64_t>(count));
  const std::uint64_t seed = gen.seed();
  if (!where.is_cpu()) {
    if (auto kernel = cuda_random_slot<T, Law>.load(std::memory_order_acquire)) {
      tensor<T> out(std::move(s), where);
      kernel(law, where.index(), out.device_data(), count, seed, first);
      return out;
    }
  }
  tensor<T> out(std::move(s));
  T* p = out.data();
  parallel_for(count, 16384, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) p[i] = law(philox(seed, first + static_cast<std::uint64_t>(i)));
  });
  return where.is_cpu() ? out : out.to(where);
}

}  // namespace detail

// Values uniform in [low, high).
template <floating_element T = float>
tensor<T> uniform(shape s, double low, double high, generator& gen, device where = device::cpu) {
  if (!(low < high))
    throw value_error("tandem::uniform: low must be below high (got " + std::to_string(low) + ", " +
                      std::to_string(high) + ")");
  const detail::uniform_law<T> law{low, high, std::nextafter(static_cast<T>(high), static_cast<T>(low))};
  return detail::draw<T>(std::move(s), gen, law, where);
}

// Normally distributed values (Box-Muller).
template <floating_element T = float>
tensor<T> normal(shape s, double mean, double stddev, generator& gen, device where = device::cpu) {
  if (!(stddev >= 0)) throw value_error("tandem::normal: stddev must not be negative (got " + std::to_string(stddev) + ")");
  return detail::draw<T>(std::move(s), gen, detail::normal_law<T>{mean, stddev}, where);
}

// Integers uniform in [low, high).
template <element T = std::int64_t>
tensor<T> integers(shape s, std::int64_t low, std::int64_t high, generator& gen, device where = device::cpu) {
  if (!(low < high))
    throw value_error("tandem::integers: low must be below high (got " + std::to_string(low) + ", " +
                      std::to_string(high) + ")");
  const detail::integer_law<T> law{low, static_cast<std::uint64_t>(high - low)};
  return detail::draw<T>(std::move(s), gen, law, where);
}

}  // namespace tandem
