// Which loops write their output around the caches (streaming_pays,
// kernels/cpu/elementwise.hpp): each case, over 16M floats (a 64 MiB
// output, past every streaming threshold), beside two hand loops that
// differ only in how they write it — plain stores, and streaming stores
// from a staging buffer as tandem's loop writes them. tandem should run at
// the faster of the two:
//   neg         eager -x: one instruction per batch, waits on memory
//   chain       the 8-op polynomial chain (bench/chain.hpp) as a static graph
//   exp         eager exp(x): a transcendental, waits on its arithmetic
//   tanh_chain  the tanh chain (chain.hpp) as a static graph
//
//   ./build/release/bench/bench_streaming --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include "chain.hpp"

#include <array>

using namespace tandem;

namespace {

constexpr std::int64_t large = 16 * 1024 * 1024;

using batch = xsimd::batch<float>;
constexpr std::int64_t lanes = batch::size;

auto negate = [](const auto& x) { return -x; };
auto polynomial = [](const auto& x) { return bench::chain(x); };
auto exponential = [](const auto& x) { return detail::math::exp(x); };
auto tanh_chain = [](const auto& x) {
  return bench::tanh_chain(x, [](const auto& d) { return detail::math::tanh(d); });
};

// One thread's part [lo, hi) of the output, with plain stores.
template <class F>
void write_cached(F f, const float* in, float* out, std::int64_t lo, std::int64_t hi) {
  std::int64_t i = lo;
  for (; i + lanes <= hi; i += lanes) f(batch::load_unaligned(in + i)).store_unaligned(out + i);
  for (; i < hi; ++i) out[i] = f(in[i]);
}

// The same with streaming stores: 1 KiB at a time into a buffer in L1, then
// out around the caches. The parts start at multiples of the loop's grain,
// so `out + lo` is as aligned as the tensor.
template <class F>
void write_streamed(F f, const float* in, float* out, std::int64_t lo, std::int64_t hi) {
  constexpr std::int64_t staged = 256;
  alignas(64) std::array<float, staged> buffer;
  std::int64_t i = lo;
  for (; i + staged <= hi; i += staged) {
    for (std::int64_t l = 0; l < staged; l += lanes) f(batch::load_unaligned(in + i + l)).store_aligned(buffer.data() + l);
    detail::simd::stream_batches(out + i, buffer.data(), staged);
  }
  detail::simd::store_fence();
  for (; i < hi; ++i) out[i] = f(in[i]);
}

template <class F>
void hand(benchmark::State& state, F f, bool streamed) {
  tensor<float> a = bench::input(large, 1), c = zeros({large});
  for (auto _ : state) {
    const float* pa = a.data();
    float* pc = c.data();
    detail::parallel_for(large, detail::elementwise_grain, [&](std::int64_t lo, std::int64_t hi) {
      if (streamed) write_streamed(f, pa, pc, lo, hi);
      else write_cached(f, pa, pc, lo, hi);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

template <class F>
void tandem_call(benchmark::State& state, F f) {
  tensor<float> a = bench::input(large, 1);
  for (auto _ : state) {
    tensor<float> c = f(a);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

auto polynomial_graph = jit([](auto x) { return bench::chain(x); });
auto tanh_chain_graph = jit(bench::tanh_chain_graph);

}  // namespace

BENCHMARK_CAPTURE(hand, neg_cached, negate, false)->UseRealTime();
BENCHMARK_CAPTURE(hand, neg_streamed, negate, true)->UseRealTime();
BENCHMARK_CAPTURE(tandem_call, neg_eager, [](const tensor<float>& x) { return -x; })->UseRealTime();
BENCHMARK_CAPTURE(hand, chain_cached, polynomial, false)->UseRealTime();
BENCHMARK_CAPTURE(hand, chain_streamed, polynomial, true)->UseRealTime();
BENCHMARK_CAPTURE(tandem_call, chain_static, [](const tensor<float>& x) { return polynomial_graph(x); })->UseRealTime();
BENCHMARK_CAPTURE(hand, exp_cached, exponential, false)->UseRealTime();
BENCHMARK_CAPTURE(hand, exp_streamed, exponential, true)->UseRealTime();
BENCHMARK_CAPTURE(tandem_call, exp_eager, [](const tensor<float>& x) { return exp(x); })->UseRealTime();
BENCHMARK_CAPTURE(hand, tanh_chain_cached, tanh_chain, false)->UseRealTime();
BENCHMARK_CAPTURE(hand, tanh_chain_streamed, tanh_chain, true)->UseRealTime();
BENCHMARK_CAPTURE(tandem_call, tanh_chain_static, [](const tensor<float>& x) { return tanh_chain_graph(x); })
    ->UseRealTime();

BENCHMARK_MAIN();
