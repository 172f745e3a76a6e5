// The op table's selections of two operands (tests/ops/op_table.hpp runs
// each down every path it lists): maximum, minimum, where and clamp with
// tensor bounds, each with its reference in double and its domain.

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
