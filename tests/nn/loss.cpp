// Losses against double reference loops for every reduction, gradients by
// finite differences eagerly and in a static graph, and bad shapes.
#include <doctest/doctest.h>

#include <cmath>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

const tensor<std::int64_t> labels{2, 0, 1, 2, 1};

// Per-example reference values, then reduced as `how` says.
std::vector<double> reduce_reference(const std::vector<double>& each, reduction how) {
  if (how == reduction::none) return each;
  double total = 0;
  for (double v : each) total += v;
  return {how == reduction::sum ? total : total / static_cast<double>(each.size())};
}
shape reduced_shape(std::int64_t n, reduction how) { return how == reduction::none ? shape{n} : shape{}; }

std::vector<double> log_softmax_row(const tensor<double>& x, std::int64_t i) {
  double top = -INFINITY, total = 0;
  for (std::int64_t c = 0; c < x.shape(1); ++c) top = std::max(top, x.at(i, c));
  for (std::int64_t c = 0; c < x.shape(1); ++c) total += std::exp(x.at(i, c) - top);
  std::vector<double> out;
  for (std::int64_t c = 0; c < x.shape(1); ++c) out.push_back(x.at(i, c) - top - std::log(total));
  return out;
}

}  // namespace

TEST_CASE("losses equal double reference loops for every reduction") {
  tensor<double> logits = test::random_tensor<double>({5, 3}, -3, 3, 1);
  tensor<double> target = test::random_tensor<double>({5, 3}, 0, 1, 2);
  for (reduction how : {reduction::mean, reduction::sum, reduction::none}) {
    INFO("reduction " << static_cast<int>(how));
    std::vector<double> ce, smoothed, nll, mse, bce;
    for (std::int64_t i = 0; i < 5; ++i) {
      auto lp = log_softmax_row(logits, i);
      std::int64_t t = labels.at(i);
      ce.push_back(-lp[static_cast<std::size_t>(t)]);
      nll.push_back(-lp[static_cast<std::size_t>(t)]);
      smoothed.push_back(0.9 * -lp[static_cast<std::size_t>(t)] - 0.1 * (lp[0] + lp[1] + lp[2]) / 3);
    }
    for (std::int64_t i = 0; i < 15; ++i) {
      double x = logits.reshape({15}).at(i), t = target.reshape({15}).at(i);
      mse.push_back((x - t) * (x - t));
      bce.push_back(-(t * std::log(1 / (1 + std::exp(-x))) + (1 - t) * std::log(1 - 1 / (1 + std::exp(-x)))));
    }
    test::check_values(nn::cross_entropy(logits, labels, {.how = how}), reduced_shape(5, how), reduce_reference(ce, how), "ce");
    test::check_values(nn::cross_entropy(logits, labels, {.label_smoothing = 0.1, .how = how}), reduced_shape(5, how),
                       reduce_reference(smoothed, how), "smoothed ce");
    test::check_values(nn::nll_loss(log_softmax(logits, 1), labels, how), reduced_shape(5, how), reduce_reference(nll, how), "nll");
    shape flat = how == reduction::none ? shape{5, 3} : shape{};
    test::check_values(nn::mse_loss(logits, target, how), flat, reduce_reference(mse, how), "mse");
    test::check_values(nn::bce_with_logits(logits, target, how), flat, reduce_reference(bce, how), "bce");
  }
  tensor<double> extreme{{-1e4, 1e4}};
  CHECK(nn::bce_with_logits(extreme, tensor<double>{{0.0, 1.0}}).item() == doctest::Approx(0.0));
}

TEST_CASE("losses pass finite-difference gradient checks, eagerly and in a static graph") {
  tensor<double> logits = test::away_from_zero({5, 3}, 3), target = test::random_tensor<double>({5, 3}, 0, 1, 4);
  auto all = [&](const auto& x) {
    return nn::cross_entropy(x, labels, {.label_smoothing = 0.2}) + nn::nll_loss(log_softmax(x, 1), labels, reduction::sum) +
           nn::mse_loss(x, target) + nn::bce_with_logits(x, target, reduction::sum);
  };
  test::check_gradients([&](const auto& v) { return all(v[0]); }, {logits}, "eager");
  auto graph = jit([&](auto x) { return all(x); });
  test::check_gradients([&](const auto& v) { return graph(v[0]); }, {logits}, "static");
  test::check_values(graph(logits), all(logits), "static value");
}

TEST_CASE("losses report bad inputs") {
  tensor<double> logits = zeros<double>({4, 3});
  CHECK_THROWS_WITH_AS(nn::nll_loss(logits, tensor<std::int64_t>{0, 1}), doctest::Contains("tandem::nn::nll_loss"), shape_error);
  CHECK_THROWS_AS(nn::cross_entropy(logits, tensor<std::int64_t>{0, 1, 2, 0}, {.label_smoothing = 1.5}), value_error);
  CHECK_THROWS_AS(nn::mse_loss(logits, zeros<double>({4, 2})), shape_error);
}
