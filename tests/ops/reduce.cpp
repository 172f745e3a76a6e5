// Reductions against double-precision loops over every axis set, with
// keepdims, on tail sizes and non-contiguous views; exact integer sums;
// NaN handling; bit-identical results for any thread count.

#include <cmath>
#include <limits>
#include <string>

#include "support/check.hpp"

using namespace tandem;
using tandem::test::check_values;

namespace {

// Reference reduction of x over the axes in `reduced` (true = reduced), in double.
template <class T, class Fold>
std::vector<double> reference(const tensor<T>& x, const std::vector<bool>& reduced, double start, Fold fold,
                              shape& kept_shape) {
  kept_shape.clear();
  for (std::size_t d = 0; d < reduced.size(); ++d)
    if (!reduced[d]) kept_shape.push_back(x.shape()[d]);
  std::vector<double> out(static_cast<std::size_t>(numel(kept_shape)), start);
  test::for_each_index(x.shape(), [&](const std::vector<std::int64_t>& i) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < reduced.size(); ++d)
      if (!reduced[d]) flat = flat * x.shape()[d] + i[d];
    out[flat] = fold(out[flat], test::at_broadcast(x, i));
  });
  return out;
}

std::vector<std::vector<bool>> every_axis_set(std::size_t rank) {
  std::vector<std::vector<bool>> sets;
  for (std::size_t mask = 1; mask < (1u << rank); ++mask) {
    std::vector<bool> set(rank);
    for (std::size_t d = 0; d < rank; ++d) set[d] = (mask >> d) & 1;
    sets.push_back(set);
  }
  return sets;
}

axes axes_of(const std::vector<bool>& set) {
  std::vector<std::int64_t> list;
  for (std::size_t d = 0; d < set.size(); ++d)
    if (set[d]) list.push_back(static_cast<std::int64_t>(d));
  return axes(std::span<const std::int64_t>(list));
}

}  // namespace

TEST_CASE_TEMPLATE("sum, mean, max, min, prod over every axis set", T, float, double) {
  std::uint64_t seed = 1;
  for (shape s : {shape{4, 5, 6}, shape{3, 1, 33}, shape{0, 4, 2}, shape{3, 4, 9, 8}}) {
    tensor<T> base = test::random_tensor<T>(s, 0.5, 1.5, seed++);
    for (auto& [layout, x] : test::layouts(base))
      for (const auto& set : every_axis_set(s.size())) {
        std::string context = layout + " " + to_string(s);
        shape kept;
        auto want_sum = reference(x, set, 0.0, [](double a, double v) { return a + v; }, kept);
        check_values(sum(x, axes_of(set)), kept, want_sum, "sum " + context, 1e-5);
        std::int64_t count = 1;
        for (std::size_t d = 0; d < set.size(); ++d)
          if (set[d]) count *= s[d];
        std::vector<double> want_mean;
        for (double v : want_sum) want_mean.push_back(v / static_cast<double>(count));
        check_values(mean(x, axes_of(set)), kept, want_mean, "mean " + context, 1e-5);
        auto want_prod = reference(x, set, 1.0, [](double a, double v) { return a * v; }, kept);
        check_values(prod(x, axes_of(set)), kept, want_prod, "prod " + context, 1e-4);
        if (count > 0) {
          auto want_max = reference(x, set, -INFINITY, [](double a, double v) { return std::max(a, v); }, kept);
          check_values(max(x, axes_of(set)), kept, want_max, "max " + context, 0, 0);
          auto want_min = reference(x, set, INFINITY, [](double a, double v) { return std::min(a, v); }, kept);
          check_values(min(x, axes_of(set)), kept, want_min, "min " + context, 0, 0);
        }
      }
  }
}

TEST_CASE_TEMPLATE("whole-tensor reductions on tail sizes", T, float, double) {
  std::uint64_t seed = 50;
  for (auto n : test::tail_sizes) {
    tensor<T> base = test::random_tensor<T>({n}, -1, 1, seed++);
    for (auto& [layout_name, x] : test::layouts(base)) {
      // A named reference: clang 14 cannot capture a structured binding (INFO does).
      const std::string& layout = layout_name;
      double total = 0, largest = -INFINITY, abs_total = 0;
      for (double v : test::values_of(x)) total += v, abs_total += std::abs(v), largest = std::max(largest, v);
      INFO(layout, " n=", n);
      CHECK(std::abs(sum(x).item() - total) <= 1e-6 * abs_total + 1e-7);
      if (n > 0) {
        CHECK(max(x).item() == static_cast<T>(largest));
        CHECK(static_cast<double>(x.to_vector()[argmax(x).item()]) == largest);
      }
    }
  }
}

TEST_CASE("keepdims keeps reduced axes as 1") {
  tensor<float> x = ones({2, 3, 4});
  CHECK(sum(x, {0, 2}, true).shape() == shape{1, 3, 1});
  CHECK(sum(x, -1).shape() == shape{2, 3});
  CHECK(sum(x).shape() == shape{});
  CHECK(sum(x, axes::all(), true).shape() == shape{1, 1, 1});
  CHECK(sum(x, {0, 2}, true).to_vector() == std::vector<float>{8, 8, 8});
}

