#pragma once
// The one numerical helper every op test uses: seeded inputs, the sizes that
// hit SIMD tails, the layouts that hit the strided paths (a stride-2 view at
// an odd offset, a transposed view), and a comparison against values computed
// in double with explicit NaN/inf handling and per-type tolerances.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tandem/tandem.hpp>

namespace tandem::test {

// The largest size runs every parallel path (several chunks of the
// elementwise grain and of the reduction block). Under AddressSanitizer,
// where every access is checked and most tests run unoptimized, it is a
// tenth as large, with the same remainder modulo 1,024, so the same SIMD
// tail at every vector width and unrolling: the same paths at a tenth of
// the time.
#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_TEST_UNDER_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TANDEM_TEST_UNDER_ADDRESS_SANITIZER 1
#endif
#endif
#ifdef TANDEM_TEST_UNDER_ADDRESS_SANITIZER
inline constexpr std::int64_t largest_size = 99907;
#else
inline constexpr std::int64_t largest_size = 1000003;
#endif

inline const std::vector<std::int64_t> tail_sizes{0, 1, 7, 17, 33, largest_size};

// Steps of `h = h * h + h` in the tests of deep graphs that read a value
// twice per step. clang 14 looks up every operator on such a graph type in
// time exponential in its depth (argument-dependent lookup walks the type
// as a tree: docs/benchmarks/compile_time.md, "clang 14"), so its build
// takes 8 steps, which it compiles in seconds; g++ takes the full 30. The
// sanitizer build (g++ defines __SANITIZE_ADDRESS__) takes 8 too: the depth
// tests what compiles, which the release build checks, and the 30 steps
// cost its build 47 s of CPU in gradients.cpp alone (138 s against 91).
#if defined(__clang__) || defined(__SANITIZE_ADDRESS__)
inline constexpr std::size_t deep_steps = 8;
#else
inline constexpr std::size_t deep_steps = 30;
#endif

template <class T>
struct tolerance {
  static constexpr double rel = std::is_same_v<T, float> ? 2e-6 : std::is_same_v<T, double> ? 1e-13 : 0;
  static constexpr double abs = std::is_same_v<T, float> ? 1e-6 : std::is_same_v<T, double> ? 1e-14 : 0;
};

// Uniform values in [low, high), rounded to T (integers: whole numbers).
template <class T>
tensor<T> random_tensor(const shape& s, double low, double high, std::uint64_t seed) {
  generator gen(seed);
  tensor<double> values = uniform<double>(s, low, high, gen);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    tensor<double> whole(s);
    for (std::int64_t i = 0; i < values.numel(); ++i) whole.data()[i] = std::floor(values.data()[i]);
    return whole.astype<T>();
  } else if constexpr (std::is_same_v<T, bool>) {
    return (values > (low + high) / 2);
  } else {
    return values.astype<T>();
  }
}

// The same values as `base` in other memory layouts.
template <class T>
std::vector<std::pair<std::string, tensor<T>>> layouts(const tensor<T>& base) {
  std::vector<std::pair<std::string, tensor<T>>> out{{"contiguous", base}};
  if (base.dim() >= 1) {
    shape wide = base.shape();
    wide.back() = 2 * wide.back() + 1;
    tensor<T> buffer = zeros<T>(wide);
    tensor<T> odd = buffer.slice(-1, 1, {}, 2);
    odd.assign(base);
    out.emplace_back("stride 2, odd offset", odd);
  }
  if (base.dim() >= 2) {
    tensor<T> flipped = empty<T>(base.transpose(0, 1).shape());
    flipped.assign(base.transpose(0, 1));
    out.emplace_back("transposed", flipped.transpose(0, 1));
  }
  return out;
}

// How many tandem buffers `run` allocates.
template <class F>
std::int64_t allocations_during(F&& run) {
  std::int64_t before = memory_stats().allocations;
  run();
  return memory_stats().allocations - before;
}

// Row-major values of any tensor, as double.
template <class T>
std::vector<double> values_of(const tensor<T>& x) {
  std::vector<double> out;
  for (T v : x.to_vector()) out.push_back(static_cast<double>(v));
  return out;
}

inline bool close(double got, double want, double rel, double abs) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= abs + rel * std::abs(want);
}

// Checks every element; reports the first mismatch with its context.
template <class T>
void check_values(const tensor<T>& got, const shape& want_shape, const std::vector<double>& want,
                  const std::string& context, double rel = tolerance<T>::rel, double abs = tolerance<T>::abs) {
  INFO(context);
  REQUIRE(got.shape() == want_shape);
  std::vector<double> have = values_of(got);
  REQUIRE(have.size() == want.size());
  for (std::size_t i = 0; i < have.size(); ++i) {
    if (!close(have[i], want[i], rel, abs)) {
      INFO("element " << i << ": got " << have[i] << ", want " << want[i]);
      CHECK(false);
      return;
    }
  }
}

// Checks that two tensors agree: shape and every element.
template <class T>
void check_values(const tensor<T>& got, const tensor<T>& want, const std::string& context,
                  double rel = tolerance<T>::rel, double abs = tolerance<T>::abs) {
  check_values(got, want.shape(), values_of(want), context, rel, abs);
}

// Calls f with the multi-index of every element of `s` in row-major order.
inline void for_each_index(const shape& s, const std::function<void(const std::vector<std::int64_t>&)>& f) {
  std::int64_t n = numel(s);
  std::vector<std::int64_t> index(s.size(), 0);
  for (std::int64_t flat = 0; flat < n; ++flat) {
    f(index);
    for (std::size_t axis = s.size(); axis-- > 0;) {
      if (++index[axis] < s[axis]) break;
      index[axis] = 0;
    }
  }
}

// The value of x (as double) at `index` of a broadcast shape.
template <class T>
double at_broadcast(const tensor<T>& x, const std::vector<std::int64_t>& index) {
  std::int64_t offset = 0;
  std::size_t lead = index.size() - x.shape().size();
  for (std::size_t d = 0; d < x.shape().size(); ++d)
    offset += (x.shape()[d] == 1 ? 0 : index[lead + d]) * x.strides()[d];
  return static_cast<double>(x.data()[offset]);
}

// What std::cout << x prints.
template <class T>
std::string printed(const tensor<T>& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace tandem::test
