// nn::grad_scaler: a float16 product's gradient that underflows without a
// scale and survives with one; a step that overflows float16 skipped and
// the scale halved; growth after an interval; the same through
// nn::train_step, eager and as one static graph per step.
#include <doctest/doctest.h>

#include "support/check.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

// A weight whose gradient is x's column sums times `slope`: 1e-9 is below
// float16's least subnormal (6e-8), so a product of float16 operands
// rounds the gradient flowing into it to zero.
struct tiny_gradient {
  tensor<float> x = test::random_tensor<float>({4, 8}, 0.5, 1.5, 71);
  tensor<float> w = test::random_tensor<float>({8, 3}, -1, 1, 72);
  tensor<float> loss(double slope) const { return sum(matmul(x, w)) * slope; }
  // d loss / d w, in double.
  std::vector<double> expected(double slope) const {
    std::vector<double> want;
    for (std::int64_t p = 0; p < 8; ++p)
      for (std::int64_t j = 0; j < 3; ++j) {
        double column = 0;
        for (std::int64_t i = 0; i < 4; ++i) column += static_cast<double>(x.at(i, p));
        want.push_back(column * slope);
      }
    return want;
  }
};

}  // namespace

TEST_CASE("a grad_scaler keeps a gradient that float16 products would flush to zero") {
  const autocast scope(dtype::float16);
  tiny_gradient net;
  net.w.set_requires_grad(true);
  net.loss(1e-9).backward();
  CHECK(max(abs(net.w.grad())).item() == 0.0f);

  net.w.grad().fill(0);
  nn::sgd optimizer({{"w", net.w}}, {.lr = 0});
  nn::grad_scaler scaler;
  CHECK(scaler.scale_factor() == 65536);
  scaler.scale(net.loss(1e-9)).backward();
  CHECK(scaler.unscale(optimizer));
  // float16 operands: the sensitivity and x each within 2^-11.
  test::check_values(net.w.grad(), {8, 3}, net.expected(1e-9), "unscaled gradient", 2e-3, 0);
  CHECK(scaler.step(optimizer));
  scaler.update();
  CHECK(scaler.skipped_steps() == 0);
}

TEST_CASE("a grad_scaler skips a step whose float16 products overflow, halves its scale, and grows it again") {
  const autocast scope(dtype::float16);
  tiny_gradient net;
  net.w.set_requires_grad(true);
  const std::vector<float> before = net.w.to_vector();
  nn::sgd optimizer({{"w", net.w}}, {.lr = 0.1});
  nn::grad_scaler scaler({.init_scale = 65536, .growth_interval = 2});
  // A sensitivity of 65536 rounds to Inf in float16 (its largest is 65504).
  auto step = [&] {
    optimizer.zero_grad();
    scaler.scale(net.loss(1)).backward();
    const bool stepped = scaler.step(optimizer);
    scaler.update();
    return stepped;
  };
  CHECK_FALSE(step());
  CHECK(net.w.to_vector() == before);
  CHECK(scaler.skipped_steps() == 1);
  CHECK(scaler.scale_factor() == 32768);
  CHECK(optimizer.steps() == 0);
  CHECK(step());
  CHECK(net.w.to_vector() != before);
  CHECK(scaler.scale_factor() == 32768);
  CHECK(step());
  CHECK(scaler.scale_factor() == 65536);
  CHECK(optimizer.steps() == 2);

  CHECK_THROWS_AS(scaler.update(), error);
  CHECK_THROWS_AS(nn::grad_scaler({.init_scale = 0}), value_error);
  CHECK_THROWS_AS(nn::grad_scaler({.backoff_factor = 1}), value_error);
}

// The scaled step in both modes: the loss it returns is unscaled, the same
// steps are skipped, and the parameters follow the same path.
TEST_CASE("a train_step with a grad_scaler scales, unscales and skips alike, eagerly and as one static graph") {
  auto run = [](bool compiled) {
    const autocast scope(dtype::float16);
    generator gen(5);
    nn::linear<float> layer(8, 3, gen);
    nn::adam optimizer(layer.named_parameters(), {.lr = 5e-2});
    nn::grad_scaler scaler({.init_scale = 65536, .growth_interval = 3});
    auto loss = [&layer](const auto& x, const auto& target) { return mean(square(layer(x) - target)) * 200.0; };
    nn::train_step eager(loss, optimizer, scaler);
    auto step = compiled ? jit(eager) : eager;
    const tensor<float> x = test::random_tensor<float>({6, 8}, -1, 1, 81);
    const tensor<float> target = test::random_tensor<float>({6, 3}, -1, 1, 82);
    std::vector<float> losses;
    for (int t = 0; t < 16; ++t) losses.push_back(step(x, target).item());
    return std::tuple{losses, scaler.skipped_steps(), scaler.scale_factor(), layer.weight.to_vector()};
  };
  const auto [eager_losses, eager_skipped, eager_scale, eager_weight] = run(false);
  const auto [graph_losses, graph_skipped, graph_scale, graph_weight] = run(true);
  CHECK(eager_skipped >= 1);
  CHECK(graph_skipped == eager_skipped);
  CHECK(graph_scale == eager_scale);
  for (std::size_t t = 0; t < eager_losses.size(); ++t) {
    INFO("step " << t);
    CHECK(graph_losses[t] == doctest::Approx(eager_losses[t]).epsilon(1e-4));
  }
  CHECK(eager_losses.back() < eager_losses.front());
  for (std::size_t k = 0; k < eager_weight.size(); ++k) CHECK(graph_weight[k] == doctest::Approx(eager_weight[k]).epsilon(1e-3));
}