TEST_CASE("integer and bool sums are exact int64") {
  tensor<std::int32_t> x = full<std::int32_t>({3, 1000}, 2000000);
  auto total = sum(x);
  static_assert(std::is_same_v<decltype(total), tensor<std::int64_t>>);
  CHECK(total.item() == 6000000000LL);
  CHECK(sum(tensor<bool>{true, true, false}).item() == 2);
  CHECK(max(tensor<std::int64_t>{-5, 7, 3}).item() == 7);
  CHECK(prod(tensor<std::int32_t>{2, 3, 4}).item() == 24);
  CHECK(mean(tensor<std::int32_t>{1, 2}).item() == 1.5f);
}

TEST_CASE("argmax and argmin take the first extreme; NaN wins") {
  tensor<float> x{{1, 5, 5, 2}, {7, -1, -1, 7}};
  CHECK(argmax(x, 1).to_vector() == std::vector<std::int64_t>{1, 0});
  CHECK(argmin(x, 1).to_vector() == std::vector<std::int64_t>{0, 1});
  CHECK(argmax(x, 0).to_vector() == std::vector<std::int64_t>{1, 0, 0, 1});
  CHECK(argmax(x).item() == 4);
  CHECK(argmax(x.transpose(0, 1), 0, true).shape() == shape{1, 2});
  x.at(1, 2) = std::numeric_limits<float>::quiet_NaN();
  CHECK(argmax(x, 1).to_vector() == std::vector<std::int64_t>{1, 2});
  CHECK(std::isnan(max(x).item()));
  CHECK(std::isnan(min(x, 1).to_vector()[1]));
  tensor<float> big = zeros({40000});
  big.at(33000) = 3;
  big.at(39000) = 3;
  CHECK(argmax(big).item() == 33000);
}

TEST_CASE_TEMPLATE("var, std and logsumexp", T, float, double) {
  tensor<T> x = test::random_tensor<T>({6, 7}, -3, 3, 9);
  std::vector<double> values = test::values_of(x);
  for (std::int64_t axis : {0, 1}) {
    shape kept{axis == 0 ? 7 : 6};
    std::vector<double> want_var, want_lse;
    for (std::int64_t k = 0; k < kept[0]; ++k) {
      std::vector<double> slice;
      for (std::int64_t m = 0; m < (axis == 0 ? 6 : 7); ++m)
        slice.push_back(axis == 0 ? values[m * 7 + k] : values[k * 7 + m]);
      double mu = 0, ss = 0, se = 0;
      for (double v : slice) mu += v;
      mu /= static_cast<double>(slice.size());
      for (double v : slice) ss += (v - mu) * (v - mu), se += std::exp(v);
      want_var.push_back(ss / static_cast<double>(slice.size() - 1));
      want_lse.push_back(std::log(se));
    }
    check_values(var(x, axis), kept, want_var, "var", 1e-5);
    std::vector<double> want_std;
    for (double v : want_var) want_std.push_back(std::sqrt(v));
    check_values(tandem::std(x, axis), kept, want_std, "std", 1e-5);
    check_values(logsumexp(x, axis), kept, want_lse, "logsumexp", 1e-5);
  }
  CHECK(var(tensor<T>{1, 2, 3, 4}, 0, false, 0).item() == doctest::Approx(1.25));
}

TEST_CASE("logsumexp is exact at the extremes") {
  const float inf = std::numeric_limits<float>::infinity();
  tensor<float> x{{1e4f, 1e4f}, {-1e4f, -1e4f}, {-inf, -inf}, {inf, 0}, {-inf, 0}};
  auto got = logsumexp(x, 1).to_vector();
  CHECK(got[0] == doctest::Approx(1e4f + std::log(2.0f)));
  CHECK(got[1] == doctest::Approx(-1e4f + std::log(2.0f)));
  CHECK(got[2] == -inf);
  CHECK(got[3] == inf);
  CHECK(got[4] == 0);
}

TEST_CASE("reductions give the same bits for any thread count") {
  generator gen(5);
  tensor<float> x = normal({1000003}, 0, 1, gen);
  tensor<float> m = normal({300, 3001}, 0, 1, gen);
  tensor<float> images = normal({16, 5, 30, 30}, 0, 1, gen);
  set_num_threads(1);
  float one_total = sum(x).item();
  auto one_rows = sum(m, 1).to_vector(), one_cols = sum(m, 0).to_vector();
  auto one_channels = sum(images, {0, 2, 3}).to_vector();
  set_num_threads(3);
  float many_total = sum(x).item();
  auto many_rows = sum(m, 1).to_vector(), many_cols = sum(m, 0).to_vector();
  auto many_channels = sum(images, {0, 2, 3}).to_vector();
  set_num_threads(0);
  CHECK(one_total == many_total);
  CHECK(one_rows == many_rows);
  CHECK(one_cols == many_cols);
  CHECK(one_channels == many_channels);
}

TEST_CASE("reduction mistakes name the op and the shapes") {
  tensor<float> x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(sum(x, 2), "tandem::sum: axis 2 is out of range [-2, 2) for a tensor of shape [2, 3]", index_error);
  CHECK_THROWS_WITH_AS(mean(x, {1, -1}), "tandem::mean: axis -1 is given twice for shape [2, 3]", index_error);
  CHECK_THROWS_WITH_AS(max(zeros({2, 0}), 1), "tandem::max: cannot reduce over zero elements (shape [2, 0])",
                       value_error);
  CHECK_THROWS_WITH_AS(argmin(zeros({0})), "tandem::argmin: cannot reduce over zero elements (shape [0])", value_error);
  CHECK(sum(zeros({2, 0}), 1).to_vector() == std::vector<float>{0, 0});
  CHECK(std::isnan(mean(zeros({0})).item()));
}
