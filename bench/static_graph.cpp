// Static graphs beside eager tandem, hand-written loops and Eigen, in one
// binary (bytes/s count the inputs read and the outputs written once):
//   chain_*     the 8-op elementwise chain of bench_elementwise over 16M floats:
//               stream copy, hand fused loop, tandem static (returning a
//               fresh tensor, and `into` a buffer allocated once, as the
//               hand loop and Eigen write), tandem eager, Eigen's Tensor
//               module (when libeigen3-dev is installed);
//   tanh_chain_*  the tanh chain (chain.hpp), `h = tanh(...) * x - 0.25; h * h`, over
//               16M floats: hand loop (xsimd batches and the tanh tandem's
//               kernels use), tandem static (fresh tensor and `into`), Eigen;
//   gradient_*  d/dx and d/dy of sum(f(x, y)) for a 6-op elementwise f:
//               hand fused adjoint loop, tandem static, tandem eager;
//               gradient_tanh_* the same for sum(tanh(x*y+x)*y)
//               over 4M floats;
//   call_*      a cached 10-node graph on 16-element tensors: the cost of a
//               call, static (and static `into` a buffer) against eager;
//               call_one_op_* the same for a graph of one op, x + y;
//               call_captured_* for x * w with w captured (a layer's
//               weight that requires a gradient), under no_grad;
//               threaded/call_* the same in a process that has started a
//               thread;
//   layer_*     matmul alone and relu(matmul + bias) as static graphs, at
//               m x k x n = 128x784x256 and 128x256x10: what a matmul
//               epilogue could save (the second minus the first).
//
//   ./build/release/bench/bench_static_graph --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include "chain.hpp"

#include <cmath>
#include <cstring>
#include <thread>

#ifdef TANDEM_BENCH_EIGEN
#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>
#endif

using namespace tandem;

