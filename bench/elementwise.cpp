// Eager elementwise throughput beside its limits, in one binary:
//   stream_copy   the machine's copy bandwidth (read n, write n), on the same threads
//   hand_*        a hand-written loop, one pass (what fusion can reach)
//   eager_*       tandem eager ops (one pass and one buffer per op)
//   typed_*       an op, a reduction, a conversion and a static graph in
//                 float, bfloat16 and float16 (16-bit: widened to float and
//                 rounded as stored)
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

// Bytes of one element of T.
template <class T>
std::int64_t element_bytes() {
  return static_cast<std::int64_t>(sizeof(T));
}

template <class T>
void typed_exp(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<T> a = input(n, 1).astype<T>();
  for (auto _ : state) benchmark::DoNotOptimize(exp(a).data());
  state.SetBytesProcessed(state.iterations() * n * 2 * element_bytes<T>());
}

template <class T>
void typed_multiply(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<T> a = input(n, 1).astype<T>(), b = input(n, 2).astype<T>();
  for (auto _ : state) benchmark::DoNotOptimize((a * b).data());
  state.SetBytesProcessed(state.iterations() * n * 3 * element_bytes<T>());
}

template <class T>
void typed_sum(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<T> a = input(n, 1).astype<T>();
  for (auto _ : state) benchmark::DoNotOptimize(sum(a).data());
  state.SetBytesProcessed(state.iterations() * n * element_bytes<T>());
}

// float to T and back.
template <class T>
void typed_round_trip(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<float> a = input(n, 1);
  for (auto _ : state) benchmark::DoNotOptimize(a.astype<T>().template astype<float>().data());
  state.SetBytesProcessed(state.iterations() * n * 2 * (4 + element_bytes<T>()));
}

// The 8-op chain as one static graph: one pass, T in and out.
template <class T>
void typed_graph(benchmark::State& state) {
  std::int64_t n = state.range(0);
  tensor<T> a = input(n, 1).astype<T>();
  auto graph = jit([](const auto& x) { return chain(x); });
  for (auto _ : state) benchmark::DoNotOptimize(graph(a).data());
  state.SetBytesProcessed(state.iterations() * n * 2 * element_bytes<T>());
}

}  // namespace

BENCHMARK(stream_copy)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(hand_add)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(eager_add)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(hand_chain)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK(eager_chain)->Arg(small)->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_exp, float)->Name("typed_exp<float>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_exp, bfloat16)->Name("typed_exp<bfloat16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_exp, float16)->Name("typed_exp<float16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_multiply, float)->Name("typed_multiply<float>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_multiply, bfloat16)->Name("typed_multiply<bfloat16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_multiply, float16)->Name("typed_multiply<float16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_sum, float)->Name("typed_sum<float>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_sum, bfloat16)->Name("typed_sum<bfloat16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_sum, float16)->Name("typed_sum<float16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_round_trip, bfloat16)->Name("typed_round_trip<bfloat16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_round_trip, float16)->Name("typed_round_trip<float16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_graph, float)->Name("typed_graph<float>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_graph, bfloat16)->Name("typed_graph<bfloat16>")->Arg(large)->UseRealTime();
BENCHMARK_TEMPLATE(typed_graph, float16)->Name("typed_graph<float16>")->Arg(large)->UseRealTime();

BENCHMARK_MAIN();
