#pragma once
// What the elementwise benchmarks share: seeded inputs, two 8-op chains and
// a 10-node graph, written once and run on floats or SIMD batches (hand
// loops), tensors (eager, captured), symbolic values (static graphs) and
// Eigen expressions.

#include <tandem/tandem.hpp>

#include <vector>

namespace bench {

inline tandem::tensor<float> input(std::int64_t n, std::uint64_t seed) {
  tandem::generator gen(seed);
  return tandem::uniform({n}, -1, 1, gen);
}

// 4096 floats spread over [-6.8, 6.8], for a function timed in cache.
inline std::vector<float> in_cache_inputs() {
  std::vector<float> x(4096);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 2048.0f) / 300.0f;
  return x;
}

template <class X>
auto chain(const X& x) {
  return (((x * 1.5f + 0.5f) * x - 2.0f) * x + 1.0f) * (x - 0.25f);
}

// A chain with a tanh and a square of a value that holds scalars. `tanh_of` is tandem::tanh, xsimd::tanh or Eigen's member.
template <class X, class Tanh>
auto tanh_chain(const X& x, Tanh tanh_of) {
  auto a = x + x;
  auto b = a * x;
  auto c = b * 0.5f;
  auto d = c + 1.0f;
  auto e = tanh_of(d);
  auto g = e * x;
  auto h = g - 0.25f;
  return h * h;
}

// The chain with tandem's tanh as a static graph's function: a constexpr
// lambda in a header, a type every unit names, so that a build of its loops
// for each instruction set can name it too (bench/dispatch_graphs.cpp).
inline constexpr auto tanh_chain_graph = [](const auto& x) {
  return tanh_chain(x, [](const auto& d) { return tanh(d); });
};

// Ten nodes: two inputs, eight elementwise ops; the cost of a call on tiny
// tensors.
template <class X, class Y>
auto ten_nodes(const X& x, const Y& y) {
  return exp(x * y + 1.0f) * (x - y) / (y * y + 2.0f);
}

}  // namespace bench
