// nn::module: registration by name (nested, dotted), copies that keep
// naming their own members, train/eval, zero_grad, bad registrations, and
// the same forward run eagerly, in mode::graph and under an explicit jit.
#include <doctest/doctest.h>

#include "support/check.hpp"
#include "support/stand_in_device.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

struct block : nn::module<block> {
  nn::linear<double> inner;
  tensor<double> scale = ones<double>({3});
  tensor<double> seen = zeros<double>({3});
  explicit block(generator& gen) : inner(4, 3, gen) {
    register_module("inner", inner);
    register_parameter("scale", scale);
    register_buffer("seen", seen);
  }
  auto forward(const auto& x) const { return tanh(inner(x)) * scale; }
};

struct network : nn::module<network> {
  block first, second;
  nn::linear<double> head;
  explicit network(generator& gen) : first(gen), second(gen), head(3, 2, gen) {
    register_module("first", first);
    register_module("second", second);
    register_module("head", head);
  }
  auto forward(const auto& x) const { return head(first(x) + second(x)); }
};

struct bad : nn::module<bad> {
  tensor<float> w = zeros<float>({2});
  void twice() {
    register_parameter("w", w);
    register_parameter("w", w);
  }
  void dotted() { register_parameter("a.b", w); }
  void local() {
    tensor<float> outside = zeros<float>({2});
    register_parameter("outside", outside);
  }
  auto forward(const auto& x) const { return x; }
};

std::vector<std::string> names_of(const std::vector<nn::named_tensor>& list) {
  std::vector<std::string> names;
  for (const auto& p : list) names.push_back(p.name);
  return names;
}

tensor<double> as_double(const nn::named_tensor& p) { return std::get<tensor<double>>(p.value); }

}  // namespace

TEST_CASE("parameters and buffers are named by their path in the module tree") {
  generator gen(1);
  network net(gen);
  CHECK(names_of(net.named_parameters()) ==
        std::vector<std::string>{"first.scale", "first.inner.weight", "first.inner.bias", "second.scale",
                                 "second.inner.weight", "second.inner.bias", "head.weight", "head.bias"});
  CHECK(names_of(net.named_buffers()) == std::vector<std::string>{"first.seen", "second.seen"});
  CHECK(net.parameter_count() == 2 * (3 + 12 + 3) + 6 + 2);
  for (const auto& p : net.named_parameters()) CHECK(as_double(p).requires_grad());
  CHECK(!as_double(net.named_buffers()[0]).requires_grad());
  CHECK(net.first.inner.weight.name() == "weight");
}

TEST_CASE("a copied module names its own members") {
  generator gen(2);
  network net(gen);
  network copy = net;
  auto original = net.named_parameters(), copied = copy.named_parameters();
  REQUIRE(original.size() == copied.size());
  for (std::size_t i = 0; i < original.size(); ++i)
    CHECK(as_double(copied[i]).data() == as_double(original[i]).data());
  copy.head.weight = zeros<double>({3, 2});
  CHECK(as_double(copy.named_parameters()[6]).data() == copy.head.weight.data());
  CHECK(as_double(net.named_parameters()[6]).data() != copy.head.weight.data());
}

TEST_CASE("train and eval reach every sub-module; zero_grad clears every gradient") {
  generator gen(3);
  network net(gen);
  CHECK(net.is_training());
  net.eval();
  CHECK(!net.is_training());
  CHECK(!net.first.inner.is_training());
  net.train();
  CHECK(net.second.inner.is_training());

  tensor<double> x = test::random_tensor<double>({5, 4}, -1, 1, 4);
  sum(net(x)).backward();
  for (const auto& p : net.named_parameters()) CHECK(as_double(p).has_grad());
  net.zero_grad();
  for (const auto& p : net.named_parameters()) CHECK(!as_double(p).has_grad());
}

TEST_CASE("to(device) moves every parameter, buffer and gradient, and back") {
  test::with_stand_in_device runtime;
  generator gen(5);
  network net(gen);
  sum(net(test::random_tensor<double>({2, 4}, -1, 1, 6))).backward();
  std::vector<std::vector<double>> values, gradients;
  for (const auto& p : net.named_parameters()) {
    values.push_back(as_double(p).to_vector());
    gradients.push_back(as_double(p).grad().to_vector());
  }
  net.to(device::cuda(0));
  auto moved = net.named_parameters();
  for (std::size_t i = 0; i < moved.size(); ++i) {
    tensor<double> p = as_double(moved[i]);
    INFO(moved[i].name);
    CHECK(p.device() == device::cuda(0));
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
    CHECK(p.grad().device() == device::cuda(0));
    CHECK(p.to_vector() == values[i]);
    CHECK(p.grad().to_vector() == gradients[i]);
  }
  CHECK(as_double(net.named_buffers()[0]).device() == device::cuda(0));
  CHECK(net.first.inner.weight.name() == "weight");
  net.to(device::cpu);
  for (std::size_t i = 0; i < moved.size(); ++i) {
    CHECK(as_double(net.named_parameters()[i]).device() == device::cpu);
    CHECK(as_double(net.named_parameters()[i]).to_vector() == values[i]);
  }
}

TEST_CASE("bad registrations throw and name the problem") {
  bad b;
  CHECK_THROWS_WITH_AS(b.twice(), doctest::Contains("'w' is already registered"), value_error);
  CHECK_THROWS_WITH_AS(b.dotted(), doctest::Contains("'a.b' is not a valid name"), value_error);
  CHECK_THROWS_WITH_AS(b.local(), doctest::Contains("not a member of the module"), value_error);
}

TEST_CASE("a module's forward runs eagerly, in graph mode and under jit with the same values and gradients") {
  generator gen(5);
  network net(gen);
  tensor<double> x = test::random_tensor<double>({6, 4}, -1, 1, 6);
  auto gradients = [&] {
    net.zero_grad();
    tensor<double> out = net(x);
    sum(out * out).backward();
    std::vector<tensor<double>> g;
    for (const auto& p : net.named_parameters()) g.push_back(as_double(p).grad());
    return std::pair{out, g};
  };
  auto [eager_out, eager_grads] = gradients();
  set_mode(mode::graph);
  auto [graph_out, graph_grads] = gradients();
  auto [again_out, again_grads] = gradients();
  set_mode(mode::eager);
  test::check_values(graph_out, eager_out, "graph-mode forward");
  for (std::size_t i = 0; i < eager_grads.size(); ++i) test::check_values(graph_grads[i], eager_grads[i], "graph-mode gradient");
  CHECK(net.graph_statistics().misses == 1);
  CHECK(net.graph_statistics().hits == 1);

  auto jitted = jit(&net, [](const network& self, const auto& in) { return self.forward(in); });
  test::check_values(jitted(x), eager_out, "explicit jit");

  // Parameters are read on every call: an update is seen without a new plan.
  set_mode(mode::graph);
  {
    no_grad update;
    net.head.bias.assign(full<double>({2}, 10.0));
  }
  tensor<double> shifted = net(x);
  set_mode(mode::eager);
  test::check_values(shifted, net(x), "after an update");
  CHECK(net.graph_statistics().misses == 1);
}
