#pragma once
// The gradient check every differentiable op goes through: in double, the
// gradient of sum(f(x...) * s) for a seeded random sensitivity s, from
// backward, against central finite differences (eps 1e-6) with atol 1e-5
// and rtol 1e-3. An input no gradient reaches is checked against zero.

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "support/check.hpp"

namespace tandem::test {

using tensor_function = std::function<tensor<double>(const std::vector<tensor<double>>&)>;

// Values uniform in [low, high) with a random sign when `signed_values`: they
// stay away from 0, where abs, relu and friends have a kink.
inline tensor<double> away_from_zero(const shape& s, std::uint64_t seed, double low = 0.2, double high = 1.5,
                                     bool signed_values = true) {
  generator gen(seed);
  tensor<double> magnitude = uniform<double>(s, low, high, gen);
  if (!signed_values) return magnitude;
  tensor<double> flip = uniform<double>(s, 0, 1, gen);
  return where(flip < 0.5, -magnitude, magnitude);
}

inline void check_gradients(const tensor_function& f, const std::vector<tensor<double>>& at, const std::string& what,
                            double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3) {
  INFO(what);
  std::vector<tensor<double>> inputs;
  for (const auto& x : at) {
    tensor<double> leaf = x.clone().detach();
    leaf.set_requires_grad(true);
    inputs.push_back(leaf);
  }
  tensor<double> out = f(inputs);
  generator gen(99);
  tensor<double> sensitivity = uniform<double>(out.shape(), -1, 1, gen);
  sum(out * sensitivity).backward();

  auto objective = [&](const std::vector<tensor<double>>& xs) {
    no_grad plain;
    return sum(f(xs) * sensitivity).item();
  };
  for (std::size_t k = 0; k < at.size(); ++k) {
    INFO("input " << k << " of shape " << to_string(at[k].shape()));
    // No gradient reached an input the output does not depend on: its
    // gradient is zero, which the finite differences must then confirm.
    tensor<double> analytic = inputs[k].has_grad() ? inputs[k].grad().contiguous() : zeros_like(at[k]);
    REQUIRE(analytic.shape() == at[k].shape());
    std::vector<tensor<double>> probe;
    for (const auto& x : at) probe.push_back(x.clone());
    tensor<double> flat = probe[k].reshape({-1});
    for (std::int64_t i = 0; i < flat.numel(); ++i) {
      double original = flat.at(i);
      flat.at(i) = original + eps;
      double up = objective(probe);
      flat.at(i) = original - eps;
      double down = objective(probe);
      flat.at(i) = original;
      double numeric = (up - down) / (2 * eps);
      double got = analytic.data()[i];
      if (std::abs(got - numeric) > atol + rtol * std::abs(numeric)) {
        INFO("element " << i << ": backward " << got << ", finite differences " << numeric);
        CHECK(false);
        return;
      }
    }
  }
}

}  // namespace tandem::test
