// The op table's structural ops (tests/ops/op_table.hpp runs each down
// every path): the view ops, the index ops and convolution and pooling, each
// once, as functions of a tensor. Reductions, softmax and matmul are in
// op_table_reductions.cpp.

#include "ops/op_table.hpp"

using namespace tandem;
using namespace tandem::test;

TEST_CASE("op table: transpose, permute, reshape, take, unsqueeze and squeeze, broadcast") {
  check_structural_op(structural("transpose", [](const auto& x) { return transpose(x, 0, 1) * 1.0; }));
  check_structural_op(structural("permute", [](const auto& x) { return permute(x, {1, 0}) * 1.0; }));
  check_structural_op(structural("reshape", [](const auto& x) { return reshape(x, {-1}) * 1.0; }));
  check_structural_op(structural("take the first column", [](const auto& x) { return take(x, 1, 0, 1) * 1.0; }));
  check_structural_op(
      structural("unsqueeze then squeeze", [](const auto& x) { return squeeze(unsqueeze(x, 0) * 1.0, 0); }));
  check_structural_op(structural("broadcast against a row", [](const auto& x) { return x + sum(x, 0, true); }));
}

TEST_CASE("op table: index_select, gather, index_add, scatter_add, cross_entropy") {
  // Indices captured, or computed in the graph (argmax), so that one entry
  // fits every shape.
  tensor<std::int64_t> first_twice{0, 0};
  check_structural_op(
      structural("index_select", [first_twice](const auto& x) { return index_select(x, 1, first_twice); }));
  check_structural_op(structural("gather", [](const auto& x) { return gather(x, 1, argmax(x, 1, true)); }));
  tensor<std::int64_t> first_row{0};
  check_structural_op(structural(
      "index_add", [first_row](const auto& x) { return index_add(x, 0, first_row, take(x, 0, 0, 1) * 0.5); }));
  check_structural_op(structural(
      "scatter_add", [](const auto& x) { return scatter_add(x, 1, argmax(x, 1, true), take(x, 1, 0, 1) * 0.5); }));
  check_structural_op(structural("cross_entropy", [](const auto& x) { return cross_entropy(x, argmax(x, 1)); }));
}

TEST_CASE("op table: conv2d, max_pool2d, avg_pool2d") {
  tensor<double> weight = random_tensor<double>({3, 2, 3, 3}, -1, 1, 41);
  tensor<float> weight_float = weight.astype<float>();
  auto conv = [weight, weight_float](const auto& x) {
    if constexpr (std::is_same_v<typename std::decay_t<decltype(x)>::value_type, float>) return conv2d(x, weight_float);
    else return conv2d(x, weight);
  };
  check_structural_op(structural("conv2d", conv, {{1, 2, 5, 7}, {2, 2, 8, 17}, {1, 2, 3, 33}}));
  const std::vector<shape> pooled{{1, 2, 4, 6}, {2, 3, 8, 17}, {1, 1, 2, 34}};
  check_structural_op(structural("max_pool2d", [](const auto& x) { return max_pool2d(x); }, pooled));
  check_structural_op(structural("avg_pool2d", [](const auto& x) { return avg_pool2d(x); }, pooled));
}
