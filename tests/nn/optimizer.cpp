// Optimizers against double reference loops of PyTorch's update rules over
// several steps, on sizes that hit SIMD tails; skipped parameters; bad
// options; learning-rate schedules.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "support/check.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

struct holder : nn::module<holder> {
  tensor<double> w;
  explicit holder(std::int64_t n) : w(test::random_tensor<double>({n}, -1, 1, 1)) { register_parameter("w", w); }
  auto forward(const auto& x) const { return x * w; }
};

// The gradient given at step `t` (0-based): fixed values, so the reference
// sees the same ones.
tensor<double> gradient_at(std::int64_t n, int t) { return test::random_tensor<double>({n}, -1, 1, 100 + t); }

template <class Opt, class Reference>
void check_against(const char* what, std::int64_t n, Opt make, Reference step) {
  INFO(what << ", n = " << n);
  holder h(n);
  std::vector<double> p = test::values_of(h.w), state1(static_cast<std::size_t>(n)), state2(static_cast<std::size_t>(n));
  auto opt = make(h.named_parameters());
  for (int t = 0; t < 3; ++t) {
    tensor<double> g = gradient_at(n, t);
    h.w.zero_grad();
    sum(h.w * g).backward();
    opt.step();
    std::vector<double> gv = test::values_of(g);
    for (std::size_t i = 0; i < p.size(); ++i) step(t, p[i], gv[i], state1[i], state2[i]);
  }
  test::check_values(h.w, {n}, p, what, 1e-12, 1e-12);
}

}  // namespace

TEST_CASE("SGD follows its reference loop: plain, momentum, dampening, Nesterov, weight decay") {
  for (std::int64_t n : test::tail_sizes) {
    check_against("plain", n, [](auto ps) { return nn::sgd(ps, {.lr = 0.1}); },
                  [](int, double& p, double g, double&, double&) { p -= 0.1 * g; });
    check_against("momentum and decay", n,
                  [](auto ps) { return nn::sgd(ps, {.lr = 0.1, .momentum = 0.9, .dampening = 0.25, .weight_decay = 0.01}); },
                  [](int t, double& p, double g, double& b, double&) {
                    double d = g + 0.01 * p;
                    b = t == 0 ? d : 0.9 * b + 0.75 * d;
                    p -= 0.1 * b;
                  });
    check_against("nesterov", n, [](auto ps) { return nn::sgd(ps, {.lr = 0.05, .momentum = 0.8, .nesterov = true}); },
                  [](int t, double& p, double g, double& b, double&) {
                    b = t == 0 ? g : 0.8 * b + g;
                    p -= 0.05 * (g + 0.8 * b);
                  });
  }
}

TEST_CASE("Adam and AdamW follow their reference loops") {
  for (std::int64_t n : test::tail_sizes) {
    auto adam_step = [](bool decoupled) {
      return [decoupled](int t, double& p, double g, double& m, double& v) {
        double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
        if (decoupled) p *= 1 - lr * wd;
        else g += wd * p;
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        double mh = m / (1 - std::pow(b1, t + 1)), vh = v / (1 - std::pow(b2, t + 1));
        p -= lr * mh / (std::sqrt(vh) + eps);
      };
    };
    nn::adam_options options{.lr = 0.01, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1};
    check_against("adam", n, [&](auto ps) { return nn::adam(ps, options); }, adam_step(false));
    check_against("adamw", n, [&](auto ps) { return nn::adamw(ps, options); }, adam_step(true));
  }
}

TEST_CASE("parameters without a gradient are left alone; bad options throw") {
  holder h(5);
  tensor<double> before = h.w.clone();
  nn::adam opt(h.named_parameters(), {});
  opt.step();
  test::check_values(h.w, before, "no gradient, no update");
  CHECK_THROWS_AS(nn::sgd(h.named_parameters(), {.lr = -1}), value_error);
  CHECK_THROWS_AS(nn::sgd(h.named_parameters(), {.momentum = 0, .nesterov = true}), value_error);
  CHECK_THROWS_AS(nn::adam(h.named_parameters(), {.beta1 = 1.0}), value_error);
  CHECK_THROWS_AS(nn::adam(h.named_parameters(), {.eps = 0}), value_error);
}

