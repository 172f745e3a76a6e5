// grad and value_and_grad: argument selection, parameter lists,
// sensitivities, auxiliary outputs, the seed scenario, and gradients of
// gradients against analytic second derivatives.

#include "support/check.hpp"

using namespace tandem;
using tandem::test::printed;

TEST_CASE("the seed scenario: the gradient of matmul(x * z, y), in float32") {
  tensor<float> x{{0.8f, 0.6f, 0.2f}, {1.8f, 1.3f, 1.1f}};
  tensor<float> y{{0.11f, 3.3f, 1.1f}, {1.1f, 0.2f, 1.4f}, {1.1f, 2.2f, 0.3f}};
  parameter<float> z(tensor<float>{2.0f}, "z");
  auto net = [&](const tensor<float>& a, const tensor<float>& b) { return matmul(a * z, b); };
  CHECK(printed(grad(net)(x, y)) == "[[9.02      5.4       7.2000003]\n [9.02      5.4       7.2000003]]");
  auto [gx, gy] = grad([](const tensor<float>& a, const tensor<float>& b) { return a + b; }, all_args)(
      tensor<float>{1, 2, 3}, tensor<float>{4, 5, 6});
  CHECK(printed(gx) == "[1. 1. 1.]");
  CHECK(printed(gy) == "[1. 1. 1.]");
  CHECK_FALSE(z.has_grad());
}

TEST_CASE("choosing arguments and parameters") {
  tensor<double> a{1, 2}, b{3, 4};
  parameter<double> w(tensor<double>{10, 20}, "w");
  auto f = [&](const tensor<double>& p, const tensor<double>& q) { return sum(p * q * w); };
  CHECK(grad(f)(a, b).to_vector() == std::vector<double>{30, 80});
  CHECK(grad(f, args<1>)(a, b).to_vector() == std::vector<double>{10, 40});
  auto [ga, gb] = grad(f, args<0, 1>)(a, b);
  CHECK(ga.to_vector() == std::vector<double>{30, 80});
  CHECK(gb.to_vector() == std::vector<double>{10, 40});
  std::vector<tensor<double>> params{w};
  auto gw = grad(f, params)(a, b);
  static_assert(std::is_same_v<decltype(gw), std::vector<tensor<double>>>);
  CHECK(gw[0].to_vector() == std::vector<double>{3, 8});
  auto [positional, of_params] = grad(f, args<0>, params)(a, b);
  CHECK(positional.to_vector() == std::vector<double>{30, 80});
  CHECK(of_params[0].to_vector() == std::vector<double>{3, 8});
  CHECK_FALSE(w.has_grad());
  auto unused = grad([](const tensor<double>&, const tensor<double>& q) { return sum(q); }, args<0>)(a, b);
  CHECK(unused.to_vector() == std::vector<double>{0, 0});
  CHECK(grad(f)(w, b).to_vector() == std::vector<double>{30, 80});
  CHECK_FALSE(w.has_grad());
}

TEST_CASE("value_and_grad, sensitivities and auxiliary outputs") {
  tensor<double> x{1, 2, 3};
  auto [value, g] = value_and_grad([](const tensor<double>& t) { return sum(t * t); })(x);
  CHECK(value.item() == 14);
  CHECK_FALSE(value.requires_grad());
  CHECK(g.to_vector() == std::vector<double>{2, 4, 6});
  auto with_sens = grad([](const tensor<double>& t) { return t * t; }, sens_param);
  CHECK(with_sens(x, tensor<double>{1, 0, -1}).to_vector() == std::vector<double>{2, 0, -6});
  auto with_aux = grad(
      [](const tensor<double>& t) { return std::make_pair(sum(t * 2.0), std::string("aux")); }, has_aux);
  auto [gt, aux] = with_aux(x);
  CHECK(gt.to_vector() == std::vector<double>{2, 2, 2});
  CHECK(aux == "aux");
  auto [value_aux, g2] = value_and_grad([](const tensor<double>& t) { return std::make_pair(sum(t), t.numel()); },
                                        has_aux)(x);
  CHECK(value_aux.first.item() == 6);
  CHECK(value_aux.second == 3);
  CHECK(g2.to_vector() == std::vector<double>{1, 1, 1});
  CHECK_THROWS_WITH_AS(with_sens(x, tensor<double>{1}),
                       "tandem::grad: the sensitivity of shape [1] does not match the output of shape [3]",
                       shape_error);
}

TEST_CASE("gradients of gradients match analytic second derivatives") {
  tensor<double> x{0.5, -1.0, 2.0};
  auto d2_sin = grad(grad([](const tensor<double>& t) { return sum(sin(t)); }));
  auto got = d2_sin(x).to_vector();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(-std::sin(x.to_vector()[i])));

  auto d2_cubes = grad(grad([](const tensor<double>& t) { return sum(t * t * t) + mean(exp(t)); }));
  got = d2_cubes(x).to_vector();
  for (std::size_t i = 0; i < got.size(); ++i) {
    double v = x.to_vector()[i];
    CHECK(got[i] == doctest::Approx(6 * v + std::exp(v) / 3));
  }

  // L = sum((A B)^2): dL/dA = 2 A B B^T, and the gradient of sum(dL/dA) is 2 * ones(m, k) B B^T.
  tensor<double> a{{1, 2}, {3, 4}, {5, 6}}, b{{0.5, -1, 2}, {1.5, 0.25, -0.5}};
  auto inner = grad([&](const tensor<double>& t) { return sum(square(matmul(t, b))); });
  tensor<double> second = grad([&](const tensor<double>& t) { return inner(t); })(a);
  tensor<double> expected = matmul(ones<double>({3, 2}), matmul(b, b.transpose(0, 1))) * 2.0;
  CHECK(second.to_vector() == expected.to_vector());

  tensor<double> p{1.5};
  p.set_requires_grad();
  tensor<double> y = p * p * p;
  y.backward(ones<double>({1}), {.create_graph = true});
  tensor<double> first = p.grad();
  CHECK(first.item() == doctest::Approx(3 * 1.5 * 1.5));
  p.zero_grad();
  first.backward();
  CHECK(p.grad().item() == doctest::Approx(6 * 1.5));
}