namespace {

constexpr std::int64_t large = 16 * 1024 * 1024;

using bench::chain;
using bench::input;

template <class Body>
void run_threads(std::int64_t n, Body body) {
  detail::parallel_for(n, detail::elementwise_grain, body);
}

void chain_stream_copy(benchmark::State& state) {
  tensor<float> a = input(large, 1), c = zeros({large});
  for (auto _ : state) {
    run_threads(large, [&](std::int64_t lo, std::int64_t hi) {
      std::memcpy(c.data() + lo, a.data() + lo, static_cast<std::size_t>(hi - lo) * sizeof(float));
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

void chain_hand(benchmark::State& state) {
  tensor<float> a = input(large, 1), c = zeros({large});
  for (auto _ : state) {
    const float* pa = a.data();
    float* pc = c.data();
    run_threads(large, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) pc[i] = chain(pa[i]);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

void chain_static(benchmark::State& state) {
  tensor<float> a = input(large, 1);
  auto f = jit([](auto x) { return chain(x); });
  for (auto _ : state) {
    tensor<float> c = f(a);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

// Into a buffer allocated once, as the hand loop and Eigen write.
void chain_static_into(benchmark::State& state) {
  tensor<float> a = input(large, 1), c = zeros({large});
  auto f = jit([](auto x) { return chain(x); });
  for (auto _ : state) {
    f.into(c, a);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

void chain_eager(benchmark::State& state) {
  tensor<float> a = input(large, 1);
  for (auto _ : state) {
    tensor<float> c = chain(a);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

#ifdef TANDEM_BENCH_EIGEN
// out = chain_of(x) for Eigen TensorMaps, on a pool of tandem's thread count.
template <class Chain>
void run_eigen(benchmark::State& state, Chain chain_of) {
  tensor<float> a = input(large, 1), c = zeros({large});
  Eigen::ThreadPool pool(num_threads());
  Eigen::ThreadPoolDevice device(&pool, num_threads());
  Eigen::TensorMap<Eigen::Tensor<const float, 1>> x(a.data(), large);
  Eigen::TensorMap<Eigen::Tensor<float, 1>> out(c.data(), large);
  for (auto _ : state) {
    out.device(device) = chain_of(x);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}
void chain_eigen(benchmark::State& state) {
  run_eigen(state, [](const auto& x) { return chain(x); });
}
void tanh_chain_eigen(benchmark::State& state) {
  run_eigen(state, [](const auto& x) { return bench::tanh_chain(x, [](const auto& d) { return d.tanh(); }); });
}
BENCHMARK(chain_eigen)->UseRealTime();
BENCHMARK(tanh_chain_eigen)->UseRealTime();
#endif

void tanh_chain_hand(benchmark::State& state) {
  using batch = xsimd::batch<float>;
  constexpr std::int64_t lanes = batch::size;
  tensor<float> a = input(large, 1), c = zeros({large});
  auto simd_tanh = [](const batch& d) { return detail::math::tanh(d); };
  auto scalar_tanh = [](float d) { return detail::math::tanh(d); };
  for (auto _ : state) {
    const float* pa = a.data();
    float* pc = c.data();
    run_threads(large, [&](std::int64_t lo, std::int64_t hi) {
      std::int64_t i = lo;
      for (; i + lanes <= hi; i += lanes)
        bench::tanh_chain(batch::load_unaligned(pa + i), simd_tanh).store_unaligned(pc + i);
      for (; i < hi; ++i) pc[i] = bench::tanh_chain(pa[i], scalar_tanh);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

auto tanh_chain_graph() {
  return jit([](auto x) { return bench::tanh_chain(x, [](const auto& d) { return tanh(d); }); });
}

void tanh_chain_static(benchmark::State& state) {
  tensor<float> a = input(large, 1);
  auto f = tanh_chain_graph();
  for (auto _ : state) {
    tensor<float> c = f(a);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

void tanh_chain_static_into(benchmark::State& state) {
  tensor<float> a = input(large, 1), c = zeros({large});
  auto f = tanh_chain_graph();
  for (auto _ : state) {
    f.into(c, a);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * large * 8);
}

BENCHMARK(tanh_chain_hand)->UseRealTime();
BENCHMARK(tanh_chain_static)->UseRealTime();
BENCHMARK(tanh_chain_static_into)->UseRealTime();

// f(x, y) = x*y + sin(x)*y - exp(0.5*y)*x: six elementwise ops.
template <class X, class Y>
auto six_ops(const X& x, const Y& y) {
  return x * y + sin(x) * y - exp(y * 0.5f) * x;
}

// The limit: one pass, the SIMD math tandem's kernels use (its sin and cos
// of one x share their range reduction here too), the adjoints written out
// by hand.
struct six_ops_adjoint {
  template <class V>
  TANDEM_ALWAYS_INLINE void operator()(const V& x, const V& y, V& dx, V& dy) const {
    V e = detail::math::exp(y * V(0.5f));
    dx = y + detail::math::cos(x) * y - e;
    dy = x + detail::math::sin(x) - V(0.5f) * e * x;
  }
};

// The gradient of sum(tanh(x*y + x) * y), by hand.
struct tanh_adjoint {
  template <class V>
  TANDEM_ALWAYS_INLINE void operator()(const V& x, const V& y, V& dx, V& dy) const {
    V t = detail::math::tanh(x * y + x);
    V slope = y * (V(1.0f) - t * t);
    dx = slope * (y + V(1.0f));
    dy = t + slope * x;
  }
};

// A hand-written adjoint over n elements: one pass, into buffers allocated
// once.
template <class Adjoint>
void hand_gradient(benchmark::State& state, std::int64_t n) {
  using batch = xsimd::batch<float>;
  constexpr std::int64_t w = batch::size;
  const Adjoint adjoint;
  tensor<float> x = input(n, 1), y = input(n, 2), dx = zeros({n}), dy = zeros({n});
  for (auto _ : state) {
    const float *px = x.data(), *py = y.data();
    float *pdx = dx.data(), *pdy = dy.data();
    run_threads(n, [&](std::int64_t lo, std::int64_t hi) {
      std::int64_t i = lo;
      for (; i + w <= hi; i += w) {
        batch gx, gy;
        adjoint(batch::load_unaligned(px + i), batch::load_unaligned(py + i), gx, gy);
        gx.store_unaligned(pdx + i);
        gy.store_unaligned(pdy + i);
      }
      for (; i < hi; ++i) adjoint(px[i], py[i], pdx[i], pdy[i]);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 16);
}

// d/dx and d/dy of sum(f(x, y)) by `g` (a gradient function of f).
template <class Gradient>
void tandem_gradient(benchmark::State& state, std::int64_t n, const Gradient& g) {
  tensor<float> x = input(n, 1), y = input(n, 2);
  for (auto _ : state) {
    auto [dx, dy] = g(x, y);
    benchmark::DoNotOptimize(dx.data());
  }
  state.SetBytesProcessed(state.iterations() * n * 16);
}

const auto six_ops_sum = [](auto a, auto b) { return sum(six_ops(a, b)); };
// sum(tanh(x*y + x) * y), over 4M floats.
const auto tanh_sum = [](auto a, auto b) { return sum(tanh(a * b + a) * b); };
constexpr std::int64_t medium = 4 * 1024 * 1024;

void gradient_hand(benchmark::State& state) { hand_gradient<six_ops_adjoint>(state, large); }
void gradient_static(benchmark::State& state) { tandem_gradient(state, large, jit(grad(six_ops_sum, all_args))); }
void gradient_eager(benchmark::State& state) { tandem_gradient(state, large, grad(six_ops_sum, all_args)); }
void gradient_tanh_hand(benchmark::State& state) { hand_gradient<tanh_adjoint>(state, medium); }
void gradient_tanh_static(benchmark::State& state) { tandem_gradient(state, medium, jit(grad(tanh_sum, all_args))); }

BENCHMARK(gradient_hand)->UseRealTime();
BENCHMARK(gradient_static)->UseRealTime();
BENCHMARK(gradient_eager)->UseRealTime();
BENCHMARK(gradient_tanh_hand)->UseRealTime();
BENCHMARK(gradient_tanh_static)->UseRealTime();

void call_static(benchmark::State& state) {
  tensor<float> x = input(16, 1), y = input(16, 2);
  auto f = jit([](auto a, auto b) { return bench::ten_nodes(a, b); });
  for (auto _ : state) benchmark::DoNotOptimize(f(x, y).data());
}

void call_static_into(benchmark::State& state) {
  tensor<float> x = input(16, 1), y = input(16, 2), out = zeros({16});
  auto f = jit([](auto a, auto b) { return bench::ten_nodes(a, b); });
  for (auto _ : state) {
    f.into(out, x, y);
    benchmark::ClobberMemory();
  }
}

void call_eager(benchmark::State& state) {
  tensor<float> x = input(16, 1), y = input(16, 2);
  for (auto _ : state) benchmark::DoNotOptimize(bench::ten_nodes(x, y).data());
}

// The same for a graph of one op, x + y: what a call costs besides its op.
void call_one_op_static(benchmark::State& state) {
  tensor<float> x = input(16, 1), y = input(16, 2);
  auto f = jit([](auto a, auto b) { return a + b; });
  for (auto _ : state) benchmark::DoNotOptimize(f(x, y).data());
}

void call_one_op_eager(benchmark::State& state) {
  tensor<float> x = input(16, 1), y = input(16, 2);
  for (auto _ : state) benchmark::DoNotOptimize((x + y).data());
}

// A graph over a captured tensor, as a module's forward in inference.
void call_captured_static(benchmark::State& state) {
  tensor<float> x = input(16, 1), w = input(16, 2);
  w.set_requires_grad();
  auto f = jit([&w](auto a) { return a * w; });
  no_grad inference;
  for (auto _ : state) benchmark::DoNotOptimize(f(x).data());
}

void call_captured_eager(benchmark::State& state) {
  tensor<float> x = input(16, 1), w = input(16, 2);
  w.set_requires_grad();
  no_grad inference;
  for (auto _ : state) benchmark::DoNotOptimize((x * w).data());
}

// Three ops over two captured tensors, as a small layer's forward:
// relu(x * w + b).
void call_captured_layer_static(benchmark::State& state) {
  tensor<float> x = input(16, 1), w = input(16, 2), b = input(16, 3);
  w.set_requires_grad();
  b.set_requires_grad();
  auto f = jit([&w, &b](auto a) { return relu(a * w + b); });
  no_grad inference;
  for (auto _ : state) benchmark::DoNotOptimize(f(x).data());
}

void call_captured_layer_eager(benchmark::State& state) {
  tensor<float> x = input(16, 1), w = input(16, 2), b = input(16, 3);
  w.set_requires_grad();
  b.set_requires_grad();
  no_grad inference;
  for (auto _ : state) benchmark::DoNotOptimize(relu(x * w + b).data());
}

void layer_args(benchmark::internal::Benchmark* b) {
  b->Args({128, 784, 256})->Args({128, 256, 10});
}

template <class F>
void run_layer(benchmark::State& state, F f) {
  generator gen(3);
  tensor<float> x = uniform<float>({state.range(0), state.range(1)}, -1, 1, gen);
  tensor<float> w = uniform<float>({state.range(1), state.range(2)}, -1, 1, gen);
  tensor<float> b = uniform<float>({state.range(2)}, -1, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(f(x, w, b).data());
}

void layer_matmul(benchmark::State& state) {
  run_layer(state, jit([](auto x, auto w, auto) { return matmul(x, w); }));
}

void layer_matmul_relu_bias(benchmark::State& state) {
  run_layer(state, jit([](auto x, auto w, auto b) { return relu(matmul(x, w) + b); }));
}

}  // namespace

BENCHMARK(layer_matmul)->Apply(layer_args)->UseRealTime();
BENCHMARK(layer_matmul_relu_bias)->Apply(layer_args)->UseRealTime();
BENCHMARK(chain_stream_copy)->UseRealTime();
BENCHMARK(chain_hand)->UseRealTime();
BENCHMARK(chain_static)->UseRealTime();
BENCHMARK(chain_static_into)->UseRealTime();
BENCHMARK(chain_eager)->UseRealTime();
BENCHMARK(call_static);
BENCHMARK(call_static_into);
BENCHMARK(call_eager);
BENCHMARK(call_one_op_static);
BENCHMARK(call_one_op_eager);
BENCHMARK(call_captured_static);
BENCHMARK(call_captured_eager);
BENCHMARK(call_captured_layer_static);
BENCHMARK(call_captured_layer_eager);

// The same calls in a process that has started a thread, as any program
// that ran an op on the thread pool has. libstdc++ and tandem then make
// every shared count's update a locked instruction, except where they know
// that only one thread can reach it. Registered last: a process that
// started a thread stays one, so the calls above run in a process without
// one only when run alone (`--benchmark_filter='^call_'`).
template <void (*Call)(benchmark::State&)>
void in_threaded_process(benchmark::State& state) {
  static const bool started = [] {
    std::thread([] {}).join();
    return true;
  }();
  benchmark::DoNotOptimize(started);
  Call(state);
}
BENCHMARK(in_threaded_process<call_static>)->Name("threaded/call_static");
BENCHMARK(in_threaded_process<call_eager>)->Name("threaded/call_eager");
BENCHMARK(in_threaded_process<call_one_op_static>)->Name("threaded/call_one_op_static");
BENCHMARK(in_threaded_process<call_one_op_eager>)->Name("threaded/call_one_op_eager");
BENCHMARK(in_threaded_process<call_captured_static>)->Name("threaded/call_captured_static");
BENCHMARK(in_threaded_process<call_captured_eager>)->Name("threaded/call_captured_eager");
BENCHMARK(in_threaded_process<call_captured_layer_static>)->Name("threaded/call_captured_layer_static");
BENCHMARK(in_threaded_process<call_captured_layer_eager>)->Name("threaded/call_captured_layer_eager");

BENCHMARK_MAIN();
