// Gradients of gradients through static graphs, nested static graphs, and
// the backward of a static graph run twice: every route against eager
// autograd and against finite differences of the lower derivative, in
// double, up to the third order.
#include <doctest/doctest.h>

#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

tensor<double> seeded(const shape& s, std::uint64_t seed) { return test::away_from_zero(s, seed); }

// Elementwise ops of several kinds of derivative rule, fused into one group.
auto fused_ops = [](const auto& x, const auto& y) {
  return sum(tanh(x) * y + exp(x * 0.5) * y * y + x * x * x / (square(y) + 1));
};
// A graph through eager kernels (matmul, log_softmax, a sum over one axis).
auto through_kernels = [](const auto& a, const auto& b) {
  return sum(log_softmax(matmul(a, b) * 0.5, -1) * sum(a, 1, true));
};

tensor<double> leaf(const tensor<double>& x) {
  tensor<double> out = x.detach();
  out.set_requires_grad(true);
  return out;
}

// The gradient with respect to argument `which` of a two-argument function.
template <class F>
tensor<double> partial(const F& f, int which, const tensor<double>& a, const tensor<double>& b) {
  auto both = grad(f, all_args)(a, b);
  return which == 0 ? std::get<0>(both) : std::get<1>(both);
}

// d/d(a, b) of sum(d f / d(argument which)): the Hessian's rows summed.
template <class F>
std::pair<tensor<double>, tensor<double>> hessian_row_sums(const F& f, int which, const tensor<double>& a,
                                                           const tensor<double>& b) {
  tensor<double> la = leaf(a), lb = leaf(b);
  sum(partial(f, which, la, lb)).backward();
  return {la.grad(), lb.grad()};
}

}  // namespace

TEST_CASE("second and third derivatives through a static graph equal eager ones, by every route") {
  tensor<double> x = seeded({7}, 1);
  auto cube = [](const auto& v) { return sum(v * v * v); };
  tensor<double> six_x = x * 6.0;
  test::check_values(grad(grad(cube))(x), six_x, "eager grad(grad(f))");
  test::check_values(grad(grad(jit(cube)))(x), six_x, "grad(grad(jit(f)))");
  test::check_values(grad(jit(grad(cube)))(x), six_x, "grad(jit(grad(f)))");
  test::check_values(jit(grad(jit(grad(cube))))(x), six_x, "jit(grad(jit(grad(f))))");

  tensor<double> six = full<double>({}, 6.0);
  tensor<double> at = full<double>({}, 2.0);
  test::check_values(grad(grad(grad(cube)))(at), six, "eager third derivative");
  test::check_values(grad(grad(grad(jit(cube))))(at), six, "grad(grad(grad(jit(f))))");
  test::check_values(grad(grad(jit(grad(cube))))(at), six, "grad(grad(jit(grad(f))))");
}

TEST_CASE("grad of a static graph on an input that requires a gradient stays on the graph") {
  auto cube = jit([](const auto& v) { return sum(v * v * v); });
  tensor<double> x = leaf(seeded({17}, 3));
  tensor<double> slope = grad(cube)(x);
  REQUIRE(slope.requires_grad());
  sum(slope).backward();
  test::check_values(x.grad(), x.detach() * 6.0, "d/dx sum(3 x^2)");
}

TEST_CASE("Hessians through static graphs pass finite differences and match eager ones") {
  tensor<double> x = seeded({7}, 4), y = seeded({7}, 5);
  tensor<double> a = seeded({3, 4}, 6), b = seeded({4, 5}, 7);
  auto fused = jit(fused_ops);
  auto kernels = jit(through_kernels);
  for (int which : {0, 1}) {
    INFO("first derivative with respect to argument " << which);
    test::check_gradients([&](const auto& v) { return partial(fused, which, v[0], v[1]); }, {x, y},
                          "a fused group's Hessian");
    test::check_gradients([&](const auto& v) { return partial(kernels, which, v[0], v[1]); }, {a, b},
                          "matmul, log_softmax and sum's Hessian");

    auto want = hessian_row_sums(fused_ops, which, x, y);
    auto got = hessian_row_sums(fused, which, x, y);
    test::check_values(got.first, want.first, "fused group, d/dx");
    test::check_values(got.second, want.second, "fused group, d/dy");
    auto want_kernels = hessian_row_sums(through_kernels, which, a, b);
    auto got_kernels = hessian_row_sums(kernels, which, a, b);
    test::check_values(got_kernels.first, want_kernels.first, "eager kernels, d/da");
    test::check_values(got_kernels.second, want_kernels.second, "eager kernels, d/db");
  }
}

