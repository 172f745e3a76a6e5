// matmul throughput in FLOP/s on one thread: square sizes, and the shapes of
// an MLP step (forward X W, backward X^T G and G W^T, through views).
//
//   ./build/release/bench/bench_linalg --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

using namespace tandem;

namespace {

void report(benchmark::State& state, double m, double k, double n) {
  state.counters["FLOP/s"] = benchmark::Counter(2 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
}

void matmul_square(benchmark::State& state) {
  set_num_threads(1);
  std::int64_t n = state.range(0);
  generator gen(1);
  tensor<float> a = uniform({n, n}, -1, 1, gen), b = uniform({n, n}, -1, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b).data());
  report(state, double(n), double(n), double(n));
  set_num_threads(0);
}

// x: [m, k] times w: [k, n], with either operand read through a transposed view.
void matmul_mlp(benchmark::State& state) {
  set_num_threads(1);
  std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  bool transposed_a = state.range(3) != 0, transposed_b = state.range(4) != 0;
  generator gen(2);
  tensor<float> a = transposed_a ? uniform({k, m}, -1, 1, gen).transpose(0, 1) : uniform({m, k}, -1, 1, gen);
  tensor<float> b = transposed_b ? uniform({n, k}, -1, 1, gen).transpose(0, 1) : uniform({k, n}, -1, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b).data());
  report(state, double(m), double(k), double(n));
  set_num_threads(0);
}

}  // namespace

BENCHMARK(matmul_square)->Arg(128)->Arg(256)->Arg(512)->Arg(1024);
BENCHMARK(matmul_mlp)
    ->ArgNames({"m", "k", "n", "aT", "bT"})
    ->Args({128, 784, 256, 0, 0})
    ->Args({784, 128, 256, 1, 0})
    ->Args({128, 256, 256, 0, 1});

BENCHMARK_MAIN();
