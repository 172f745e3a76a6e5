// Float sin and cos on 4096 floats in cache, one thread: tandem's (the
// inline reduction and polynomials of detail/math.hpp, as every tandem
// kernel runs them) beside xsimd's (what tandem used before), for sin
// alone and for sin and cos of the same x (a sine and its derivative, as a
// fused gradient computes them: tandem's share one reduction). Each reports
// its largest error in ulp against double, over every 4099th float of
// [-7000, 7000] (counter max_ulp; the fast reduction ends at 6400).
//
//   ./build/release/bench/bench_sincos
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include "chain.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using batch = xsimd::batch<float>;
namespace math = tandem::detail::math;
constexpr std::size_t size = 4096;

// `apply(in, out, n)` writes f(x) for n floats x, where f is sin, or sin +
// cos (both read from one evaluation; the error is the larger of the two's).
template <class Apply>
double max_ulp(Apply apply, bool with_cos) {
  std::vector<float> x;
  for (std::uint32_t bits = 0; bits <= std::bit_cast<std::uint32_t>(7000.0f); bits += 4099) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  x.resize(x.size() / batch::size * batch::size);
  auto ulps = [](float got, double want) {
    float rounded = static_cast<float>(std::fabs(want));
    return std::fabs(got - want) / (std::nextafter(rounded, 2.0f) - rounded);
  };
  std::vector<float> s(x.size()), c(x.size());
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); i += batch::size) {
    auto [sine, cosine] = apply(batch::load_unaligned(x.data() + i));
    sine.store_unaligned(s.data() + i);
    cosine.store_unaligned(c.data() + i);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, ulps(s[i], std::sin(static_cast<double>(x[i]))));
    if (with_cos) worst = std::max(worst, ulps(c[i], std::cos(static_cast<double>(x[i]))));
  }
  return worst;
}

// `apply(x)` returns {sin x, cos x} (cos only where with_cos).
template <class Apply>
void run(benchmark::State& state, Apply apply, bool with_cos) {
  std::vector<float> x = bench::in_cache_inputs(), y(size);
  for (auto _ : state) {
    for (std::size_t i = 0; i < size; i += batch::size) {
      auto [sine, cosine] = apply(batch::load_unaligned(x.data() + i));
      (with_cos ? sine + cosine : sine).store_unaligned(y.data() + i);
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(size));
  state.counters["max_ulp"] = max_ulp(apply, with_cos);
}

struct pair {
  batch sin, cos;
};

void sin_tandem(benchmark::State& state) {
  run(state, [](const batch& x) TANDEM_INLINE_LAMBDA { return pair{math::sin(x), batch(0.0f)}; }, false);
}
void sin_xsimd(benchmark::State& state) {
  run(state, [](const batch& x) TANDEM_INLINE_LAMBDA { return pair{xsimd::sin(x), batch(0.0f)}; }, false);
}
void sin_and_cos_tandem(benchmark::State& state) {
  run(state, [](const batch& x) TANDEM_INLINE_LAMBDA { return pair{math::sin(x), math::cos(x)}; }, true);
}
void sin_and_cos_xsimd(benchmark::State& state) {
  run(state, [](const batch& x) TANDEM_INLINE_LAMBDA { return pair{xsimd::sin(x), xsimd::cos(x)}; }, true);
}
BENCHMARK(sin_tandem);
BENCHMARK(sin_xsimd);
BENCHMARK(sin_and_cos_tandem);
BENCHMARK(sin_and_cos_xsimd);

}  // namespace

BENCHMARK_MAIN();
