// matmul throughput in FLOP/s on one thread: square sizes, and the shapes of
// an MLP step (forward X W, backward X^T G and G W^T, through views); the
// products of the GPT demo's training step at 1 and 2 threads (PyTorch's:
// python3 bench/gpt_pytorch.py --products); SGEMM on four shapes at 1 and 2
// threads, beside OpenBLAS's cblas_sgemm when libopenblas-dev is
// installed; the same products in bfloat16 (PyTorch's: python3
// bench/matmul_bf16_pytorch.py); and the core's FMA peak, the ceiling all
// of them answer to.
//
//   ./build/release/bench/bench_linalg --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <array>
#include <utility>

#include <xsimd/xsimd.hpp>

#include <tandem/tandem.hpp>

#ifdef TANDEM_BENCH_OPENBLAS
#include <cblas.h>
#endif

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

// Uniform values in [-1, 1) as T.
template <class T>
tensor<T> uniform_as(shape s, generator& gen) {
  return uniform(std::move(s), -1, 1, gen).template astype<T>();
}

// x: [m, k] times w: [k, n] (ranges 0-2), either operand read through a
// transposed view (ranges 3 and 4), on `threads` threads.
template <class T = float>
void time_views(benchmark::State& state, int threads, std::uint64_t seed) {
  set_num_threads(threads);
  std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  bool transposed_a = state.range(3) != 0, transposed_b = state.range(4) != 0;
  generator gen(seed);
  tensor<T> a = transposed_a ? uniform_as<T>({k, m}, gen).transpose(0, 1) : uniform_as<T>({m, k}, gen);
  tensor<T> b = transposed_b ? uniform_as<T>({n, k}, gen).transpose(0, 1) : uniform_as<T>({k, n}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b).data());
  report(state, double(m), double(k), double(n));
  set_num_threads(0);
}

void matmul_mlp(benchmark::State& state) { time_views(state, 1, 2); }

// The GPT demo's products (2,048 tokens of width 128, 4 heads; weights
// [out, in] as nn::linear keeps them): forward X W^T, the input's gradient
// G W, the weight's G^T X, on `threads` threads.
template <class T>
void matmul_gpt(benchmark::State& state) {
  time_views<T>(state, static_cast<int>(state.range(5)), 4);
}

void gpt_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "k", "n", "aT", "bT", "threads"});
  for (std::int64_t threads : {1, 2}) {
    b->Args({2048, 128, 384, 0, 1, threads});  // attention's q, k, v
    b->Args({2048, 128, 512, 0, 1, threads});  // the MLP's first layer
    b->Args({2048, 512, 128, 0, 1, threads});  // the MLP's second layer
    b->Args({2048, 384, 128, 0, 0, threads});  // q, k, v's input gradient
    b->Args({384, 2048, 128, 1, 0, threads});  // q, k, v's weight gradient
    b->Args({128, 2048, 512, 1, 0, threads});  // the second layer's weight gradient
  }
  b->UseRealTime();
}

// Independent chains of SIMD multiply-adds on one thread, as many as the
// registers hold (24 of AVX-512's 32, 12 of AVX2's 16; more than the FMA
// units times their latency): the core's floating-point peak with the ISA
// this program was built for.
void fma_peak(benchmark::State& state) {
  using batch = xsimd::batch<float>;
  constexpr int chains = batch::size >= 16 ? 24 : 12, steps = 1000;
  std::array<batch, chains> acc;
  for (int c = 0; c < chains; ++c) acc[c] = batch(0.001f * static_cast<float>(c));
  const batch a(0.9999f), b(0.0001f);
  for (auto _ : state) {
    for (int s = 0; s < steps; ++s)
      // Unrolled, so that the chains stay in registers.
      _Pragma("GCC unroll 24") for (int c = 0; c < chains; ++c) acc[c] = xsimd::fma(acc[c], a, b);
    // Their sum escapes, not the array: an escaped array stays in memory.
    batch sum(0.0f);
    for (int c = 0; c < chains; ++c) sum += acc[c];
    benchmark::DoNotOptimize(sum);
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * chains * steps * batch::size,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// C[m, n] = A[m, k] B[k, n], row-major and contiguous, on `threads` threads.
template <class T>
void gemm_tandem(benchmark::State& state) {
  std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  set_num_threads(static_cast<int>(state.range(3)));
  generator gen(3);
  tensor<T> a = uniform_as<T>({m, k}, gen), b = uniform_as<T>({k, n}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b).data());
  report(state, double(m), double(k), double(n));
  set_num_threads(0);
}

#ifdef TANDEM_BENCH_OPENBLAS
void sgemm_openblas(benchmark::State& state) {
  std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  openblas_set_num_threads(static_cast<int>(state.range(3)));
  generator gen(3);
  tensor<float> a = uniform({m, k}, -1, 1, gen), b = uniform({k, n}, -1, 1, gen), c = zeros({m, n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                1.0f, a.data(), static_cast<int>(k), b.data(), static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
    benchmark::ClobberMemory();
  }
  report(state, double(m), double(k), double(n));
}
#endif

void sgemm_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "k", "n", "threads"});
  for (std::int64_t threads : {1, 2})
    for (auto [m, k, n] : {std::array<std::int64_t, 3>{1024, 1024, 1024}, {128, 784, 256}, {128, 256, 256}, {128, 256, 10}})
      b->Args({m, k, n, threads});
  b->UseRealTime();
}

}  // namespace

BENCHMARK_TEMPLATE(gemm_tandem, float)->Name("sgemm_tandem")->Apply(sgemm_shapes);
// tandem:: qualified: OpenBLAS's headers declare a bfloat16 of their own.
BENCHMARK_TEMPLATE(gemm_tandem, tandem::bfloat16)->Name("bf16_gemm_tandem")->Apply(sgemm_shapes);
#ifdef TANDEM_BENCH_OPENBLAS
BENCHMARK(sgemm_openblas)->Apply(sgemm_shapes);
#endif
BENCHMARK_TEMPLATE(matmul_gpt, float)->Name("matmul_gpt")->Apply(gpt_shapes);
BENCHMARK_TEMPLATE(matmul_gpt, tandem::bfloat16)->Name("bf16_matmul_gpt")->Apply(gpt_shapes);
BENCHMARK(fma_peak);
BENCHMARK(matmul_square)->Arg(128)->Arg(256)->Arg(512)->Arg(1024);
BENCHMARK(matmul_mlp)
    ->ArgNames({"m", "k", "n", "aT", "bT"})
    ->Args({128, 784, 256, 0, 0})
    ->Args({784, 128, 256, 1, 0})
    ->Args({128, 256, 256, 0, 1});

BENCHMARK_MAIN();
