// Batch norm (training statistics, running updates, evaluation) and layer
// norm against double reference loops; gradients by finite differences,
// eagerly and in a static graph.
#include <doctest/doctest.h>

#include <cmath>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

TEST_CASE("batch norm normalizes with batch statistics in training and updates the running ones") {
  nn::batch_norm2d<double> bn(3, 0.1, 1e-5);
  tensor<double> x = test::random_tensor<double>({4, 3, 2, 5}, -2, 3, 1);
  {
    no_grad init;
    bn.weight.assign(tensor<double>{1.0, 2.0, 0.5});
    bn.bias.assign(tensor<double>{0.0, -1.0, 0.25});
  }
  tensor<double> y = bn(x);
  std::vector<double> want(static_cast<std::size_t>(x.numel()));
  for (std::int64_t c = 0; c < 3; ++c) {
    double total = 0, squares = 0, count = 4 * 2 * 5;
    for (std::int64_t n = 0; n < 4; ++n)
      for (std::int64_t i = 0; i < 10; ++i) total += x.at(n, c, i / 5, i % 5);
    double mu = total / count;
    for (std::int64_t n = 0; n < 4; ++n)
      for (std::int64_t i = 0; i < 10; ++i) squares += std::pow(x.at(n, c, i / 5, i % 5) - mu, 2);
    double variance = squares / count;
    for (std::int64_t n = 0; n < 4; ++n)
      for (std::int64_t i = 0; i < 10; ++i)
        want[static_cast<std::size_t>(((n * 3 + c) * 2 + i / 5) * 5 + i % 5)] =
            (x.at(n, c, i / 5, i % 5) - mu) / std::sqrt(variance + 1e-5) * bn.weight.at(c) + bn.bias.at(c);
    CHECK(bn.running_mean.at(c) == doctest::Approx(0.1 * mu));
    CHECK(bn.running_var.at(c) == doctest::Approx(0.9 + 0.1 * squares / (count - 1)));
  }
  test::check_values(y, x.shape(), want, "training output");

  bn.eval();
  tensor<double> z = bn(x);
  std::vector<double> eval_want;
  for (std::int64_t k = 0; k < x.numel(); ++k) {
    std::int64_t c = (k / 10) % 3;
    eval_want.push_back((x.reshape({-1}).at(k) - bn.running_mean.at(c)) / std::sqrt(bn.running_var.at(c) + 1e-5) *
                            bn.weight.at(c) + bn.bias.at(c));
  }
  test::check_values(z, x.shape(), eval_want, "evaluation output");
  CHECK_THROWS_WITH_AS(bn(zeros<double>({2, 4, 1, 1})), doctest::Contains("C = 3"), shape_error);
}

TEST_CASE("batch norm runs in a static graph, updating its statistics on every call") {
  nn::batch_norm1d<double> eager_bn(4), graph_bn(4);
  tensor<double> x = test::random_tensor<double>({6, 4}, -1, 1, 2);
  tensor<double> a = eager_bn(x);
  set_mode(mode::graph);
  tensor<double> b = graph_bn(x);
  graph_bn(x);
  set_mode(mode::eager);
  eager_bn(x);
  test::check_values(b, a, "graph output");
  test::check_values(graph_bn.running_mean, eager_bn.running_mean, "running mean after two calls");
  test::check_values(graph_bn.running_var, eager_bn.running_var, "running variance after two calls");
}

TEST_CASE("normalization layers pass finite-difference gradient checks, eagerly and in a static graph") {
  nn::batch_norm2d<double> bn(2);
  nn::layer_norm<double> ln({3, 4});
  auto with_bn = [&](const std::vector<tensor<double>>& v) {
    bn.weight = v[1];
    bn.bias = v[2];
    return bn(v[0]);
  };
  auto with_ln = [&](const std::vector<tensor<double>>& v) {
    ln.weight = v[1];
    ln.bias = v[2];
    return ln(v[0]);
  };
  tensor<double> x4 = test::random_tensor<double>({3, 2, 2, 2}, -1, 1, 3), x3 = test::random_tensor<double>({2, 3, 4}, -1, 1, 4);
  std::vector<tensor<double>> bn_at{x4, test::away_from_zero({2}, 5), test::away_from_zero({2}, 6)};
  std::vector<tensor<double>> ln_at{x3, test::away_from_zero({3, 4}, 7), test::away_from_zero({3, 4}, 8)};
  for (mode m : {mode::eager, mode::graph}) {
    set_mode(m);
    test::check_gradients(with_bn, bn_at, m == mode::eager ? "batch norm, eager" : "batch norm, static");
    test::check_gradients(with_ln, ln_at, m == mode::eager ? "layer norm, eager" : "layer norm, static");
    bn.eval();
    test::check_gradients(with_bn, bn_at, "batch norm in evaluation");
    bn.train();
  }
  set_mode(mode::eager);
}

// Batch norm runs as one node of a static graph, its weight and bias not
// the node's operands: they get their gradients when its input needs none.
TEST_CASE("batch norm's parameters get their gradients in a static graph whose input needs none") {
  nn::batch_norm1d<double> bn(3);
  {
    no_grad writing;
    bn.weight.assign(test::away_from_zero({3}, 9));
    bn.bias.assign(test::away_from_zero({3}, 10));
  }
  const tensor<double> x = test::random_tensor<double>({5, 3}, -1, 1, 11), w = test::random_tensor<double>({5, 3}, -1, 1, 12);
  auto weighted = [&](const auto& v) { return sum(bn(v) * w); };
  std::vector<tensor<double>> params{bn.weight, bn.bias};
  auto want = grad(weighted, params)(x);
  auto got = grad(jit(weighted), params)(x);
  test::check_values(got[0], want[0], "weight");
  test::check_values(got[1], want[1], "bias");
  CHECK(max(abs(want[1])).item() > 1e-3);
  // The same through backward() into .grad.
  jit(weighted)(x).backward();
  test::check_values(bn.weight.grad(), want[0], "weight, backward()");
  test::check_values(bn.bias.grad(), want[1], "bias, backward()");
}

TEST_CASE("layer norm equals a double reference loop") {
  nn::layer_norm<double> ln({4});
  tensor<double> x = test::random_tensor<double>({3, 4}, -2, 2, 9);
  std::vector<double> want;
  for (std::int64_t r = 0; r < 3; ++r) {
    double mu = 0, v = 0;
    for (std::int64_t c = 0; c < 4; ++c) mu += x.at(r, c) / 4;
    for (std::int64_t c = 0; c < 4; ++c) v += std::pow(x.at(r, c) - mu, 2) / 4;
    for (std::int64_t c = 0; c < 4; ++c) want.push_back((x.at(r, c) - mu) / std::sqrt(v + 1e-5));
  }
  test::check_values(ln(x), {3, 4}, want, "layer norm");
  CHECK_THROWS_AS(nn::layer_norm<float>(shape{}), value_error);
}
