// Eager elementwise throughput beside its limits, in one binary:
//   stream_copy   the machine's copy bandwidth (read n, write n), on the same threads
//   hand_*        a hand-written loop, one pass (what fusion can reach)
//   eager_*       tandem eager ops (one pass and one buffer per op)
// Bytes per element count only the inputs read and the output written, so
// the chain's eager/hand ratio is the cost of not fusing.
//
//   ./build/release/bench/bench_elementwise --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include "chain.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace tandem;

namespace {

constexpr std::int64_t small = 4096, large = 16 * 1024 * 1024;

using bench::chain;
using bench::input;

void stream_copy(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<float> a = input(n, 1), c = zeros({n});
  for (auto _ : state) {
    const float* pa = a.data();
    float* pc = c.data();
    detail::parallel_for(n, detail::elementwise_grain, [&](std::int64_t lo, std::int64_t hi) {
      std::memcpy(pc + lo, pa + lo, static_cast<std::size_t>(hi - lo) * sizeof(float));
    });
    benchmark::DoNotOptimize(pc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 8);
}

void hand_add(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<float> a = input(n, 1), b = input(n, 2), c = zeros({n});
  for (auto _ : state) {
    const float *pa = a.data(), *pb = b.data();
    float* pc = c.data();
    detail::parallel_for(n, detail::elementwise_grain, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) pc[i] = pa[i] + pb[i];
    });
    benchmark::DoNotOptimize(pc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 12);
}

void eager_add(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<float> a = input(n, 1), b = input(n, 2);
  for (auto _ : state) {
    tensor<float> c = a + b;
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * n * 12);
}

void hand_chain(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<float> a = input(n, 1), c = zeros({n});
  for (auto _ : state) {
    const float* pa = a.data();
    float* pc = c.data();
    detail::parallel_for(n, detail::elementwise_grain, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) pc[i] = chain(pa[i]);
    });
    benchmark::DoNotOptimize(pc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 8);
}

void eager_chain(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<float> a = input(n, 1);
  for (auto _ : state) {
    tensor<float> c = chain(a);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * n * 8);
}

}  // namespace

BENCHMARK(stream_copy)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(hand_add)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(eager_add)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(hand_chain)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(eager_chain)->Arg(small)->Arg(large)->UseRealTime();

BENCHMARK_MAIN();
