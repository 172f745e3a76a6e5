// Finite-difference checks (double) of every differentiable elementwise op's
// derivative rule, eager mode: unary ops, binary ops with broadcasting and
// scalars on either side, where, clamp, casts.

#include <numbers>

#include "support/gradcheck.hpp"

using namespace tandem;
using tandem::test::away_from_zero;
using tandem::test::check_gradients;

namespace {
using inputs = const std::vector<tensor<double>>&;

void check_unary(const char* name, tensor<double> (*f)(const tensor<double>&), bool positive = false) {
  for (shape s : {shape{}, shape{7}, shape{3, 5}}) {
    tensor<double> x = away_from_zero(s, 1, positive ? 0.3 : 0.2, 1.5, !positive);
    check_gradients([&](inputs v) { return f(v[0]); }, {x}, std::string(name) + " " + to_string(s));
  }
}
}  // namespace

TEST_CASE("unary ops") {
  check_unary("neg", [](const tensor<double>& x) { return -x; });
  check_unary("abs", [](const tensor<double>& x) { return abs(x); });
  check_unary("sign", [](const tensor<double>& x) { return sign(x) * x; });
  check_unary("square", [](const tensor<double>& x) { return square(x); });
  check_unary("exp", [](const tensor<double>& x) { return exp(x); });
  check_unary("log", [](const tensor<double>& x) { return log(x); }, true);
  check_unary("log1p", [](const tensor<double>& x) { return log1p(x); }, true);
  check_unary("expm1", [](const tensor<double>& x) { return expm1(x); });
  check_unary("sqrt", [](const tensor<double>& x) { return sqrt(x); }, true);
  check_unary("rsqrt", [](const tensor<double>& x) { return rsqrt(x); }, true);
  check_unary("sin", [](const tensor<double>& x) { return sin(x); });
  check_unary("cos", [](const tensor<double>& x) { return cos(x); });
  check_unary("erf", [](const tensor<double>& x) { return erf(x); });
  check_unary("erfc", [](const tensor<double>& x) { return erfc(x); });
  check_unary("tanh", [](const tensor<double>& x) { return tanh(x); });
  check_unary("sigmoid", [](const tensor<double>& x) { return sigmoid(x); });
  check_unary("relu", [](const tensor<double>& x) { return relu(x); });
  check_unary("gelu", [](const tensor<double>& x) { return gelu(x); });
  check_unary("softplus", [](const tensor<double>& x) { return softplus(x); });
}

TEST_CASE("binary ops broadcast their gradients back to each shape") {
  struct pair_case {
    shape a, b;
  };
  for (auto [sa, sb] : std::vector<pair_case>{{{4}, {4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{}, {2, 2}}}) {
    tensor<double> a = away_from_zero(sa, 2), b = away_from_zero(sb, 3);
    tensor<double> pa = away_from_zero(sa, 4, 0.3, 1.5, false), pb = away_from_zero(sb, 5, 0.3, 1.5, false);
    std::string shapes = to_string(sa) + " and " + to_string(sb);
    check_gradients([](inputs v) { return v[0] + v[1]; }, {a, b}, "add " + shapes);
    check_gradients([](inputs v) { return v[0] - v[1]; }, {a, b}, "sub " + shapes);
    check_gradients([](inputs v) { return v[0] * v[1]; }, {a, b}, "mul " + shapes);
    check_gradients([](inputs v) { return v[0] / v[1]; }, {a, b}, "div " + shapes);
    check_gradients([](inputs v) { return pow(v[0], v[1]); }, {pa, b}, "pow " + shapes);
    check_gradients([](inputs v) { return maximum(v[0], v[1]); }, {a, b}, "maximum " + shapes);
    check_gradients([](inputs v) { return minimum(v[0], v[1]); }, {a, b}, "minimum " + shapes);
    check_gradients([](inputs v) { return where(v[0] > v[1], v[0] * 2, v[1]); }, {a, b}, "where " + shapes);
  }
}

TEST_CASE("scalars on either side") {
  tensor<double> x = away_from_zero({5}, 6, 0.3, 1.5, false);
  check_gradients([](inputs v) { return 3.0 - v[0] * 2; }, {x}, "3 - 2x");
  check_gradients([](inputs v) { return 2.0 / v[0]; }, {x}, "2 / x");
  check_gradients([](inputs v) { return pow(v[0], 2.5); }, {x}, "x ^ 2.5");
  check_gradients([](inputs v) { return pow(2.0, v[0]); }, {x}, "2 ^ x");
  check_gradients([](inputs v) { return clamp(v[0], 0.5, 1.2); }, {x}, "clamp(x, 0.5, 1.2)");
  tensor<double> low = full<double>({5}, 0.6), high = full<double>({1}, 1.1);
  check_gradients([](inputs v) { return clamp(v[0], v[1], v[2]); }, {x, low, high}, "clamp with tensor bounds");
}

TEST_CASE("casts pass the gradient in the input's type") {
  tensor<double> x = away_from_zero({4}, 7);
  check_gradients([](inputs v) { return (v[0].astype<float>() * 2.0f).astype<double>(); }, {x}, "double -> float -> double",
                  1e-3, 1e-3, 1e-2);
  tensor<float> f = tensor<float>{1, 2, 3};
  f.set_requires_grad();
  tensor<double> wide = tensor<double>{0.5, 0.25, 2};
  (f * wide).backward(ones<double>({3}));
  static_assert(std::is_same_v<decltype(f.grad()), tensor<float>>);
  CHECK(f.grad().to_vector() == std::vector<float>{0.5, 0.25, 2});
}
