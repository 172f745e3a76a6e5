// Elementwise ops beyond the op table (tests/ops/op_table_*.cpp, which checks
// every op's values, edge values, static and fused forms and gradients):
// type promotion, NaN propagation, the accuracy of float tanh, in-place
// arithmetic through views and error messages.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("comparisons and logical ops give bool tensors") {
  tensor<float> a{1, 2, 3, std::numeric_limits<float>::quiet_NaN()};
  tensor<float> b{3, 2, 1, 0};
  CHECK((a == b).to_vector() == std::vector<bool>{false, true, false, false});
  CHECK((a != b).to_vector() == std::vector<bool>{true, false, true, true});
  CHECK((a < b).to_vector() == std::vector<bool>{true, false, false, false});
  CHECK((a >= 2).to_vector() == std::vector<bool>{false, true, true, false});
  tensor<bool> p{true, true, false, false}, q{true, false, true, false};
  CHECK(logical_and(p, q).to_vector() == std::vector<bool>{true, false, false, false});
  CHECK(logical_or(p, q).to_vector() == std::vector<bool>{true, true, true, false});
  CHECK(logical_xor(p, q).to_vector() == std::vector<bool>{false, true, true, false});
  CHECK(logical_not(p).to_vector() == std::vector<bool>{false, false, true, true});
  CHECK(isnan(a).to_vector() == std::vector<bool>{false, false, false, true});
  tensor<double> odd{1.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), NAN};
  CHECK(isinf(odd).to_vector() == std::vector<bool>{false, true, true, false});
  CHECK(isfinite(odd).to_vector() == std::vector<bool>{true, false, false, false});
}

TEST_CASE("types promote at compile time") {
  tensor<std::int32_t> i{1, 2};
  tensor<std::int64_t> l{1, 2};
  tensor<float> f{1, 2};
  tensor<double> d{1, 2};
  tensor<bool> b{true, false};
  static_assert(std::is_same_v<decltype(i + l), tensor<std::int64_t>>);
  static_assert(std::is_same_v<decltype(i + f), tensor<float>>);
  static_assert(std::is_same_v<decltype(f + d), tensor<double>>);
  static_assert(std::is_same_v<decltype(b + i), tensor<std::int32_t>>);
  static_assert(std::is_same_v<decltype(f * 2.0), tensor<float>>);
  static_assert(std::is_same_v<decltype(i * 2), tensor<std::int32_t>>);
  static_assert(std::is_same_v<decltype(i * 2.5), tensor<float>>);
  static_assert(std::is_same_v<decltype(b + 1), tensor<std::int64_t>>);
  static_assert(std::is_same_v<decltype(i / i), tensor<float>>);
  static_assert(std::is_same_v<decltype(exp(l)), tensor<float>>);
  static_assert(std::is_same_v<decltype(i < f), tensor<bool>>);
  CHECK((i * 2.5).to_vector() == std::vector<float>{2.5f, 5.0f});
  CHECK((i / 2).to_vector() == std::vector<float>{0.5f, 1.0f});
  CHECK((2 - f).to_vector() == std::vector<float>{1, 0});
  CHECK((6 / d).to_vector() == std::vector<double>{6, 3});
  CHECK((i + f).to_vector() == std::vector<float>{2, 4});
}

TEST_CASE("NaN and infinities propagate as in NumPy") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  tensor<float> x = full<float>({37}, 1.0f);
  x.at(3) = nan;
  x.at(20) = nan;
  tensor<float> m = maximum(x, 0.5f);
  CHECK(std::isnan(m.at(3)));
  CHECK(std::isnan(m.at(20)));
  CHECK(m.at(0) == 1.0f);
  CHECK(std::isnan(relu(x).at(20)));
  CHECK(std::isnan(minimum(0.5f, x).at(3)));
  tensor<float> e{-inf, inf, -1e4f, 1e4f, -80, 80};
  std::vector<float> s = sigmoid(e).to_vector();
  CHECK(s[0] == 0.0f);
  CHECK(s[1] == 1.0f);
  CHECK(s[2] == 0.0f);
  CHECK(s[3] == 1.0f);
  std::vector<float> sp = softplus(e).to_vector();
  CHECK(sp[0] == 0.0f);
  CHECK(sp[1] == inf);
  CHECK(sp[3] == 1e4f);
  CHECK(sp[5] == doctest::Approx(80.0f));
  CHECK(sign(tensor<float>{-0.0f, 3, -2}).to_vector() == std::vector<float>{-0.0f, 1, -1});
}

