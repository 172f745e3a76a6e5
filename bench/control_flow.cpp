// Control flow in static graphs (docs/benchmarks/control_flow.md):
//   rnn_*   an RNN over 100 steps (batch 32, 8 features, hidden 256),
//           forward and backward of the loss with respect to its weights:
//           scan inside one static graph (keeping each step's residuals, or
//           recomputing them in the backward), the same scan called eagerly (its
//           step a static graph per call), and the cell unrolled eagerly, op
//           by op (PyTorch eager's way); bench/control_flow_pytorch.py times
//           PyTorch eager and torch.compile on the same model;
//   cond_*  a cond in a hot loop on 16 floats: the graph with the cond, the
//           same graph with only the branch it takes, and that branch alone
//           as a static graph; the first minus the second is what the
//           construct costs.
//
//   ./build/release/bench/bench_control_flow --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include <tuple>

using namespace tandem;

namespace {

constexpr std::int64_t features = 8, hidden = 256, steps = 100, batch = 32;

struct rnn_data {
  tensor<float> w, u, b, readout, h0, xs;
  rnn_data() {
    generator gen(3);
    w = uniform<float>({features, hidden}, -0.3, 0.3, gen);
    u = uniform<float>({hidden, hidden}, -0.06, 0.06, gen);
    b = zeros<float>({hidden});
    readout = uniform<float>({hidden, 1}, -0.06, 0.06, gen);
    h0 = zeros<float>({batch, hidden});
    xs = normal<float>({steps, batch, features}, 0, 1, gen);
    for (tensor<float>* p : {&w, &u, &b, &readout}) p->set_requires_grad(true);
  }
  void zero_grad() {
    for (tensor<float>* p : {&w, &u, &b, &readout}) p->zero_grad();
  }
};

auto rnn_cell(const rnn_data& d) {
  return [&d](const auto& state, const auto& x) {
    auto next = tanh(matmul(x, d.w) + matmul(state, d.u) + d.b);
    return std::tuple{next, next * 1.0f};
  };
}

template <class Cell>
auto scanned_loss(const rnn_data& d, Cell cell) {
  return [&d, cell](const auto& h0, const auto& xs) {
    auto [h, hs] = scan(cell, h0, xs);
    (void)hs;
    return mean(square(matmul(h, d.readout)));
  };
}

void rnn_static_scan(benchmark::State& state) {
  rnn_data d;
  auto graph = jit(scanned_loss(d, rnn_cell(d)));
  for (auto _ : state) {
    d.zero_grad();
    graph(d.h0, d.xs).backward();
    benchmark::DoNotOptimize(d.u.grad().data());
  }
}

// The same, the residuals recomputed in the backward (recompute(cell)).
void rnn_static_scan_recompute(benchmark::State& state) {
  rnn_data d;
  auto graph = jit(scanned_loss(d, recompute(rnn_cell(d))));
  for (auto _ : state) {
    d.zero_grad();
    graph(d.h0, d.xs).backward();
    benchmark::DoNotOptimize(d.u.grad().data());
  }
}

void rnn_eager_scan(benchmark::State& state) {
  rnn_data d;
  auto loss = scanned_loss(d, rnn_cell(d));
  for (auto _ : state) {
    d.zero_grad();
    loss(d.h0, d.xs).backward();
    benchmark::DoNotOptimize(d.u.grad().data());
  }
}

void rnn_eager_unrolled(benchmark::State& state) {
  rnn_data d;
  for (auto _ : state) {
    d.zero_grad();
    tensor<float> h = d.h0;
    for (std::int64_t t = 0; t < steps; ++t)
      h = tanh(matmul(d.xs.take(0, t, 1).squeeze(0), d.w) + matmul(h, d.u) + d.b);
    mean(square(matmul(h, d.readout))).backward();
    benchmark::DoNotOptimize(d.u.grad().data());
  }
}

BENCHMARK(rnn_static_scan)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(rnn_static_scan_recompute)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(rnn_eager_scan)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(rnn_eager_unrolled)->Unit(benchmark::kMillisecond)->UseRealTime();

tensor<float> small_input() {
  generator gen(5);
  return uniform<float>({16}, 0.1, 1, gen);
}

auto taken_branch = [](const auto& a) { return tanh(a) * a + 1.0f; };
auto other_branch = [](const auto& a) { return a * a - 1.0f; };

void cond_in_graph(benchmark::State& state) {
  tensor<float> x = small_input();
  auto graph = jit([](const auto& a) { return cond(sum(a) > 0.0f, taken_branch, other_branch, a * 2.0f) * 0.5f; });
  for (auto _ : state) benchmark::DoNotOptimize(graph(x).data());
}

void cond_branch_inline(benchmark::State& state) {
  tensor<float> x = small_input();
  auto graph = jit([](const auto& a) {
    auto decided = sum(a) > 0.0f;
    return std::tuple{taken_branch(a * 2.0f) * 0.5f, decided};
  });
  for (auto _ : state) benchmark::DoNotOptimize(std::get<0>(graph(x)).data());
}

void cond_branch_alone(benchmark::State& state) {
  tensor<float> x = small_input();
  auto graph = jit(taken_branch);
  for (auto _ : state) benchmark::DoNotOptimize(graph(x).data());
}

// The construct alone: a graph that is only the cond, on a predicate passed
// in; the taken branch alone is the limit.
void cond_alone(benchmark::State& state) {
  tensor<float> x = small_input();
  tensor<bool> yes = full<bool>({}, true);
  auto graph = jit([](const auto& p, const auto& a) { return cond(p, taken_branch, other_branch, a); });
  for (auto _ : state) benchmark::DoNotOptimize(graph(yes, x).data());
}

// A cond in a hot loop: 1000 iterations of a fori_loop whose body takes a
// branch on a predicate carried in the state, against the same loop whose
// body is that branch; the difference per iteration is what the construct
// costs where it runs over and over.
constexpr std::int64_t hot_iterations = 1000;
auto hot_taken = [](const auto& a) { return tanh(a) * 0.5f + 0.25f; };
auto hot_other = [](const auto& a) { return a * a - 1.0f; };

void cond_hot_loop(benchmark::State& state) {
  tensor<float> x = small_input();
  tensor<bool> yes = full<bool>({}, true);
  auto graph = jit([](const auto& p, const auto& a) {
    return fori_loop(
        0, hot_iterations,
        [](const auto&, const auto& q, const auto& b) { return std::tuple{q, cond(q, hot_taken, hot_other, b)}; }, p,
        a);
  });
  for (auto _ : state) benchmark::DoNotOptimize(std::get<1>(graph(yes, x)).data());
  state.SetItemsProcessed(state.iterations() * hot_iterations);
}

void cond_hot_loop_branch_only(benchmark::State& state) {
  tensor<float> x = small_input();
  tensor<bool> yes = full<bool>({}, true);
  auto graph = jit([](const auto& p, const auto& a) {
    return fori_loop(
        0, hot_iterations, [](const auto&, const auto& q, const auto& b) { return std::tuple{q, hot_taken(b)}; }, p,
        a);
  });
  for (auto _ : state) benchmark::DoNotOptimize(std::get<1>(graph(yes, x)).data());
  state.SetItemsProcessed(state.iterations() * hot_iterations);
}

BENCHMARK(cond_alone);
BENCHMARK(cond_hot_loop)->Unit(benchmark::kMicrosecond);
BENCHMARK(cond_hot_loop_branch_only)->Unit(benchmark::kMicrosecond);
BENCHMARK(cond_in_graph);
BENCHMARK(cond_branch_inline);
BENCHMARK(cond_branch_alone);

}  // namespace

BENCHMARK_MAIN();
