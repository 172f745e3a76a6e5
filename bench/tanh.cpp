// Float tanh on 4096 floats in cache, one thread: tandem's (the rational
// approximation of detail/math.hpp, as every tandem kernel runs it),
// xsimd's (exp-based, what tandem used before) and Eigen's (a rational
// approximation too; when libeigen3-dev is installed). Each reports its
// largest error in ulp against tanh in double, over every 257th float of
// [-10, 10] (counter max_ulp).
//
//   ./build/release/bench/bench_tanh
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include "chain.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#ifdef TANDEM_BENCH_EIGEN
#include <Eigen/Core>
#endif

namespace {

using batch = xsimd::batch<float>;
constexpr std::size_t size = 4096;

// `apply(in, out, n)` writes tanh of n floats.
template <class Apply>
double max_ulp(Apply apply) {
  std::vector<float> x;
  for (std::uint32_t bits = 0; bits <= std::bit_cast<std::uint32_t>(10.0f); bits += 257) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  x.resize(x.size() / batch::size * batch::size);
  std::vector<float> y(x.size());
  apply(x.data(), y.data(), x.size());
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double want = std::tanh(static_cast<double>(x[i]));
    float rounded = static_cast<float>(std::fabs(want));
    worst = std::max(worst, std::fabs(y[i] - want) / (std::nextafter(rounded, 2.0f) - rounded));
  }
  return worst;
}

template <class Apply>
void run(benchmark::State& state, Apply apply) {
  std::vector<float> x = bench::in_cache_inputs(), y(size);
  for (auto _ : state) {
    apply(x.data(), y.data(), size);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(size));
  state.counters["max_ulp"] = max_ulp(apply);
}

template <class Tanh>
auto batched(Tanh tanh_of) {
  return [tanh_of](const float* in, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; i += batch::size) tanh_of(batch::load_unaligned(in + i)).store_unaligned(out + i);
  };
}

void tanh_tandem(benchmark::State& state) {
  run(state, batched([](const batch& x) { return tandem::detail::math::tanh(x); }));
}
void tanh_xsimd(benchmark::State& state) {
  run(state, batched([](const batch& x) { return xsimd::tanh(x); }));
}
BENCHMARK(tanh_tandem);
BENCHMARK(tanh_xsimd);

#ifdef TANDEM_BENCH_EIGEN
void tanh_eigen(benchmark::State& state) {
  run(state, [](const float* in, float* out, std::size_t n) {
    auto count = static_cast<Eigen::Index>(n);
    Eigen::Map<Eigen::ArrayXf>(out, count) = Eigen::Map<const Eigen::ArrayXf>(in, count).tanh();
  });
}
BENCHMARK(tanh_eigen);
#endif

}  // namespace

BENCHMARK_MAIN();
