// tril, triu and masked_fill against double reference loops: every
// diagonal offset, batches of matrices, empty and tail-sized matrices,
// strided views, integer elements, broadcast masks; their gradients by
// finite differences; their errors.

#include "support/check.hpp"
#include "support/gradcheck.hpp"

using namespace tandem;

TEST_CASE_TEMPLATE("tril and triu keep the band a double loop keeps", T, float, double, std::int64_t) {
  const std::vector<shape> shapes{{0, 0}, {1, 1}, {7, 17}, {17, 7}, {3, 5, 33}, {2, 1, 4, 4}};
  std::uint64_t seed = 1;
  for (const auto& s : shapes)
    for (std::int64_t diagonal : {-20, -2, -1, 0, 1, 3, 40}) {
      tensor<T> base = test::random_tensor<T>(s, -9, 9, seed++);
      const std::int64_t rows = s[s.size() - 2], columns = s.back();
      std::vector<double> lower, upper;
      const std::vector<double> values = test::values_of(base);
      for (std::size_t e = 0; e < values.size(); ++e) {
        const std::int64_t j = static_cast<std::int64_t>(e) % columns, i = static_cast<std::int64_t>(e) / columns % rows;
        lower.push_back(j - i <= diagonal ? values[e] : 0);
        upper.push_back(j - i >= diagonal ? values[e] : 0);
      }
      for (const auto& entry : test::layouts(base)) {
        const tensor<T>& x = entry.second;
        INFO(entry.first << ", diagonal " << diagonal << ", shape " << to_string(s));
        test::check_values(tril(x, diagonal), s, lower, "tril");
        test::check_values(triu(x, diagonal), s, upper, "triu");
      }
    }
}

TEST_CASE("tril, triu and masked_fill: gradients against finite differences") {
  tensor<double> x = test::random_tensor<double>({2, 4, 5}, -1, 1, 3);
  tensor<bool> mask = test::random_tensor<bool>({4, 1}, 0, 1, 4);
  test::check_gradients([](const auto& a) { return tril(a[0], 1) * triu(a[0], -1); }, {x}, "tril * triu");
  test::check_gradients([&](const auto& a) { return masked_fill(a[0] * 3, mask, -5.0); }, {x}, "masked_fill");
}

TEST_CASE("masked_fill broadcasts the mask and keeps x's type") {
  tensor<float> x = test::random_tensor<float>({3, 4}, -1, 1, 5);
  tensor<bool> mask{false, true, false, true};
  tensor<float> y = masked_fill(x, mask, -std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      CHECK(y.at(i, j) == (j % 2 ? -std::numeric_limits<float>::infinity() : x.at(i, j)));
  CHECK_THROWS_AS(masked_fill(x, tensor<bool>{true, false, true}, 0.0), shape_error);
}

TEST_CASE("tril and triu refuse what is not a matrix") {
  CHECK_THROWS_WITH_AS(tril(tensor<float>{1, 2, 3}), doctest::Contains("tril"), shape_error);
  CHECK_THROWS_WITH_AS(triu(tensor<float>(shape{})), doctest::Contains("triu"), shape_error);
}
