// The op table's binary arithmetic (tests/ops/op_table.hpp runs each down
// every path it lists): each op once, with its reference in double and its
// domain.

#include <algorithm>
#include <cmath>

#include "ops/op_table.hpp"

using namespace tandem;
using namespace tandem::test;

namespace {
// NumPy's maximum and minimum: NaN wins.
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b); }
}  // namespace

TEST_CASE("op table: add, sub, mul, div") {
  check_binary_op(binary("add", [](const auto& a, const auto& b) { return a + b; },
                         [](double a, double b) { return a + b; }, {}, and_integers));
  check_binary_op(binary("sub", [](const auto& a, const auto& b) { return a - b; },
                         [](double a, double b) { return a - b; }, {}, and_integers));
  check_binary_op(binary("mul", [](const auto& a, const auto& b) { return a * b; },
                         [](double a, double b) { return a * b; }, {}, and_integers));
  check_binary_op(binary("div", [](const auto& a, const auto& b) { return a / b; },
                         [](double a, double b) { return a / b; },
                         {.second_values = {0.5, 5}, .second_slope = {0.3, 1.5}, .second_signed_slope = false}));
}

TEST_CASE("op table: pow") {
  check_binary_op(binary("pow", [](const auto& a, const auto& b) { return pow(a, b); },
                         [](double a, double b) { return std::pow(a, b); },
                         {.values = {0.1, 3}, .second_values = {-3, 3}, .slope = {0.3, 1.5}, .signed_slope = false}));
}

TEST_CASE("op table: maximum, minimum") {
  check_binary_op(binary("maximum", [](const auto& a, const auto& b) { return maximum(a, b); }, nan_max,
                         {}, and_integers));
  check_binary_op(binary("minimum", [](const auto& a, const auto& b) { return minimum(a, b); }, nan_min,
                         {}, and_integers));
}

TEST_CASE("op table: where, clamp with tensor bounds") {
  check_binary_op(binary("where", [](const auto& a, const auto& b) { return where(a > b, a, b * 2); },
                         [](double a, double b) { return a > b ? a : b * 2; }));
  check_binary_op(binary("clamp", [](const auto& x, const auto& low) { return clamp(x, low, low + 1.5); },
                         [](double x, double low) { return nan_min(nan_max(x, low), low + 1.5); }, {}, tensor_first));
}
