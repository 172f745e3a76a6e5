// The op table's reductions, softmax and matmul (tests/ops/op_table.hpp
// runs each down every path): reductions over each axis and over all,
// softmax and log_softmax, matmul, each once, as functions of a rank-2
// tensor. The view, index, convolution and pooling ops are in
// op_table_structural.cpp: one translation unit held both, at 75 s of g++
// time, over a test unit's 60 s budget (docs/contributing.md).

#include "ops/op_table.hpp"

using namespace tandem;
using namespace tandem::test;

TEST_CASE("op table: sum, mean, prod, var, logsumexp") {
  check_structural_op(structural("sum over all", [](const auto& x) { return sum(x); }));
  check_structural_op(structural("sum over axis 1, kept", [](const auto& x) { return sum(x, 1, true); }));
  check_structural_op(structural("mean over axis 0", [](const auto& x) { return mean(x, 0); }));
  check_structural_op(structural("prod over axis 1", [](const auto& x) { return prod(tanh(x) * 0.5 + 1.0, 1); }));
  check_structural_op(structural("var over axis 1", [](const auto& x) { return var(x, 1, true); }));
  check_structural_op(structural("logsumexp over axis 0", [](const auto& x) { return logsumexp(x, 0); }));
}

TEST_CASE("op table: max, min") {
  check_structural_op(structural("max over axis 1", [](const auto& x) { return max(x, 1); }));
  check_structural_op(structural("min over all", [](const auto& x) { return min(x); }));
}

TEST_CASE("op table: softmax, log_softmax, matmul") {
  check_structural_op(structural("softmax over the last axis", [](const auto& x) { return softmax(x, -1); }));
  check_structural_op(structural("log_softmax over axis 0", [](const auto& x) { return log_softmax(x, 0); }));
  check_structural_op(structural("matmul", [](const auto& x) { return matmul(x, x.transpose(0, 1)) * 0.5; }));
}
