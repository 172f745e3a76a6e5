// The op table's binary arithmetic (tests/ops/op_table.hpp runs each down
// every path it lists): each op once, with its reference in double and its
// domain. maximum, minimum, where and clamp are in op_table_selection.cpp,
// so that each translation unit stays within a test unit's compile budget
// (docs/contributing.md).

#include <cmath>

#include "ops/op_table.hpp"

using namespace tandem;
using namespace tandem::test;

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
