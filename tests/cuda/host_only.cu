// A host-only program compiled by nvcc: CPU tensors only, no device code. It
// runs in the ordinary suite on every machine with nvcc, GPU or not, because
// nvcc's front end reads C++ differently from g++'s: `axes a{}` once meant
// axes(0) there, and every sum or mean over all axes of a 2-d tensor threw.

#include <tandem/tandem.hpp>

#include <cmath>
#include <cstdio>

namespace {

int failures = 0;

void expect_near(const char* what, double got, double want) {
  if (std::abs(got - want) > 1e-5 * (1 + std::abs(want))) {
    std::printf("%s: got %.9g, want %.9g\n", what, got, want);
    ++failures;
  }
}

}  // namespace

int main() {
  using namespace tandem;
  tensor<float> x = tensor<float>{1, 2, 3, 4, 5, 6}.reshape({2, 3});

  expect_near("sum over all axes", sum(x).item(), 21);
  expect_near("mean over all axes", mean(x).item(), 3.5);
  expect_near("sum over axis 1", sum(x, 1).at(1), 15);
  expect_near("max over all axes", max(x).item(), 6);

  // d/dx sum(sigmoid(x) * x) = s + x s (1 - s), s = sigmoid(x).
  auto slope = grad([](const tensor<float>& t) { return sum(sigmoid(t) * t); });
  tensor<float> g = slope(x);
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      double v = x.at(i, j), s = 1 / (1 + std::exp(-v));
      expect_near("eager gradient", g.at(i, j), s + v * s * (1 - s));
    }

  auto f = jit([](const auto& a, const auto& b) { return sum(exp(a * 0.1f) * b + a); });
  tensor<float> y = full<float>({2, 3}, 0.5f);
  double want = 0;
  for (std::int64_t i = 0; i < 6; ++i) want += std::exp(0.1 * (i + 1)) * 0.5 + (i + 1);
  expect_near("jit value", f(x, y).item(), want);
  tensor<float> fused = grad(f)(x, y);
  for (std::int64_t i = 0; i < 6; ++i)
    expect_near("jit gradient", fused.reshape({6}).at(i), 0.1 * std::exp(0.1 * (i + 1)) * 0.5 + 1);

  generator gen(7);
  nn::linear<float> layer(3, 2, gen);
  tensor<float> out = layer(x);
  for (std::int64_t j = 0; j < 2; ++j) {
    double dot = layer.bias.at(j);
    for (std::int64_t k = 0; k < 3; ++k) dot += x.at(1, k) * layer.weight.at(k, j);
    expect_near("linear layer", out.at(1, j), dot);
  }
  auto loss = [&](const tensor<float>& input) { return mean(layer(input)); };
  expect_near("gradient through a module", grad(loss)(x).at(0, 0),
              (layer.weight.at(0, 0) + layer.weight.at(0, 1)) / 4);

  if (failures == 0) std::puts("host-only program under nvcc: all checks pass");
  return failures == 0 ? 0 : 1;
}
