#include <doctest/doctest.h>

#include <string>

#include "tandem/tandem.hpp"

using namespace tandem;

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The graph both dumps show: two fusion groups (the first ending in a fused
// sum), then an eager kernel.
auto dumped_graph() {
  return jit([](auto x, auto y) { return softmax(sum(exp(x * y) * y + x * 0.5, 1) * 2.0); });
}
const tensor<float> dumped_x = ones<float>({2, 3}), dumped_y = ones<float>({2, 3});
}  // namespace

TEST_CASE("the text dump lists values, fusion groups and the backward steps") {
  std::string text = dumped_graph().text(dumped_x, dumped_y);
  CHECK(has(text, "%2 = mul %0, %1 : float32    [in group 0]"));
  CHECK(has(text, "%5 = constant 0.5 : float32"));
  CHECK(has(text, "%7 = add %4, %6 : float32    [in group 0]"));
  CHECK(has(text, "%8 = sum %7 : float32    [group 0: fused loop with sum, buffer]"));
  CHECK(has(text, "%10 = mul %8, %9 : float32    [group 1: fused loop, buffer]"));
  CHECK(has(text, "%11 = softmax %10 : float32    [eager kernel, buffer]"));
  CHECK(has(text, "return %11"));
  CHECK(has(text, "d%11 -> %10    [eager backward of softmax]"));
  CHECK(has(text, "d%8 -> %0, %1    [group 0: one fused adjoint loop]"));
}

TEST_CASE("a value reused by pure type is one line; different scalars are two") {
  auto shared = jit([](auto a) { return repeat<3>(a, [](auto h) { return h * h + h; }); });
  std::string text = shared.text(tensor<double>{1.0});
  CHECK(has(text, "%6 = add %5, %4"));
  CHECK(!has(text, "%7 ="));
  auto scaled = jit([](auto a) { return a * 2.0 + a * 3.0; });
  std::string two = scaled.text(tensor<double>{1.0});
  CHECK(has(two, "constant 2"));
  CHECK(has(two, "constant 3"));
}

TEST_CASE("the dot dump marks each fusion group as a cluster, forward and backward") {
  std::string dot = dumped_graph().dot(dumped_x, dumped_y);
  CHECK(has(dot, "digraph tandem {"));
  CHECK(has(dot, "subgraph cluster_group0"));
  CHECK(has(dot, "subgraph cluster_group1"));
  CHECK(has(dot, "subgraph cluster_backward"));
  CHECK(has(dot, "v7 -> v8;"));
}

TEST_CASE("the dumps name the group a matmul runs as its epilogue") {
  auto layer = jit([](auto x, auto w, auto b) { return relu(matmul(x, w) + b); });
  tensor<float> x = ones<float>({2, 3}), w = ones<float>({3, 4}), b = ones<float>({4});
  std::string text = layer.text(x, w, b);
  CHECK(has(text, "%2 = matmul %0, %1 : float32    [eager kernel, group 0 as its epilogue]"));
  CHECK(has(text, "%5 = relu %4 : float32    [group 0: fused loop, buffer]"));
  CHECK(has(layer.dot(x, w, b), "matmul : float32\\nepilogue: group 0"));
}