TEST_CASE("third derivatives through a static graph pass finite differences") {
  auto g = jit([](const auto& v) { return sum(sin(v) * exp(v * 0.3)); });
  test::check_gradients([&](const auto& v) { return grad(grad(g))(v[0]); }, {seeded({7}, 8)},
                        "d/dx of the second derivative");
}

TEST_CASE("mixed partial derivatives: eager, through a static graph, and through a captured tensor") {
  tensor<double> x = seeded({7}, 9), y = seeded({7}, 10);
  // d/dy sum(d/dx sum(x * x * y)) = d/dy sum(2 x y) = 2 x.
  auto inner = [](const auto& u, const auto& v) { return sum(u * u * v); };
  auto mixed_eager = [&](const auto& u, const auto& v) {
    return sum(grad([&](const auto& w) { return inner(w, v); })(u));
  };
  tensor<double> two_x = x * 2.0;
  test::check_values(grad(mixed_eager, args<1>)(x, y), two_x, "eager, y read by the inner function");
  auto jitted = jit(inner);
  auto mixed_static = [&](const auto& u, const auto& v) { return sum(grad(jitted, args<0>)(u, v)); };
  test::check_values(grad(mixed_static, args<1>)(x, y), two_x, "through a static graph");

  // A parameter the graph captures: d/dw sum(d/dx sum(x * x * w)) = 2 x.
  parameter<double> w(y.clone());
  auto captured = jit([&w](const auto& u) { return sum(u * u * w); });
  auto gw = grad([&] { return sum(grad(captured)(x)); }, std::vector<tensor<double>>{w})();
  REQUIRE(gw.size() == 1);
  test::check_values(gw[0], two_x, "through a captured parameter");
}

TEST_CASE("a static graph called inside another's trace is traced into it") {
  tensor<double> x = seeded({17}, 11), y = seeded({17}, 12);
  auto square_then_exp = jit([](const auto& v) { return exp(v * v * 0.1); });
  auto outer = jit([&](const auto& u, const auto& v) { return sum(square_then_exp(u) * v + square_then_exp(v)); });
  auto plain = [](const auto& u, const auto& v) { return sum(exp(u * u * 0.1) * v + exp(v * v * 0.1)); };
  test::check_values(outer(x, y), plain(x, y), "value");
  auto [gu, gv] = grad(outer, all_args)(x, y);
  auto [pu, pv] = grad(plain, all_args)(x, y);
  test::check_values(gu, pu, "d/du");
  test::check_values(gv, pv, "d/dv");
  // One trace: the inner graph fused into the outer one.
  outer(x, y);
  CHECK(outer.statistics().misses == 1);
  CHECK(square_then_exp.statistics().misses == 0);

  auto cube = [](const auto& v) { return sum(v * v * v); };
  test::check_values(jit(jit(cube))(x), cube(x), "jit(jit(f))");
  test::check_values(jit(grad(jit(cube)))(x), x * x * 3.0, "jit(grad(jit(f)))");
}

TEST_CASE("a static graph's backward runs again with retain_graph, and says when it was freed") {
  auto cube = jit([](const auto& v) { return sum(v * v * v); });
  tensor<double> x = leaf(seeded({7}, 13));
  tensor<double> out = cube(x);
  out.backward(ones_like(out), {.retain_graph = true});
  out.backward(ones_like(out));
  test::check_values(x.grad(), x.detach() * x.detach() * 6.0, "two backwards accumulate");
  CHECK_THROWS_AS(out.backward(ones_like(out)), error);
}
