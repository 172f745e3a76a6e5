#pragma once
// What the elementwise benchmarks share: seeded inputs, and the 8-op chain,
// written once and run on floats (hand loops), tensors (eager), symbolic
// values (static graphs) and Eigen expressions.

#include <tandem/tandem.hpp>

namespace bench {

inline tandem::tensor<float> input(std::int64_t n, std::uint64_t seed) {
  tandem::generator gen(seed);
  return tandem::uniform({n}, -1, 1, gen);
}

template <class X>
auto chain(const X& x) {
  return (((x * 1.5f + 0.5f) * x - 2.0f) * x + 1.0f) * (x - 0.25f);
}

}  // namespace bench
