// The op table's comparisons and logical ops (tests/ops/op_table.hpp runs
// each down every path it lists): each op once, with its reference in double.
// They have no derivative, so they take the value paths only.

#include "ops/op_table.hpp"

using namespace tandem;
using namespace tandem::test;

TEST_CASE("op table: eq, ne, lt, le, gt, ge") {
  // Integer samples from [-3, 3) tie often; float ties come from the edge
  // values' grid, whose diagonal is every special value against itself.
  const op_options options{.values = {-3, 3}, .paths = value_paths};
  check_binary_op(binary("eq", [](const auto& a, const auto& b) { return a == b; },
                         [](double a, double b) { return double(a == b); }, options, and_integers));
  check_binary_op(binary("ne", [](const auto& a, const auto& b) { return a != b; },
                         [](double a, double b) { return double(a != b); }, options, and_integers));
  check_binary_op(binary("lt", [](const auto& a, const auto& b) { return a < b; },
                         [](double a, double b) { return double(a < b); }, options, and_integers));
  check_binary_op(binary("le", [](const auto& a, const auto& b) { return a <= b; },
                         [](double a, double b) { return double(a <= b); }, options, and_integers));
  check_binary_op(binary("gt", [](const auto& a, const auto& b) { return a > b; },
                         [](double a, double b) { return double(a > b); }, options, and_integers));
  check_binary_op(binary("ge", [](const auto& a, const auto& b) { return a >= b; },
                         [](double a, double b) { return double(a >= b); }, options, and_integers));
}

TEST_CASE("op table: logical_and, logical_or, logical_xor") {
  // On the truth of each operand's sign.
  const op_options options{.paths = value_paths};
  check_binary_op(binary("logical_and", [](const auto& a, const auto& b) { return logical_and(a > 0, b > 0); },
                         [](double a, double b) { return double(a > 0 && b > 0); }, options, and_integers));
  check_binary_op(binary("logical_or", [](const auto& a, const auto& b) { return logical_or(a > 0, b > 0); },
                         [](double a, double b) { return double(a > 0 || b > 0); }, options, and_integers));
  check_binary_op(binary("logical_xor", [](const auto& a, const auto& b) { return logical_xor(a > 0, b > 0); },
                         [](double a, double b) { return double((a > 0) != (b > 0)); }, options, and_integers));
}