TEST_CASE("learning-rate schedules") {
  holder h(1);
  nn::sgd opt(h.named_parameters(), {.lr = 1.0});
  nn::step_schedule steps(opt, 2, 0.5);
  std::vector<double> seen;
  for (int i = 0; i < 5; ++i) {
    steps.step();
    seen.push_back(opt.learning_rate());
  }
  CHECK(seen == std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25});

  nn::sgd other(h.named_parameters(), {.lr = 1.0});
  nn::cosine_schedule cosine(other, 4, 0.1);
  cosine.step();
  CHECK(other.learning_rate() == doctest::Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(3.14159265358979 / 4))));
  for (int i = 0; i < 5; ++i) cosine.step();
  CHECK(other.learning_rate() == doctest::Approx(0.1));

  // The GPT baseline's: 1e-3 * min(1, (s + 1) / 100) * (0.1 + 0.9 * (1 + cos(pi * min(1, s / T))) / 2).
  nn::adamw adam(h.named_parameters(), {.lr = 1e-3});
  nn::warmup_cosine_schedule warm(adam, 100, 1000, 1e-4);
  for (std::int64_t s = 0; s < 1200; ++s) {
    const double want = 1e-3 * std::min(1.0, (s + 1) / 100.0) *
                        (0.1 + 0.9 * 0.5 * (1 + std::cos(3.14159265358979 * std::min(1.0, s / 1000.0))));
    REQUIRE(adam.learning_rate() == doctest::Approx(want).epsilon(1e-12));
    warm.step();
  }
  CHECK_THROWS_AS(nn::warmup_cosine_schedule(adam, -1, 10), value_error);
  CHECK_THROWS_AS(nn::warmup_cosine_schedule(adam, 1, 0), value_error);
}

TEST_CASE("clip_grad_norm scales gradients over the norm to it, on .grad and in a step's hook") {
  holder h(5);
  auto params = h.named_parameters();
  sum(square(h.w) * 50.0).backward();
  tensor<double> before = h.w.grad().clone();
  const double norm = std::sqrt(sum(square(before)).item());
  REQUIRE(norm > 1);
  CHECK(nn::clip_grad_norm(params, 1.0) == doctest::Approx(norm));
  test::check_values(h.w.grad(), before * (1 / (norm + 1e-6)), "clipped");
  CHECK(std::sqrt(sum(square(h.w.grad())).item()) == doctest::Approx(1.0).epsilon(1e-5));
  // Under the limit: untouched.
  tensor<double> small = h.w.grad().clone();
  CHECK(nn::clip_grad_norm(params, 10.0) == doctest::Approx(1.0).epsilon(1e-5));
  test::check_values(h.w.grad(), small, "under the limit");

  nn::step_gradients gradients{{}, {before.clone()}, {}, {h.w}};
  auto seen = std::make_shared<double>(0);
  nn::clip_grad_norm(2.0, seen)(gradients);
  CHECK(*seen == doctest::Approx(norm));
  test::check_values(gradients.doubles[0], before * (2 / (norm + 1e-6)), "hook");
  CHECK_THROWS_AS(nn::clip_grad_norm(0.0), value_error);
}

#if TANDEM_FLUSHES_SUBNORMALS
TEST_CASE("updates flush subnormal numbers to zero on the host, and leave the caller's mode as it was") {
  // A gradient and a moment below the least normal double: Adam's update
  // reads them as zeros and writes zeros, on every thread that runs it.
  const double tiny = std::numeric_limits<double>::min() / 2;
  for (std::int64_t n : {std::int64_t{17}, test::largest_size}) {
    INFO("n = " << n);
    holder h(n);
    tensor<double> before = h.w.clone();
    nn::adam opt(h.named_parameters(), {});
    sum(h.w * full<double>({n}, tiny)).backward();
    const unsigned mode = _mm_getcsr();
    opt.step();
    CHECK(_mm_getcsr() == mode);
    test::check_values(h.w, before, "a subnormal gradient moves nothing", 0, 0);
    for (const auto& [name, state] : opt.state())
      if (name != "steps_and_learning_rate")
        for (double s : test::values_of(std::get<tensor<double>>(state))) REQUIRE(s == 0);

    // The pool's threads are back in the default mode: halving the least
    // normal number gives a subnormal, not zero.
    tensor<double> halves = full<double>({n}, std::numeric_limits<double>::min()) * 0.5;
    for (double x : test::values_of(halves)) REQUIRE(x == std::numeric_limits<double>::min() / 2);
  }
}
#endif
