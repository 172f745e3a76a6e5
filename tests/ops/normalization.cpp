// batch_variance against a double reference loop on [N, C] and
// [N, C, H, W] shapes whose planes hit SIMD tails, on non-contiguous views;
// its gradient by finite differences, and its second derivative against the
// composite var's; the same bits on any thread count;
// bad shapes.
#include <doctest/doctest.h>

#include <string>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

// Per channel (axis 1): the mean and the biased variance, in double.
std::pair<std::vector<double>, std::vector<double>> moments_reference(const tensor<double>& x) {
  std::int64_t channels = x.shape(1);
  std::vector<double> sum(static_cast<std::size_t>(channels)), squares(sum.size());
  std::vector<double> values = test::values_of(x);
  std::int64_t inner = x.numel() / (x.shape(0) * channels);
  for (std::size_t e = 0; e < values.size(); ++e) sum[(e / inner) % channels] += values[e];
  double count = static_cast<double>(x.numel() / channels);
  for (auto& s : sum) s /= count;
  for (std::size_t e = 0; e < values.size(); ++e) {
    double d = values[e] - sum[(e / inner) % channels];
    squares[(e / inner) % channels] += d * d;
  }
  for (auto& s : squares) s /= count;
  return {sum, squares};
}

shape statistics_shape(const shape& s) {
  shape out{1, s[1]};
  if (s.size() == 4) {
    out.push_back(1);
    out.push_back(1);
  }
  return out;
}

}  // namespace

TEST_CASE("batch_variance equals a double loop on every layout, with its mean") {
  std::uint64_t seed = 1;
  for (shape s : {shape{1, 1}, shape{7, 3}, shape{17, 5}, shape{1, 1, 1, 1}, shape{3, 4, 7, 9}, shape{2, 3, 33, 31}}) {
    tensor<double> base = test::random_tensor<double>(s, -2, 3, seed++);
    for (const auto& [layout_name, x] : test::layouts(base)) {
      // A named reference: clang 14 cannot capture a structured binding (INFO does).
      const std::string& layout = layout_name;
      INFO(layout << " " << to_string(s));
      auto [mean_want, var_want] = moments_reference(x);
      tensor<double> mean_got;
      test::check_values(batch_variance(x, &mean_got), statistics_shape(s), var_want, "variance", 1e-12, 1e-12);
      test::check_values(mean_got, statistics_shape(s), mean_want, "mean", 1e-12, 1e-12);
      tensor<float> xf = x.astype<float>();
      test::check_values(batch_variance(xf), statistics_shape(s), var_want, "float32", 1e-5, 1e-5);
    }
  }
}

TEST_CASE("batch_variance passes finite-difference gradient checks") {
  for (shape s : {shape{6, 3}, shape{2, 3, 5, 4}}) {
    tensor<double> x = test::random_tensor<double>(s, -1, 1, 9);
    test::check_gradients([](const auto& v) { return batch_variance(v[0]); }, {x}, to_string(s));
    test::check_gradients([](const auto& v) { return square(batch_variance(v[0])); }, {x}, "squared " + to_string(s));
  }
}

TEST_CASE("batch_variance's second derivative equals the composite var's") {
  tensor<double> x = test::random_tensor<double>({3, 2, 4, 5}, -1, 1, 12);
  auto first = grad([](auto a) { return sum(square(batch_variance(a))); });
  auto first_composite = grad([](auto a) { return sum(square(var(a, {0, 2, 3}, true, 0))); });
  tensor<double> second = grad([&](auto a) { return sum(square(first(a))); })(x);
  tensor<double> second_composite = grad([&](auto a) { return sum(square(first_composite(a))); })(x);
  test::check_values(first(x), first_composite(x), "first", 1e-12, 1e-12);
  test::check_values(second, second_composite, "second", 1e-10, 1e-12);
}

TEST_CASE("batch_variance gives the same bits for any thread count") {
  generator gen(4);
  tensor<float> x = normal({64, 16, 28, 28}, 0.5, 2, gen);
  set_num_threads(1);
  auto one = batch_variance(x).to_vector();
  set_num_threads(3);
  auto three = batch_variance(x).to_vector();
  set_num_threads(0);
  CHECK(one == three);
}

TEST_CASE("batch_variance names its shape mistakes") {
  CHECK_THROWS_WITH_AS(batch_variance(zeros<double>({2, 3, 4})),
                       "tandem::batch_variance: expected a non-empty [N, C] or [N, C, H, W], got [2, 3, 4]", shape_error);
  CHECK_THROWS_AS(batch_variance(zeros<double>({0, 3})), shape_error);
}
