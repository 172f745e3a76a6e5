// capture(fn) beside eager tandem and jit, in one binary; the functions are
// the same eager code (tensor<float> in, tensor<float> out) run three ways:
//   tanh_chain_*  the 8-op chain with a tanh (chain.hpp) over 16M floats;
//   gradient_*    d/dx and d/dy of sum(tanh(x*y + x)*y) over 4M floats;
//   column_sum_*  sum(tanh(x*y + x)*y, {0}) over 1024 x 4096 floats (a
//                 reduction over the leading axis);
//   call_*        the 10-node graph on 16-element tensors: what a call
//                 costs when the kernels cost nothing (capture's replay
//                 overhead).
// The hand-written limit for the chain is bench_static_graph's tanh_chain_hand.
//
//   ./build/release/bench/bench_capture --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include "chain.hpp"

using namespace tandem;

namespace {

constexpr std::int64_t large = 16 * 1024 * 1024;
constexpr std::int64_t gradient_size = 4 * 1024 * 1024;

tensor<float> eager_tanh_chain(const tensor<float>& x) {
  return bench::tanh_chain(x, [](const tensor<float>& d) { return tanh(d); });
}

template <class F>
void run_chain(benchmark::State& state, F f) {
  tensor<float> x = bench::input(large, 1);
  for (auto _ : state) benchmark::DoNotOptimize(f(x).data());
  state.SetBytesProcessed(state.iterations() * large * 8);
}

void tanh_chain_eager(benchmark::State& state) { run_chain(state, eager_tanh_chain); }
void tanh_chain_capture(benchmark::State& state) { run_chain(state, capture(eager_tanh_chain)); }
void tanh_chain_static(benchmark::State& state) {
  run_chain(state, jit([](auto x) { return bench::tanh_chain(x, [](const auto& d) { return tanh(d); }); }));
}

template <class X, class Y>
auto objective(const X& x, const Y& y) {
  return sum(tanh(x * y + x) * y);
}

template <class G>
void run_gradient(benchmark::State& state, G g) {
  tensor<float> x = bench::input(gradient_size, 1), y = bench::input(gradient_size, 2);
  for (auto _ : state) {
    auto [dx, dy] = g(x, y);
    benchmark::DoNotOptimize(dx.data());
    benchmark::DoNotOptimize(dy.data());
  }
  state.SetBytesProcessed(state.iterations() * gradient_size * 16);
}

tensor<float> eager_objective(const tensor<float>& x, const tensor<float>& y) { return objective(x, y); }

void gradient_eager(benchmark::State& state) { run_gradient(state, grad(eager_objective, all_args)); }
void gradient_capture(benchmark::State& state) {
  // The whole gradient computation captured: forward and backward ops alike.
  run_gradient(state, capture(grad(eager_objective, all_args)));
}
void gradient_static(benchmark::State& state) {
  run_gradient(state, grad(jit([](auto x, auto y) { return objective(x, y); }), all_args));
}

// Column sums of an elementwise product, as a bias gradient is: the
// reduction over the leading axis takes the region into its loop.
tensor<float> eager_column_sum(const tensor<float>& x, const tensor<float>& y) {
  return sum(tanh(x * y + x) * y, {0});
}

template <class F>
void run_column_sum(benchmark::State& state, F f) {
  const tensor<float> x = bench::input(gradient_size, 1).reshape({1024, 4096});
  const tensor<float> y = bench::input(gradient_size, 2).reshape({1024, 4096});
  for (auto _ : state) benchmark::DoNotOptimize(f(x, y).data());
  state.SetBytesProcessed(state.iterations() * gradient_size * 8);
}

void column_sum_eager(benchmark::State& state) { run_column_sum(state, eager_column_sum); }
void column_sum_capture(benchmark::State& state) { run_column_sum(state, capture(eager_column_sum)); }
void column_sum_static(benchmark::State& state) {
  run_column_sum(state, jit([](auto x, auto y) { return sum(tanh(x * y + x) * y, {0}); }));
}

tensor<float> eager_ten_nodes(const tensor<float>& x, const tensor<float>& y) { return bench::ten_nodes(x, y); }

void call_eager(benchmark::State& state) {
  tensor<float> x = bench::input(16, 1), y = bench::input(16, 2);
  for (auto _ : state) benchmark::DoNotOptimize(eager_ten_nodes(x, y).data());
}
void call_capture(benchmark::State& state) {
  tensor<float> x = bench::input(16, 1), y = bench::input(16, 2);
  auto f = capture(eager_ten_nodes);
  for (auto _ : state) benchmark::DoNotOptimize(f(x, y).data());
}
void call_static(benchmark::State& state) {
  tensor<float> x = bench::input(16, 1), y = bench::input(16, 2);
  auto f = jit([](auto a, auto b) { return bench::ten_nodes(a, b); });
  for (auto _ : state) benchmark::DoNotOptimize(f(x, y).data());
}

}  // namespace

BENCHMARK(tanh_chain_eager)->UseRealTime();
BENCHMARK(tanh_chain_capture)->UseRealTime();
BENCHMARK(tanh_chain_static)->UseRealTime();
BENCHMARK(gradient_eager)->UseRealTime();
BENCHMARK(gradient_capture)->UseRealTime();
BENCHMARK(gradient_static)->UseRealTime();
BENCHMARK(column_sum_eager)->UseRealTime();
BENCHMARK(column_sum_capture)->UseRealTime();
BENCHMARK(column_sum_static)->UseRealTime();
BENCHMARK(call_eager);
BENCHMARK(call_capture);
BENCHMARK(call_static);

BENCHMARK_MAIN();
