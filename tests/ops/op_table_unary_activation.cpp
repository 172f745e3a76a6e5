// The op table's trigonometric and activation functions and predicates
// (tests/ops/op_table.hpp runs each down every path it lists): each op once,
// with its reference in double and its domain. The unary arithmetic is in
// op_table_unary.cpp.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ops/op_table.hpp"

using namespace tandem;
using namespace tandem::test;

namespace {
double logistic(double x) { return 1 / (1 + std::exp(-x)); }
double positive_part(double x) { return x > 0 ? x : 0; }
}  // namespace

TEST_CASE("op table: sin, cos, tanh, sigmoid") {
  check_unary_op(unary("sin", [](const auto& x) { return sin(x); }, [](double x) { return std::sin(x); },
                       {.values = {-10, 10}}));
  check_unary_op(unary("cos", [](const auto& x) { return cos(x); }, [](double x) { return std::cos(x); },
                       {.values = {-10, 10}}));
  check_unary_op(unary("tanh", [](const auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); },
                       {.values = {-10, 10}}));
  check_unary_op(unary("sigmoid", [](const auto& x) { return sigmoid(x); }, logistic, {.values = {-30, 30}}));
}

TEST_CASE("op table: erf, erfc") {
  check_unary_op(unary("erf", [](const auto& x) { return erf(x); }, [](double x) { return std::erf(x); },
                       {.values = {-4, 4}}));
  // xsimd's double erfc is good to about 4e-12 relative (2.2 is the worst).
  check_unary_op(unary("erfc", [](const auto& x) { return erfc(x); }, [](double x) { return std::erfc(x); },
                       {.values = {-4, 8}, .looser = 25}));
}

TEST_CASE("op table: relu, gelu (both forms), softplus, clamp") {
  check_unary_op(unary("relu", [](const auto& x) { return relu(x); },
                       [](double x) { return std::isnan(x) ? x : positive_part(x); }));
  // xsimd's double erfc is good to about 4e-12 relative.
  check_unary_op(unary("gelu", [](const auto& x) { return gelu(x); },
                       [](double x) { return 0.5 * x * std::erfc(-x / std::numbers::sqrt2); },
                       {.values = {-6, 6}, .looser = 25}));
  check_unary_op(unary("gelu (tanh)", [](const auto& x) { return gelu(x, approximate_tanh); },
                       [](double x) {
                         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
                       },
                       {.values = {-6, 6}, .looser = 4}));
  check_unary_op(unary("softplus", [](const auto& x) { return softplus(x); },
                       [](double x) { return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0); },
                       {.values = {-30, 30}}));
  check_unary_op(unary("clamp", [](const auto& x) { return clamp(x, -1, 2.5); },
                       [](double x) { return std::isnan(x) ? x : std::clamp(x, -1.0, 2.5); }));
}

TEST_CASE("op table: isnan, isinf, isfinite, logical_not") {
  check_unary_op(unary("isnan", [](const auto& x) { return isnan(x); }, [](double x) { return double(std::isnan(x)); },
                       {.paths = value_paths}));
  check_unary_op(unary("isinf", [](const auto& x) { return isinf(x); }, [](double x) { return double(std::isinf(x)); },
                       {.paths = value_paths}));
  check_unary_op(unary("isfinite", [](const auto& x) { return isfinite(x); },
                       [](double x) { return double(std::isfinite(x)); }, {.paths = value_paths}));
  check_unary_op(unary("logical_not", [](const auto& x) { return logical_not(x > 0.0); },
                       [](double x) { return double(!(x > 0)); }, {.paths = value_paths}));
}
