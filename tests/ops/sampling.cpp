// topk against a sort in double (ties, NaN, both directions, any axis),
// its values' gradient; multinomial: reproducible from the seed,
// frequencies that follow the weights, draws without replacement distinct;
// the errors of both.

#include <algorithm>
#include <map>
#include <numeric>

#include "support/check.hpp"
#include "support/gradcheck.hpp"

using namespace tandem;

TEST_CASE_TEMPLATE("topk matches a stable sort along any axis", T, float, double, std::int32_t) {
  for (std::int64_t extent : {1, 7, 17, 33}) {
    tensor<T> x = test::random_tensor<T>({3, extent}, -4, 4, static_cast<std::uint64_t>(extent));
    for (bool largest : {true, false})
      for (std::int64_t k : {std::int64_t{0}, std::int64_t{1}, extent / 2, extent}) {
        INFO("extent " << extent << " k " << k << " largest " << largest);
        for (std::int64_t axis : {1, 0}) {
          tensor<T> input = axis == 1 ? x : x.transpose(0, 1);
          auto [values, indices] = topk(input, k, axis, largest);
          for (std::int64_t r = 0; r < 3; ++r) {
            std::vector<std::int64_t> order(static_cast<std::size_t>(extent));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
              return largest ? x.at(r, a) > x.at(r, b) : x.at(r, a) < x.at(r, b);
            });
            for (std::int64_t j = 0; j < k; ++j) {
              const std::int64_t got = axis == 1 ? indices.at(r, j) : indices.at(j, r);
              const T value = axis == 1 ? values.at(r, j) : values.at(j, r);
              CHECK(got == order[j]);
              CHECK(value == x.at(r, order[j]));
            }
          }
        }
      }
  }
}

TEST_CASE("topk counts NaN as the largest and passes its gradient to the values it took") {
  tensor<double> x{1.0, std::nan(""), 3.0, 2.0};
  auto [values, indices] = topk(x, 2);
  CHECK(indices.to_vector() == std::vector<std::int64_t>{1, 2});
  test::check_gradients([](const auto& a) { return topk(a[0], 3, -1).first; },
                        {test::random_tensor<double>({2, 6}, -1, 1, 3)}, "topk values");
  CHECK_THROWS_AS(topk(x, 5), value_error);
  CHECK_THROWS_AS(topk(x, -1), value_error);
}

TEST_CASE("multinomial draws follow the weights and repeat with the seed") {
  tensor<double> weights{1.0, 0.0, 3.0, 6.0};
  generator gen(11);
  tensor<std::int64_t> draws = multinomial(weights, 20000, gen, true);
  std::map<std::int64_t, int> counts;
  for (auto c : draws.to_vector()) ++counts[c];
  CHECK(counts[1] == 0);
  CHECK(std::abs(counts[0] / 20000.0 - 0.1) < 0.01);
  CHECK(std::abs(counts[2] / 20000.0 - 0.3) < 0.015);
  CHECK(std::abs(counts[3] / 20000.0 - 0.6) < 0.015);
  generator again(11);
  CHECK(multinomial(weights, 20000, again, true).to_vector() == draws.to_vector());

  tensor<float> rows = softmax(test::random_tensor<float>({5, 7}, -2, 2, 4), 1);
  generator g(3);
  tensor<std::int64_t> picks = multinomial(rows, 7, g);
  CHECK(picks.shape() == shape{5, 7});
  for (std::int64_t r = 0; r < 5; ++r) {
    std::vector<std::int64_t> row;
    for (std::int64_t s = 0; s < 7; ++s) row.push_back(picks.at(r, s));
    std::sort(row.begin(), row.end());
    CHECK(std::adjacent_find(row.begin(), row.end()) == row.end());
  }
}

TEST_CASE("multinomial refuses weights it cannot draw from") {
  generator gen(1);
  CHECK_THROWS_AS(multinomial(tensor<float>{0, 0}, 1, gen), value_error);
  CHECK_THROWS_AS(multinomial(tensor<float>{1, -1}, 1, gen), value_error);
  CHECK_THROWS_AS(multinomial(tensor<float>{1, std::nanf("")}, 1, gen), value_error);
  CHECK_THROWS_AS(multinomial(tensor<float>{1, 2}, 3, gen), value_error);
  CHECK_THROWS_AS(multinomial(tensor<float>{1, 0, 0}, 2, gen), value_error);
  CHECK_THROWS_AS(multinomial(zeros<float>({2, 2, 2}), 1, gen), shape_error);
}
