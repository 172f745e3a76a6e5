#pragma once
// Graphs whose loops tests/graph/kernel_build_graphs.cpp builds for each
// instruction set (graph/kernel_build.hpp): defined in a header, as
// constexpr lambdas, so that every unit names the same types and none runs
// code at load.

#include "tandem/tandem.hpp"

namespace kernel_build_test {

// The 8-op chain with a tanh and a square (one group).
inline constexpr auto chain = [](const auto& x) {
  auto a = x + x;
  auto b = a * x;
  auto c = b * 0.5f;
  auto d = c + 1.0f;
  auto e = tandem::tanh(d);
  auto g = e * x;
  auto h = g - 0.25f;
  return h * h;
};

// A loss: a sum inside its operand's loop, with that loop's backward in the
// same pass under grad.
inline constexpr auto loss = [](const auto& x, const auto& y) { return tandem::sum(tandem::tanh(x * y + x) * y); };

// A layer: a product whose bias and relu run as its epilogue, and a value
// read twice (a group of its own, with a backward).
inline constexpr auto layer = [](const auto& x, const auto& w, const auto& b) {
  auto z = tandem::relu(tandem::matmul(x, w) + b);
  return z * tandem::exp(-z) + z;
};

}  // namespace kernel_build_test
