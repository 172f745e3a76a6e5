// The op table's unary arithmetic (tests/ops/op_table.hpp runs each down
// every path it lists): each op once, with its reference in double and its
// domain. The trigonometric and activation functions and the predicates are
// in op_table_unary_activation.cpp, so that each translation unit stays
// within a test unit's compile budget (docs/contributing.md).

#include <cmath>

#include "ops/op_table.hpp"

using namespace tandem;
using namespace tandem::test;

TEST_CASE("op table: neg, abs, sign, square") {
  check_unary_op(unary("neg", [](const auto& x) { return -x; }, [](double x) { return -x; }, {}, and_integers));
  check_unary_op(unary("abs", [](const auto& x) { return abs(x); }, [](double x) { return std::abs(x); },
                       {}, and_integers));
  check_unary_op(unary("sign", [](const auto& x) { return sign(x); },
                       [](double x) { return std::isnan(x) ? x : double((x > 0) - (x < 0)); }));
  check_unary_op(unary("square", [](const auto& x) { return square(x); }, [](double x) { return x * x; },
                       {}, and_integers));
}

TEST_CASE("op table: exp, log, log1p, expm1") {
  check_unary_op(unary("exp", [](const auto& x) { return exp(x); }, [](double x) { return std::exp(x); },
                       {.values = {-80, 80}}));
  check_unary_op(unary("log", [](const auto& x) { return log(x); }, [](double x) { return std::log(x); },
                       {.values = {1e-3, 1e3}, .slope = {0.3, 1.5}, .signed_slope = false}));
  check_unary_op(unary("log1p", [](const auto& x) { return log1p(x); }, [](double x) { return std::log1p(x); },
                       {.values = {-0.9, 10}, .slope = {0.3, 1.5}, .signed_slope = false}));
  check_unary_op(unary("expm1", [](const auto& x) { return expm1(x); }, [](double x) { return std::expm1(x); }));
}

TEST_CASE("op table: sqrt, rsqrt") {
  check_unary_op(unary("sqrt", [](const auto& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); },
                       {.values = {0, 100}, .slope = {0.3, 1.5}, .signed_slope = false}));
  check_unary_op(unary("rsqrt", [](const auto& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); },
                       {.values = {0.01, 100}, .slope = {0.3, 1.5}, .signed_slope = false}));
}
