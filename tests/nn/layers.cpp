// The layers and initializers: linear against a double reference loop on
// tail sizes, batched and strided inputs; activations and flatten against
// their ops; sequential; gradients by finite differences, eager and in a
// static graph; seeded initializers within their bounds.
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

std::vector<double> linear_reference(const tensor<double>& x, const nn::linear<double>& layer) {
  std::int64_t rows = 1, in = layer.in_features(), out = layer.out_features();
  for (std::int64_t axis = 0; axis + 1 < x.dim(); ++axis) rows *= x.shape(axis);
  tensor<double> flat = x.contiguous().reshape({rows, in});
  std::vector<double> y;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < out; ++j) {
      double acc = layer.bias.at(j);
      for (std::int64_t k = 0; k < in; ++k) acc += flat.at(r, k) * layer.weight.at(k, j);
      y.push_back(acc);
    }
  return y;
}

}  // namespace

TEST_CASE("linear equals a double reference loop on tail sizes, batches and views") {
  generator gen(1);
  for (std::int64_t n : {0, 1, 7, 17}) {
    nn::linear<double> layer(n, 5, gen);
    tensor<double> x = test::random_tensor<double>({3, n}, -1, 1, 2);
    test::check_values(layer(x), {3, 5}, linear_reference(x, layer), "in_features " + std::to_string(n));
  }
  nn::linear<double> layer(6, 4, gen);
  tensor<double> batch = test::random_tensor<double>({2, 3, 6}, -1, 1, 3);
  test::check_values(layer(batch), {2, 3, 4}, linear_reference(batch, layer), "a batch of matrices");
  for (const auto& [name, view] : test::layouts(test::random_tensor<double>({5, 6}, -1, 1, 4)))
    test::check_values(layer(view), {5, 4}, linear_reference(view, layer), name);
  nn::linear<double> plain(6, 4, gen, false);
  CHECK(plain.named_parameters().size() == 1);
  test::check_values(plain(batch), matmul(batch, plain.weight), "without bias");
  CHECK_THROWS_AS(nn::linear<float>(-1, 3, gen), value_error);
  CHECK_THROWS_WITH_AS(layer(ones<double>({2, 5})), doctest::Contains("tandem::matmul"), shape_error);
}

TEST_CASE("activation modules and flatten are their ops") {
  tensor<double> x = test::random_tensor<double>({2, 3, 4}, -2, 2, 5);
  test::check_values(nn::relu{}(x), relu(x), "relu");
  test::check_values(nn::gelu{}(x), gelu(x), "gelu");
  test::check_values(nn::tanh{}(x), tanh(x), "tanh");
  test::check_values(nn::sigmoid{}(x), sigmoid(x), "sigmoid");
  CHECK(nn::flatten{}(x).shape() == shape{2, 12});
  CHECK(flatten(x, 0).shape() == shape{24});
  CHECK(flatten(x, -2).shape() == shape{2, 12});
  CHECK_THROWS_AS(flatten(x, 3), index_error);
}

TEST_CASE("sequential applies its layers in order and names them by position") {
  generator gen(6);
  nn::sequential net(nn::flatten{}, nn::linear<double>(12, 8, gen), nn::relu{}, nn::linear<double>(8, 3, gen));
  std::vector<std::string> names;
  for (const auto& p : net.named_parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias"});
  tensor<double> x = test::random_tensor<double>({5, 3, 4}, -1, 1, 7);
  const auto& [flat, first, act, last] = net.layers;
  test::check_values(net(x), last(relu(first(flatten(x, 1)))), "in order");
  set_mode(mode::graph);
  tensor<double> graph = net(x);
  set_mode(mode::eager);
  test::check_values(graph, net(x), "as one static graph");
}

TEST_CASE("layers pass finite-difference gradient checks, eagerly and in a static graph") {
  generator gen(8);
  nn::sequential net(nn::linear<double>(4, 5, gen), nn::tanh{}, nn::linear<double>(5, 3, gen), nn::sigmoid{},
                     nn::linear<double>(3, 2, gen), nn::gelu{});
  tensor<double> x = test::away_from_zero({3, 4}, 9);
  // References by std::get: clang 14 cannot capture structured bindings.
  auto& l0 = std::get<0>(net.layers);
  auto& l1 = std::get<2>(net.layers);
  auto& l2 = std::get<4>(net.layers);
  auto with = [&](const std::vector<tensor<double>>& v) {
    // The probe values replace the parameters for one call.
    auto swap_in = [&](auto& layer, std::size_t k) {
      layer.weight = v[k];
      layer.bias = v[k + 1];
    };
    swap_in(l0, 1), swap_in(l1, 3), swap_in(l2, 5);
    return net(v[0]);
  };
  std::vector<tensor<double>> at{x, l0.weight.detach(), l0.bias.detach(), l1.weight.detach(), l1.bias.detach(),
                                 l2.weight.detach(), l2.bias.detach()};
  test::check_gradients(with, at, "eager");
  set_mode(mode::graph);
  test::check_gradients(with, at, "static");
  set_mode(mode::eager);
}

TEST_CASE("initializers draw seeded values within their bounds") {
  generator a(10), b(10);
  tensor<float> w = zeros<float>({300, 200}), v = zeros<float>({300, 200});
  nn::init::kaiming_uniform_(w, a);
  nn::init::kaiming_uniform_(v, b);
  test::check_values(w, v, "the same seed, the same values");
  double bound = std::sqrt(6.0 / 300.0);
  CHECK(max(abs(w)).item() <= bound);
  CHECK(max(abs(w)).item() > 0.95 * bound);
  nn::init::xavier_uniform_(w, a);
  CHECK(max(abs(w)).item() <= std::sqrt(6.0 / 500.0));
  nn::init::kaiming_normal_(w, a);
  CHECK(std::abs(std::sqrt(mean(w * w).item()) - std::sqrt(2.0 / 300.0)) < 0.01 * std::sqrt(2.0 / 300.0) * 5);
  nn::init::constant_(w, 0.25);
  CHECK(min(w).item() == 0.25f);
  tensor<float> kernel = zeros<float>({8, 3, 5, 5});
  CHECK(nn::init::fans_of(kernel).in == 75);
  CHECK(nn::init::fans_of(kernel).out == 200);
  tensor<float> vector = zeros<float>({4});
  CHECK_THROWS_AS(nn::init::kaiming_uniform_(vector, a), shape_error);
}
