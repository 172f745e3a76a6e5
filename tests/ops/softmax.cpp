// softmax, log_softmax and cross-entropy: against double references, along
// any axis, and exact at +-80, +-1e4 and +-inf.

#include <cmath>
#include <limits>

#include "support/check.hpp"

using namespace tandem;
using tandem::test::check_values;

namespace {
std::vector<double> reference_log_softmax(const std::vector<double>& row) {
  double peak = -INFINITY;
  for (double v : row) peak = std::max(peak, v);
  double total = 0;
  for (double v : row) total += std::exp(v - peak);
  std::vector<double> out;
  for (double v : row) out.push_back(v - peak - std::log(total));
  return out;
}
}  // namespace

TEST_CASE_TEMPLATE("softmax and log_softmax along every axis", T, float, double) {
  for (std::int64_t axis : {0, 1, -1}) {
    for (auto n : {1, 7, 17, 33, 300}) {
      tensor<T> x = test::random_tensor<T>({3, n}, -20, 20, static_cast<std::uint64_t>(n));
      tensor<T> xa = axis == 0 ? x.transpose(0, 1).contiguous() : x;
      std::vector<double> want_log, want;
      for (std::int64_t r = 0; r < 3; ++r) {
        std::vector<double> row;
        for (std::int64_t i = 0; i < n; ++i) row.push_back(static_cast<double>(x.at(r, i)));
        for (double v : reference_log_softmax(row)) want_log.push_back(v), want.push_back(std::exp(v));
      }
      tensor<T> got_log = log_softmax(xa, axis), got = softmax(xa, axis);
      if (axis == 0) got_log = got_log.transpose(0, 1), got = got.transpose(0, 1);
      check_values(got_log, {3, n}, want_log, "log_softmax", 1e-5, 1e-5);
      check_values(got, {3, n}, want, "softmax", 1e-5, 1e-7);
    }
  }
}

TEST_CASE_TEMPLATE("softmax and log_softmax on rows of every tail size", T, float, double) {
  std::uint64_t seed = 40;
  for (auto n : test::tail_sizes) {
    tensor<T> base = test::random_tensor<T>({n}, -30, 30, seed++);
    std::vector<double> want_log = n ? reference_log_softmax(test::values_of(base)) : std::vector<double>{};
    std::vector<double> want;
    for (double v : want_log) want.push_back(std::exp(v));
    for (auto& [layout, x] : test::layouts(base)) {
      check_values(log_softmax(x), {n}, want_log, "log_softmax " + layout, 1e-5, 1e-5);
      check_values(softmax(x), {n}, want, "softmax " + layout, 1e-5, 1e-9);
    }
  }
}

TEST_CASE("softmax takes limits at the extremes") {
  const float inf = std::numeric_limits<float>::infinity();
  tensor<float> x{{80, -80, 0}, {1e4f, -1e4f, 1e4f}, {-inf, 0, 0}, {inf, 1, inf}, {-inf, -inf, -inf}};
  auto p = softmax(x).to_vector();
  CHECK(p[0] == doctest::Approx(1.0f));
  CHECK(p[1] == 0.0f);
  CHECK(p[3] == 0.5f);
  CHECK(p[4] == 0.0f);
  CHECK(p[6] == 0.0f);
  CHECK(p[7] == 0.5f);
  CHECK(p[9] == 0.5f);
  CHECK(p[10] == 0.0f);
  CHECK(std::isnan(p[12]));
  auto lp = log_softmax(x).to_vector();
  CHECK(lp[1] == doctest::Approx(-160.0f));
  CHECK(lp[4] == doctest::Approx(-2e4f - std::log(2.0f)));
  CHECK(lp[6] == -inf);
  CHECK(lp[9] == doctest::Approx(-std::log(2.0f)));
  CHECK(lp[10] == -inf);
  CHECK(sum(softmax(tensor<float>{{1e4f, 1e4f - 1, 0}})).item() == doctest::Approx(1.0f));
}

TEST_CASE("cross-entropy from logits") {
  const double inf = std::numeric_limits<double>::infinity();
  tensor<double> logits{{2, 1, 0.1}, {0.5, 2.5, 0.3}, {1e4, -1e4, 0}, {-80, 80, 0}, {inf, 0, 0}, {0, -inf, 1}};
  tensor<std::int64_t> target{0, 1, 0, 0, 0, 1};
  auto each = cross_entropy(logits, target, reduction::none).to_vector();
  auto row_loss = [](std::vector<double> row, std::size_t t) { return -reference_log_softmax(row)[t]; };
  CHECK(each[0] == doctest::Approx(row_loss({2, 1, 0.1}, 0)));
  CHECK(each[1] == doctest::Approx(row_loss({0.5, 2.5, 0.3}, 1)));
  CHECK(each[2] == 0.0);
  CHECK(each[3] == doctest::Approx(160.0));
  CHECK(each[4] == 0.0);
  CHECK(each[5] == inf);
  tensor<float> small{{2, 1, 0.1f}, {0.5f, 2.5f, 0.3f}};
  double expected = (row_loss({2, 1, 0.1}, 0) + row_loss({0.5, 2.5, 0.3}, 1)) / 2;
  CHECK(cross_entropy(small, tensor<std::int32_t>{0, 1}).item() == doctest::Approx(expected));
  CHECK(cross_entropy(small, tensor<std::int32_t>{0, 1}, reduction::sum).item() == doctest::Approx(2 * expected));
  CHECK_THROWS_WITH_AS(cross_entropy(small, tensor<std::int64_t>{0, 3}),
                       "tandem::cross_entropy: target 3 at position 1 is outside [0, 3) for logits of shape [2, 3]",
                       index_error);
  CHECK_THROWS_WITH_AS(cross_entropy(small, tensor<std::int64_t>{0}),
                       "tandem::cross_entropy: expected logits [N, C] and targets [N], got [2, 3] and [1]",
                       shape_error);
}
