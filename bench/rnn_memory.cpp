// Peak memory of an RNN's forward and backward over 1000 steps (batch 32, 8
// features, hidden 256) as one static graph: scan keeping each step's
// residuals, or recompute(cell) running each step's forward again in the
// backward. Not a Google Benchmark: run it under `/usr/bin/time -f %M`
// (docs/benchmarks/control_flow.md).
//
//   /usr/bin/time -f '%M KB' ./build/release/bench/bench_rnn_memory store
//   /usr/bin/time -f '%M KB' ./build/release/bench/bench_rnn_memory recompute
#include <tandem/tandem.hpp>

#include <cstdio>
#include <cstring>
#include <tuple>

using namespace tandem;

int main(int argc, char** argv) {
  const bool recomputing = argc > 1 && std::strcmp(argv[1], "recompute") == 0;
  generator gen(3);
  tensor<float> w = uniform<float>({8, 256}, -0.3, 0.3, gen), u = uniform<float>({256, 256}, -0.06, 0.06, gen);
  tensor<float> h0 = zeros<float>({32, 256}), xs = normal<float>({1000, 32, 8}, 0, 1, gen);
  w.set_requires_grad(true);
  u.set_requires_grad(true);
  auto cell = [&](const auto& state, const auto& x) {
    auto next = tanh(matmul(x, w) + matmul(state, u));
    return std::tuple{next, next * 1.0f};
  };
  auto stored = jit([&](const auto& h, const auto& x) { return sum(std::get<0>(scan(cell, h, x))); });
  auto recomputed = jit([&](const auto& h, const auto& x) { return sum(std::get<0>(scan(recompute(cell), h, x))); });
  if (recomputing) recomputed(h0, xs).backward();
  else stored(h0, xs).backward();
  std::printf("%s: sum of dU %g\n", recomputing ? "recompute" : "store", sum(u.grad()).item());
}
