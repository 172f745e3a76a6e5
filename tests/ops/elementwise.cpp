// Elementwise ops against double-precision references: every size that hits a
// SIMD tail, strided and transposed views, broadcasting, scalars on either
// side, type promotion, NaN/inf behaviour and error messages.

#include <cmath>
#include <limits>
#include <numbers>

#include "support/check.hpp"

using namespace tandem;
using tandem::test::check_values;

namespace {

template <class T, class Ref, class Fn>
void check_unary(double low, double high, Ref ref, Fn fn, double looser = 1) {
  std::uint64_t seed = 1;
  std::vector<shape> shapes;
  for (auto n : test::tail_sizes) shapes.push_back({n});
  shapes.push_back({17, 33});
  for (const shape& s : shapes) {
    tensor<T> base = test::random_tensor<T>(s, low, high, seed++);
    std::vector<double> want;
    for (double v : test::values_of(base)) want.push_back(ref(v));
    for (auto& [layout, x] : test::layouts(base)) {
      auto got = fn(x);
      using R = typename decltype(got)::value_type;
      check_values(got, s, want, layout + " " + to_string(s), test::tolerance<R>::rel * 4 * looser,
                   test::tolerance<R>::abs);
    }
  }
}

template <class T, class Ref, class Fn>
void check_binary(double low, double high, Ref ref, Fn fn) {
  struct pair_case {
    shape a, b;
  };
  std::vector<pair_case> cases;
  for (auto n : test::tail_sizes) cases.push_back({{n}, {n}});
  cases.push_back({{3, 1, 5}, {4, 5}});
  cases.push_back({{1}, {7}});
  cases.push_back({{17, 1}, {1, 33}});
  cases.push_back({{}, {6, 2}});
  std::uint64_t seed = 100;
  for (const auto& c : cases) {
    tensor<T> a = test::random_tensor<T>(c.a, low, high, seed++);
    tensor<T> b = test::random_tensor<T>(c.b, low, high, seed++);
    shape out = detail::broadcast_shapes(c.a, c.b, "test");
    std::vector<double> want;
    test::for_each_index(out, [&](const std::vector<std::int64_t>& i) {
      want.push_back(ref(test::at_broadcast(a, i), test::at_broadcast(b, i)));
    });
    for (auto& [la, xa] : test::layouts(a))
      for (auto& [lb, xb] : test::layouts(b)) {
        auto got = fn(xa, xb);
        using R = typename decltype(got)::value_type;
        check_values(got, out, want, la + " " + to_string(c.a) + " with " + lb + " " + to_string(c.b),
                     test::tolerance<R>::rel * 4, test::tolerance<R>::abs);
      }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("unary math matches a double reference", T, float, double) {
  SUBCASE("abs") check_unary<T>(-5, 5, [](double x) { return std::abs(x); }, [](const auto& x) { return abs(x); });
  SUBCASE("neg") check_unary<T>(-5, 5, [](double x) { return -x; }, [](const auto& x) { return -x; });
  SUBCASE("sign") check_unary<T>(-5, 5, [](double x) { return double((x > 0) - (x < 0)); }, [](const auto& x) { return sign(x); });
  SUBCASE("square") check_unary<T>(-5, 5, [](double x) { return x * x; }, [](const auto& x) { return square(x); });
  SUBCASE("exp") check_unary<T>(-80, 80, [](double x) { return std::exp(x); }, [](const auto& x) { return exp(x); });
  SUBCASE("log") check_unary<T>(1e-3, 1e3, [](double x) { return std::log(x); }, [](const auto& x) { return log(x); });
  SUBCASE("log1p") check_unary<T>(-0.9, 10, [](double x) { return std::log1p(x); }, [](const auto& x) { return log1p(x); });
  SUBCASE("expm1") check_unary<T>(-5, 5, [](double x) { return std::expm1(x); }, [](const auto& x) { return expm1(x); });
  SUBCASE("sqrt") check_unary<T>(0, 100, [](double x) { return std::sqrt(x); }, [](const auto& x) { return sqrt(x); });
  SUBCASE("rsqrt") check_unary<T>(0.01, 100, [](double x) { return 1 / std::sqrt(x); }, [](const auto& x) { return rsqrt(x); });
  SUBCASE("sin") check_unary<T>(-10, 10, [](double x) { return std::sin(x); }, [](const auto& x) { return sin(x); });
  SUBCASE("cos") check_unary<T>(-10, 10, [](double x) { return std::cos(x); }, [](const auto& x) { return cos(x); });
  SUBCASE("tanh") check_unary<T>(-10, 10, [](double x) { return std::tanh(x); }, [](const auto& x) { return tanh(x); });
  SUBCASE("sigmoid") check_unary<T>(-30, 30, [](double x) { return 1 / (1 + std::exp(-x)); }, [](const auto& x) { return sigmoid(x); });
  SUBCASE("relu") check_unary<T>(-5, 5, [](double x) { return x > 0 ? x : 0; }, [](const auto& x) { return relu(x); });
  // xsimd's double erfc is good to about 4e-12 relative.
  SUBCASE("gelu") check_unary<T>(-6, 6, [](double x) { return 0.5 * x * std::erfc(-x / std::numbers::sqrt2); },
                                 [](const auto& x) { return gelu(x); }, std::is_same_v<T, double> ? 25 : 1);
  SUBCASE("softplus") check_unary<T>(-30, 30, [](double x) { return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0); },
                                     [](const auto& x) { return softplus(x); });
  SUBCASE("clamp") check_unary<T>(-5, 5, [](double x) { return std::clamp(x, -1.0, 2.5); },
                                  [](const auto& x) { return clamp(x, -1, 2.5); });
}

TEST_CASE_TEMPLATE("binary arithmetic matches a double reference", T, float, double) {
  SUBCASE("add") check_binary<T>(-5, 5, [](double a, double b) { return a + b; }, [](const auto& a, const auto& b) { return a + b; });
  SUBCASE("sub") check_binary<T>(-5, 5, [](double a, double b) { return a - b; }, [](const auto& a, const auto& b) { return a - b; });
  SUBCASE("mul") check_binary<T>(-5, 5, [](double a, double b) { return a * b; }, [](const auto& a, const auto& b) { return a * b; });
  SUBCASE("div") check_binary<T>(0.5, 5, [](double a, double b) { return a / b; }, [](const auto& a, const auto& b) { return a / b; });
  SUBCASE("pow") check_binary<T>(0.1, 3, [](double a, double b) { return std::pow(a, b); }, [](const auto& a, const auto& b) { return pow(a, b); });
  SUBCASE("maximum") check_binary<T>(-5, 5, [](double a, double b) { return std::max(a, b); }, [](const auto& a, const auto& b) { return maximum(a, b); });
  SUBCASE("minimum") check_binary<T>(-5, 5, [](double a, double b) { return std::min(a, b); }, [](const auto& a, const auto& b) { return minimum(a, b); });
  SUBCASE("where") check_binary<T>(-5, 5, [](double a, double b) { return a > b ? a : b * 2; },
                                   [](const auto& a, const auto& b) { return where(a > b, a, b * 2); });
}

TEST_CASE_TEMPLATE("integer arithmetic is exact", T, std::int32_t, std::int64_t) {
  SUBCASE("add") check_binary<T>(-1000, 1000, [](double a, double b) { return a + b; }, [](const auto& a, const auto& b) { return a + b; });
  SUBCASE("mul") check_binary<T>(-1000, 1000, [](double a, double b) { return a * b; }, [](const auto& a, const auto& b) { return a * b; });
  SUBCASE("maximum") check_binary<T>(-9, 9, [](double a, double b) { return std::max(a, b); }, [](const auto& a, const auto& b) { return maximum(a, b); });
  SUBCASE("compare") check_binary<T>(-3, 3, [](double a, double b) { return double(a <= b); }, [](const auto& a, const auto& b) { return a <= b; });
  SUBCASE("abs") check_unary<T>(-100, 100, [](double x) { return std::abs(x); }, [](const auto& x) { return abs(x); });
}

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