TEST_CASE("float tanh is good to 6 ulp on the whole float line, alike in its scalar and vector forms") {
  // Every 1021st float from 0 to 10 (tanh rounds to 1 from 9.01 on), and
  // their negatives: the rational approximation's documented bound is 5.4.
  std::vector<float> values;
  for (std::uint32_t bits = 0; bits <= std::bit_cast<std::uint32_t>(10.0f); bits += 1021) {
    values.push_back(std::bit_cast<float>(bits));
    values.push_back(-std::bit_cast<float>(bits));
  }
  tensor<float> x(shape{static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), x.data());
  std::vector<float> y = tanh(x).to_vector();
  double worst = 0;
  bool scalar_agrees = true;
  for (std::size_t i = 0; i < values.size(); ++i) {
    double want = std::tanh(static_cast<double>(values[i]));
    float rounded = static_cast<float>(std::fabs(want));
    double ulp = std::nextafter(rounded, 2.0f) - rounded;
    worst = std::max(worst, std::fabs(y[i] - want) / ulp);
    scalar_agrees = scalar_agrees && std::bit_cast<std::uint32_t>(detail::math::tanh(values[i])) ==
                                         std::bit_cast<std::uint32_t>(y[i]);
  }
  CHECK(worst < 6);
  // The scalar form is this program's code; the eager op is a kernel build's
  // where one above the program's level runs (a program built for SSE4.2 on
  // an AVX-512 machine), and FMA there rounds differently (docs/concepts.md).
  if (kernel_instruction_set() == compiled_instruction_set) CHECK(scalar_agrees);

  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // The batch form clamps to [-9, 9], which gives +-1 beyond only because
  // the ratio rounds to exactly +-1 there.
  CHECK(detail::math::rational_tanh_ratio(9.0f) == 1.0f);
  CHECK(detail::math::rational_tanh_ratio(-9.0f) == -1.0f);
  std::vector<float> special = tanh(tensor<float>{-inf, inf, nan, -0.0f, 1e-40f, 9.5f, -9.5f}).to_vector();
  CHECK(special[0] == -1.0f);
  CHECK(special[1] == 1.0f);
  CHECK(std::isnan(special[2]));
  CHECK((special[3] == 0.0f && std::signbit(special[3])));
  CHECK(special[4] == 1e-40f);
  CHECK(special[5] == 1.0f);
  CHECK(special[6] == -1.0f);
}

TEST_CASE("float sin and cos are good to 3 ulp, past the fast reduction's bound too, and sin keeps zero's sign") {
  // Every 4099th float from 0 to 7000 (the four-part reduction ends at
  // 6400, xsimd's takes over beyond), their negatives, and far values. The
  // worst over every float below 6400 is 2.34 ulp for both, as xsimd's.
  std::vector<float> values;
  for (std::uint32_t bits = 0; bits <= std::bit_cast<std::uint32_t>(7000.0f); bits += 4099) {
    values.push_back(std::bit_cast<float>(bits));
    values.push_back(-std::bit_cast<float>(bits));
  }
  for (float far : {6400.5f, 1e4f, 123456.7f, 1e20f, 3e38f, -3e38f}) values.push_back(far);
  tensor<float> x(shape{static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), x.data());
  const std::vector<float> sines = sin(x).to_vector(), cosines = cos(x).to_vector();
  auto ulps = [](float got, double want) {
    float rounded = static_cast<float>(std::fabs(want));
    double ulp = std::nextafter(rounded, std::numeric_limits<float>::infinity()) - rounded;
    return std::fabs(got - want) / ulp;
  };
  double worst_sin = 0, worst_cos = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    worst_sin = std::max(worst_sin, ulps(sines[i], std::sin(static_cast<double>(values[i]))));
    worst_cos = std::max(worst_cos, ulps(cosines[i], std::cos(static_cast<double>(values[i]))));
  }
  CHECK(worst_sin < 3);
  CHECK(worst_cos < 3);

  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Sixteen of them, so that the vector loop (not only its tail) sees each.
  const tensor<float> special = tensor<float>{-0.0f, 0.0f, inf, -inf, nan, 1e-40f, -1e-30f, 1.5707964f,
                                              3.1415927f, -4.712389f, 6399.9f, 6400.1f, 0.5f, -0.5f, 2.0f, -2.0f};
  const std::vector<float> s = sin(special).to_vector(), c = cos(special).to_vector();
  CHECK((s[0] == 0.0f && std::signbit(s[0])));
  CHECK((s[1] == 0.0f && !std::signbit(s[1])));
  CHECK((c[0] == 1.0f && c[1] == 1.0f));
  for (std::size_t i : {2, 3, 4}) CHECK((std::isnan(s[i]) && std::isnan(c[i])));
  CHECK(s[5] == 1e-40f);
  CHECK(s[6] == -1e-30f);
  for (std::size_t i = 7; i < 16; ++i) {
    INFO("x = ", special.data()[i]);
    CHECK(ulps(s[i], std::sin(static_cast<double>(special.data()[i]))) < 3);
    CHECK(ulps(c[i], std::cos(static_cast<double>(special.data()[i]))) < 3);
  }
}

TEST_CASE("in-place arithmetic writes through views") {
  tensor<float> x = zeros({3, 4});
  auto column = x.slice(1, 1, 2);
  column += 5;
  column *= tensor<float>{{1}, {2}, {3}};
  CHECK(x.to_vector() == std::vector<float>{0, 5, 0, 0, 0, 10, 0, 0, 0, 15, 0, 0});
  tensor<std::int32_t> counts = zeros<std::int32_t>({4});
  counts -= 2;
  CHECK(counts.to_vector() == std::vector<std::int32_t>{-2, -2, -2, -2});
  CHECK(x.storage()->version() > 0);
}

TEST_CASE("broadcast mistakes name the op and the shapes") {
  tensor<float> a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_WITH_AS(a + b, "tandem::add: shapes [2, 3], [4] cannot be broadcast together", shape_error);
  CHECK_THROWS_WITH_AS(maximum(a, b), "tandem::maximum: shapes [2, 3], [4] cannot be broadcast together", shape_error);
  CHECK_THROWS_WITH_AS(where(a > 0, b, 1.0f), "tandem::where: shapes [2, 3], [4], scalar cannot be broadcast together",
                       shape_error);
  tensor<float> target = zeros({2, 3});
  CHECK_THROWS_WITH_AS(target += zeros({3, 2}), "tandem::add: shapes [2, 3], [3, 2] cannot be broadcast together",
                       shape_error);
  CHECK_THROWS_WITH_AS(target.assign(zeros({2, 1, 3})),
                       "tandem::assign: a tensor of shape [2, 1, 3] cannot be written into one of shape [2, 3]",
                       shape_error);
}
