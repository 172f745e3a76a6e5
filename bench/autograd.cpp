// Eager autodiff costs, tandem side (libtorch's twins are in
// autograd_libtorch.cpp, linked into the same binary when libtorch is found):
//   op_*       one op on tiny tensors (1 and 16 floats), plain and recorded
//   chain_*    forward + backward of an 8-op elementwise chain on 1M floats,
//              beside a hand-written SIMD loop computing value and adjoint in
//              one pass; all three on one thread
//   mlp_step   one SGD step of a 784-256-256-10 MLP on a batch of 128
//
//   ./build/release/bench/bench_autograd --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

using namespace tandem;

namespace {

void tandem_op(benchmark::State& state, bool recorded) {
  std::int64_t n = state.range(0);
  tensor<float> x = ones({n}), y = full<float>({n}, 2);
  if (recorded) x.set_requires_grad();
  for (auto _ : state) {
    tensor<float> z = x * y;
    benchmark::DoNotOptimize(z.data());
  }
}
void op_tandem_plain(benchmark::State& state) { tandem_op(state, false); }
void op_tandem_recorded(benchmark::State& state) { tandem_op(state, true); }

template <class X>
auto chain(const X& x) {
  return sum(sigmoid(exp(x * 0.5f) * x + 1.0f) * tanh(x) - x);
}

void chain_tandem(benchmark::State& state) {
  set_num_threads(1);
  generator gen(1);
  tensor<float> x = uniform({state.range(0)}, -1, 1, gen);
  x.set_requires_grad();
  for (auto _ : state) {
    chain(x).backward();
    x.zero_grad();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  set_num_threads(0);
}

// Value and d/dx of the same chain in one SIMD pass over memory, written by
// hand with the same vector math: what a fused adjoint costs.
void chain_hand(benchmark::State& state) {
  using batch = detail::simd::batch<float>;
  constexpr std::int64_t w = batch::size;
  namespace math = detail::math;
  generator gen(1);
  const std::int64_t n = state.range(0);
  tensor<float> x = uniform({n}, -1, 1, gen);
  tensor<float> dx = zeros({n});
  for (auto _ : state) {
    const float* px = x.data();
    float* pd = dx.data();
    batch total(0.0f), one(1.0f), half(0.5f);
    for (std::int64_t i = 0; i + w <= n; i += w) {
      batch v = batch::load_unaligned(px + i), e = math::exp(v * half), a = e * v + one;
      batch s = one / (one + math::exp(-a)), t = math::tanh(v);
      total += s * t - v;
      batch ds = s * (one - s);
      (ds * t * (e * half * v + e) + s * (one - t * t) - one).store_unaligned(pd + i);
    }
    benchmark::DoNotOptimize(detail::simd::reduce_add(total));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void mlp_step_tandem(benchmark::State& state) {
  set_num_threads(static_cast<int>(state.range(0)));
  generator gen(7);
  std::vector<tensor<float>> params{normal({784, 256}, 0, 0.05, gen), zeros({256}), normal({256, 256}, 0, 0.05, gen),
                                    zeros({256}), normal({256, 10}, 0, 0.05, gen), zeros({10})};
  for (auto& p : params) p.set_requires_grad();
  tensor<float> images = uniform({128, 784}, 0, 1, gen);
  tensor<std::int64_t> labels = integers({128}, 0, 10, gen);
  for (auto _ : state) {
    tensor<float> h = relu(matmul(images, params[0]) + params[1]);
    h = relu(matmul(h, params[2]) + params[3]);
    tensor<float> loss = cross_entropy(matmul(h, params[4]) + params[5], labels);
    loss.backward();
    no_grad update;
    for (auto& p : params) {
      p -= p.grad() * 0.01f;
      p.zero_grad();
    }
  }
  set_num_threads(0);
}

}  // namespace

BENCHMARK(op_tandem_plain)->Arg(1)->Arg(16);
BENCHMARK(op_tandem_recorded)->Arg(1)->Arg(16);
BENCHMARK(chain_tandem)->Arg(1 << 20)->UseRealTime();
BENCHMARK(chain_hand)->Arg(1 << 20)->UseRealTime();
BENCHMARK(mlp_step_tandem)->Arg(1)->Arg(2)->UseRealTime();

BENCHMARK_MAIN();
