// nn::conv2d and the pooling layers: parameters, values against the ops,
// a small CNN as one static graph with the eager gradients.
#include <doctest/doctest.h>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

TEST_CASE("conv2d layers hold a kernel and a bias and compute conv2d plus bias") {
  generator gen(1);
  nn::conv2d<double> conv(4, 6, {3, 3}, gen, {.padding = {1, 1}, .groups = 2});
  CHECK(conv.weight.shape() == shape{6, 2, 3, 3});
  CHECK(conv.named_parameters().size() == 2);
  CHECK(max(abs(conv.weight)).item() <= 1.0 / std::sqrt(18.0));
  tensor<double> x = test::random_tensor<double>({2, 4, 5, 5}, -1, 1, 2);
  test::check_values(conv(x), conv2d(x, conv.weight, {.padding = {1, 1}, .groups = 2}) + conv.bias.reshape({6, 1, 1}),
                     "conv plus bias");
  nn::conv2d<float> plain(1, 2, {2, 2}, gen, {}, false);
  CHECK(plain.named_parameters().size() == 1);
  CHECK(plain(ones<float>({1, 1, 2, 2})).shape() == shape{1, 2, 1, 1});
  CHECK_THROWS_AS(nn::conv2d<float>(3, 4, {3, 3}, gen, {.groups = 2}), value_error);
  nn::max_pool2d pool({.kernel = {2, 2}});
  nn::avg_pool2d average({.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}});
  test::check_values(pool(x), max_pool2d(x), "max pool layer");
  test::check_values(average(x), avg_pool2d(x, {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}), "avg pool layer");
}

TEST_CASE("a small CNN runs as one static graph with the eager values and gradients") {
  generator gen(3);
  nn::sequential net(nn::conv2d<double>(1, 4, {3, 3}, gen, {.padding = {1, 1}}), nn::relu{}, nn::max_pool2d{},
                     nn::conv2d<double>(4, 4, {3, 3}, gen), nn::tanh{}, nn::flatten{}, nn::linear<double>(4, 3, gen));
  tensor<double> x = test::random_tensor<double>({2, 1, 6, 6}, -1, 1, 4);
  auto run = [&] {
    net.zero_grad();
    tensor<double> out = net(x);
    sum(out * out).backward();
    std::vector<tensor<double>> g{out};
    for (const auto& p : net.named_parameters()) g.push_back(std::get<tensor<double>>(p.value).grad());
    return g;
  };
  auto eager = run();
  set_mode(mode::graph);
  auto graph = run();
  set_mode(mode::eager);
  REQUIRE(eager.size() == graph.size());
  for (std::size_t k = 0; k < eager.size(); ++k) test::check_values(graph[k], eager[k], "value or gradient " + std::to_string(k));
}
