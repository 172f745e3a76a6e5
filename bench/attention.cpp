// scaled_dot_product_attention, forward and backward, fused (tandem's
// tiled kernel) against the same attention composed of matmul, softmax and
// matmul (what a library without the fused op runs: the T x T scores per
// head, kept for the backward), on one batch of 4 heads of width 32 with a
// causal mask, T = 256, 1024 and 4096. PyTorch's
// torch.nn.functional.scaled_dot_product_attention on the same shapes:
// bench/attention_pytorch.py.
//
//   ./build/release/bench/bench_attention --benchmark_min_time=0.5
//   /usr/bin/time -f '%M KB' ./build/release/bench/bench_attention memory fused 4096
//   /usr/bin/time -f '%M KB' ./build/release/bench/bench_attention memory composed 4096
#include <tandem/tandem.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace tandem;

namespace {

constexpr std::int64_t heads = 4, width = 32;

struct operands {
  tensor<float> q, k, v, g;
};

operands make(std::int64_t t) {
  generator gen(1);
  operands o{normal<float>({1, heads, t, width}, 0, 1, gen), normal<float>({1, heads, t, width}, 0, 1, gen),
             normal<float>({1, heads, t, width}, 0, 1, gen), normal<float>({1, heads, t, width}, 0, 1, gen)};
  o.q.set_requires_grad(true);
  o.k.set_requires_grad(true);
  o.v.set_requires_grad(true);
  return o;
}

tensor<float> composed(const operands& o) {
  const std::int64_t t = o.q.shape(2);
  auto scores = matmul(o.q, o.k.transpose(-1, -2)) * (1.0f / std::sqrt(float(width)));
  auto masked = masked_fill(scores, triu(ones<bool>({t, t}), 1), -std::numeric_limits<float>::infinity());
  return matmul(softmax(masked, -1), o.v);
}

tensor<float> fused(const operands& o) { return scaled_dot_product_attention(o.q, o.k, o.v, {.causal = true}); }

template <tensor<float> (*Attention)(const operands&)>
void forward_backward(benchmark::State& state) {
  operands o = make(state.range(0));
  for (auto _ : state) {
    o.q.zero_grad(), o.k.zero_grad(), o.v.zero_grad();
    tensor<float> y = Attention(o);
    sum(y * o.g).backward();
    benchmark::DoNotOptimize(o.q.grad().data());
  }
  const double t = double(state.range(0));
  // The causal half of the score matrix, forward (2 products) and
  // backward (4 products).
  state.counters["GFLOP/s"] =
      benchmark::Counter(6.0 * 2 * heads * t * t * width / 2 * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void attention_fused(benchmark::State& state) { forward_backward<fused>(state); }
void attention_composed(benchmark::State& state) { forward_backward<composed>(state); }

BENCHMARK(attention_fused)->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(attention_composed)->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "memory") == 0) {
    operands o = make(std::atoll(argv[3]));
    tensor<float> y = std::strcmp(argv[2], "fused") == 0 ? fused(o) : composed(o);
    sum(y * o.g).backward();
    std::printf("%s attention, T = %s: sum of dq %g\n", argv[2], argv[3], sum(o.q.grad()).item());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
