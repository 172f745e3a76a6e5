// What the profiler's hooks cost: the cached call of jit(x + y) and a
// 10-op eager chain on 16 floats (where a per-op cost shows most), and a
// backward, with no profiler recording (`off`) and with one recording
// (`on`). Built twice, header-only: bench_profiler_overhead with the hooks,
// bench_profiler_overhead_without_hooks with TANDEM_PROFILER_HOOKS=0 (no
// `on` cases there); bench/profiler_overhead.py runs the two in turns and
// prints the ratios (docs/benchmarks/profiler.md).

#include <benchmark/benchmark.h>

#include <optional>

#include <tandem/tandem.hpp>

namespace {

using tandem::tensor;

constexpr std::int64_t n = 16;

auto add = [](const auto& x, const auto& y) { return x + y; };

// The 10 ops of bench/call_overhead.cpp's graph, run eagerly.
tensor<float> ten_ops(const tensor<float>& x, const tensor<float>& y) {
  tensor<float> p = x * y + 1.0f;
  tensor<float> q = exp(p) - x;
  tensor<float> r = q * q / (y + 2.0f);
  return sigmoid(r) * p - tanh(q);
}

// Runs `body` with a profiler recording when `on`, restarted every 4096
// iterations (outside the timing) so that its events stay in memory.
template <class Body>
void timed(benchmark::State& state, bool on, Body body) {
  std::optional<tandem::profiler> recording;
  auto restart = [&] {
    if (!on) return;
    if (recording) recording->stop();
    recording.emplace();
    recording->start();
  };
  restart();
  std::int64_t i = 0;
  for (auto _ : state) {
    body();
    if (on && ++i % 4096 == 0) {
      state.PauseTiming();
      restart();
      state.ResumeTiming();
    }
  }
  if (recording) recording->stop();
}

void cached_add_call(benchmark::State& state, bool on) {
  tensor<float> x = tandem::full<float>({n}, 0.5f), y = tandem::full<float>({n}, 1.5f);
  auto graph = tandem::jit(add);
  benchmark::DoNotOptimize(graph(x, y));
  timed(state, on, [&] { benchmark::DoNotOptimize(graph(x, y)); });
}

void eager_chain(benchmark::State& state, bool on) {
  tensor<float> x = tandem::full<float>({n}, 0.5f), y = tandem::full<float>({n}, 1.5f);
  timed(state, on, [&] { benchmark::DoNotOptimize(ten_ops(x, y)); });
}

void eager_backward(benchmark::State& state, bool on) {
  tensor<float> x = tandem::full<float>({n}, 0.5f), y = tandem::full<float>({n}, 1.5f);
  x.set_requires_grad();
  timed(state, on, [&] {
    sum(ten_ops(x, y)).backward();
    x.zero_grad();
  });
}

BENCHMARK_CAPTURE(cached_add_call, off, false);
BENCHMARK_CAPTURE(eager_chain, off, false);
BENCHMARK_CAPTURE(eager_backward, off, false);
#if TANDEM_PROFILER_HOOKS
BENCHMARK_CAPTURE(cached_add_call, on, true);
BENCHMARK_CAPTURE(eager_chain, on, true);
BENCHMARK_CAPTURE(eager_backward, on, true);
#endif

}  // namespace

BENCHMARK_MAIN();
