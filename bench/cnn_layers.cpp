// The CNN's memory-bound layers (the demo's fashion::cnn at batch 128: 16
// channels of 28x28 after the first convolution, 32 of 14x14 after the
// second) on one thread: 2x2 max pooling and its gradient, batch norm's
// forward (moments, then the affine pass) and its backward (sums and the x
// gradient, channel by channel), beside a copy of as many floats as the
// layer's input, the limit for a pass that reads it once and writes it
// once. Bytes/s counts what each kernel must read and write at least once.
//
//   ./build/release/bench/bench_cnn_layers --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include <tandem/tandem.hpp>

using namespace tandem;
using namespace tandem::detail;

namespace {

struct layer {
  std::int64_t channels, size;
};
constexpr layer layers[] = {{16, 28}, {32, 14}};
constexpr std::int64_t batch = 128;

struct activations {
  std::int64_t channels, size, count;
  tensor<float> x, g, out, pooled;
  std::vector<window_winner> winners;
  explicit activations(const benchmark::State& state)
      : channels(layers[state.range(0)].channels),
        size(layers[state.range(0)].size),
        count(batch * channels * size * size),
        winners(static_cast<std::size_t>(count / 4)) {
    generator gen(3);
    x = uniform<float>({batch, channels, size, size}, -1, 1, gen);
    g = uniform<float>(x.shape(), -1, 1, gen);
    out = tensor<float>(x.shape());
    pooled = uniform<float>({batch, channels, size / 2, size / 2}, -1, 1, gen);
  }
  std::int64_t planes() const { return batch * channels; }
  std::int64_t plane() const { return size * size; }
};

void finish(benchmark::State& state, double bytes) {
  state.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(state.range(0) == 0 ? "16 channels, 28x28" : "32 channels, 14x14");
  set_num_threads(0);
}

void copy_limit(benchmark::State& state) {
  set_num_threads(1);
  activations a(state);
  for (auto _ : state) {
    std::copy(a.x.data(), a.x.data() + a.count, a.out.data());
    benchmark::ClobberMemory();
  }
  finish(state, 2.0 * sizeof(float) * double(a.count));
}

void max_pool_forward(benchmark::State& state) {
  set_num_threads(1);
  activations a(state);
  for (auto _ : state) {
    for (std::int64_t p = 0; p < a.planes(); ++p)
      native_max_pool_2x2(a.x.data() + p * a.plane(), a.size, a.size, a.pooled.data() + p * a.plane() / 4,
                          a.winners.data() + p * a.plane() / 4);
    benchmark::ClobberMemory();
  }
  finish(state, double(a.count) * (sizeof(float) + (sizeof(float) + 1) / 4.0));
}

void max_pool_backward(benchmark::State& state) {
  set_num_threads(1);
  activations a(state);
  for (std::int64_t p = 0; p < a.planes(); ++p)
    native_max_pool_2x2(a.x.data() + p * a.plane(), a.size, a.size, a.out.data() + p * a.plane() / 4,
                        a.winners.data() + p * a.plane() / 4);
  for (auto _ : state) {
    for (std::int64_t p = 0; p < a.planes(); ++p)
      native_max_pool_2x2_backward(a.pooled.data() + p * a.plane() / 4, a.winners.data() + p * a.plane() / 4,
                                   a.size, a.size, a.out.data() + p * a.plane());
    benchmark::ClobberMemory();
  }
  finish(state, double(a.count) * (sizeof(float) + (sizeof(float) + 1) / 4.0));
}

void batch_norm_forward(benchmark::State& state) {
  set_num_threads(1);
  activations a(state);
  std::vector<float> mean(a.channels), variance(a.channels), scale(a.channels, 1.1f), shift(a.channels, 0.1f);
  for (auto _ : state) {
    native_middle_moments(a.x.data(), batch, a.channels, a.plane(), mean.data(), variance.data());
    native_affine_per_channel(a.x.data(), batch, a.channels, a.plane(), scale.data(), shift.data(), a.out.data());
    benchmark::ClobberMemory();
  }
  finish(state, 2.0 * sizeof(float) * double(a.count));
}

void batch_norm_backward(benchmark::State& state) {
  set_num_threads(1);
  activations a(state);
  std::vector<float> mean(a.channels, 0.01f), inverse_std(a.channels, 1.7f), weight(a.channels, 0.9f);
  std::vector<double> sum_g(a.channels), sum_gx(a.channels);
  for (auto _ : state) {
    native_batch_norm_backward(a.g.data(), a.x.data(), batch, a.channels, a.plane(), mean.data(), inverse_std.data(),
                               weight.data(), sum_g.data(), sum_gx.data(), a.out.data());
    benchmark::ClobberMemory();
  }
  finish(state, 3.0 * sizeof(float) * double(a.count));
}

}  // namespace

BENCHMARK(copy_limit)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(max_pool_forward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(max_pool_backward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(batch_norm_forward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(batch_norm_backward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
