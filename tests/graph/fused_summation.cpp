// A sum or mean computed inside the loop of the elementwise group feeding
// it (graph/execute/summation.hpp): structure, values against eager
// and a double reference loop on every layout, allocations, gradients in
// both backward forms (a broadcast seed from the eager engine, and the
// forward-and-backward pass of a unit-seeded output).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

template <class Graph, class... A>
using traced = decltype(std::declval<Graph>().trace(std::declval<A>()...));

tensor<double> seeded(const shape& s, std::uint64_t seed) { return test::away_from_zero(s, seed, 0.1, 0.9); }

template <class X, class Y>
auto loss_terms(const X& x, const Y& y) {
  return x * y + sin(x) * y - exp(y * 0.5) * x;
}

}  // namespace

TEST_CASE("a sum of an elementwise group is one loop with no buffer for the group") {
  auto f = jit([](auto x, auto y) { return sum(loss_terms(x, y)); });
  using alone = detail::graph_structure<traced<decltype(f), tensor<double>, tensor<double>>>;
  static_assert(alone::fusion_groups == 1 && alone::buffers == 0, "sum(f) is f's loop, reducing");

  auto g = jit([](auto x, auto y) { return mean(loss_terms(x, y), 1) * 2.0 + 1.0; });
  using then_scaled = detail::graph_structure<traced<decltype(g), tensor<double>, tensor<double>>>;
  static_assert(then_scaled::fusion_groups == 2 && then_scaled::buffers == 1, "the mean is a buffer; f is not");

  auto h = jit([](auto x) {
    auto e = exp(x) + x;
    return std::tuple{sum(e), e};
  });
  using kept = detail::graph_structure<traced<decltype(h), tensor<double>>>;
  static_assert(kept::fusion_groups == 2 && kept::buffers == 0, "a group that is also an output is summed from its buffer");
}

TEST_CASE("a fused sum allocates only its output") {
  auto f = jit([](auto x, auto y) { return sum(loss_terms(x, y), 1); });
  tensor<double> x = seeded({8, 4096}, 1), y = seeded({8, 4096}, 2);
  f(x, y);
  CHECK(test::allocations_during([&] { tensor<double> out = f(x, y); }) ==
        test::allocations_during([] { tensor<double> one_output({8}); }));
}

TEST_CASE("fused sums and means equal a double reference loop on every size") {
  auto total = jit([](auto x, auto y) { return sum(loss_terms(x, y)); });
  auto average = jit([](auto x, auto y) { return mean(loss_terms(x, y)); });
  for (std::int64_t n : test::tail_sizes) {
    tensor<float> x = test::random_tensor<float>({n}, -1, 1, 3), y = test::random_tensor<float>({n}, -1, 1, 4);
    double want = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double a = x.at(i), b = y.at(i);
      want += a * b + std::sin(a) * b - std::exp(b * 0.5) * a;
    }
    INFO("n = " << n);
    double tol = 1e-5 * (1.0 + static_cast<double>(n));
    CHECK(std::abs(total(x, y).item() - want) <= tol);
    if (n > 0) CHECK(std::abs(average(x, y).item() - want / static_cast<double>(n)) <= tol / static_cast<double>(n));
    test::check_values(total(x, y), sum(loss_terms(x, y)), "the fused sum equals eager");
  }
}

TEST_CASE("fused reductions over axes, with broadcasting and views, equal eager") {
  tensor<double> a = seeded({5, 6, 7}, 5), row = seeded({1, 1, 7}, 6);
  std::vector<std::pair<axes, bool>> cases{{axes::all(), false}, {axes{2}, false}, {axes{2}, true},
                                           {axes{0}, false},     {axes{0, 1}, true}, {axes{1}, false},
                                           {axes{0, 2}, false}};
  for (const auto& [layout, x] : test::layouts(a)) {
    for (const auto& [ax, keepdims] : cases) {
      // Named copies: clang 14 cannot capture structured bindings (INFO does).
      const std::string& where = layout;
      bool kept = keepdims;
      INFO(where << ", keepdims " << kept);
      auto f = jit([ax = ax, keepdims = keepdims](auto p, auto q) { return sum(p * q + exp(p), ax, keepdims); });
      auto m = jit([ax = ax, keepdims = keepdims](auto p, auto q) { return mean(square(p - q), ax, keepdims); });
      test::check_values(f(x, row), sum(x * row + exp(x), ax, keepdims), "sum");
      test::check_values(m(x, row), mean(square(x - row), ax, keepdims), "mean");
    }
  }
  auto empty = jit([](auto p) { return sum(p * 2.0, 1); });
  test::check_values(empty(zeros<double>({3, 0})), zeros<double>({3}), "sum over zero elements");
  CHECK_THROWS_AS(jit([](auto p) { return sum(p * 2.0, 3); })(a), index_error);
}

TEST_CASE("fused reductions pass finite-difference gradient checks") {
  auto f = jit([](auto x, auto y) { return sum(loss_terms(x, y), 1, true) + mean(x * y, 0); });
  test::check_gradients([&](const auto& v) { return f(v[0], v[1]); }, {seeded({3, 4}, 7), seeded({3, 4}, 8)},
                        "sum over rows, mean over columns");
  auto b = jit([](auto x, auto y) { return mean(tanh(x) * y, {0, 2}); });
  test::check_gradients([&](const auto& v) { return b(v[0], v[1]); }, {seeded({2, 3, 4}, 9), seeded({1, 3, 1}, 10)},
                        "a broadcast operand, reduced over outer and inner axes");
}

TEST_CASE("a unit-seeded fused reduction runs its backward in its forward pass, with the eager gradients") {
  tensor<double> x = seeded({6, 17}, 11), y = seeded({6, 17}, 12), w = seeded({17}, 13);
  auto loss = [](auto a, auto b) { return sum(loss_terms(a, b)); };
  auto [ex, ey] = grad(loss, all_args)(x, y);
  auto [jx, jy] = jit(grad(loss, all_args))(x, y);
  test::check_values(jx, ex, "jit(grad(sum)) x");
  test::check_values(jy, ey, "jit(grad(sum)) y");

  auto per_column = [](auto a, auto b) { return mean(square(a * b - 1.0), 0); };
  auto [value, gradients] = value_and_grad(jit([&](auto a, auto b) { return mean(per_column(a, b)); }), all_args)(x, w);
  auto [eager_value, eager_gradients] = value_and_grad([&](auto a, auto b) { return mean(per_column(a, b)); }, all_args)(x, w);
  test::check_values(value, eager_value, "value");
  test::check_values(std::get<0>(gradients), std::get<0>(eager_gradients), "d/da, a reduction of a reduction");
  test::check_values(std::get<1>(gradients), std::get<1>(eager_gradients), "d/db, broadcast");

  auto columns = [](auto a) { return sum(exp(a) * a, 0) * 1.0; };
  auto summed_columns = [&](auto a) { return sum(columns(a)); };
  test::check_values(jit(grad(summed_columns))(x), grad(summed_columns)(x), "a column reduction, then a sum");
  auto just_columns = [](auto a) { return mean(exp(a) * a, {0}); };
  test::check_values(grad(jit(just_columns))(x), grad(just_columns)(x), "a unit-seeded column reduction");

  auto root = jit(loss).trace(x, y);
  using exec = detail::executor<decltype(root), std::tuple<const tensor<double>&, const tensor<double>&>, false>;
  std::tuple<const tensor<double>&, const tensor<double>&> inputs{x, y};
  const auto& output = detail::operand_at<0>(root.children);
  exec seeded_run(inputs, true, detail::key_of(output));
  seeded_run.value(output);
  CHECK(seeded_run.counters().fused_loops == 1);
  CHECK(seeded_run.counters().forward_backward_passes == 1);
  exec plain_run(inputs, true);
  plain_run.value(output);
  CHECK(plain_run.counters().forward_backward_passes == 0);
}

TEST_CASE("grad reads no value: a unit-seeded reduction's backward runs alone and gives value_and_grad's gradients") {
  tensor<double> x = seeded({6, 17}, 15), y = seeded({6, 17}, 16);
  auto total = [](auto a, auto b) { return sum(loss_terms(a, b)); };
  auto average = [](auto a, auto b) { return mean(loss_terms(a, b)); };
  auto [gx, gy] = jit(grad(total, all_args))(x, y);
  auto [value, gradients] = jit(value_and_grad(total, all_args))(x, y);
  // A sum's seed is exactly 1 both ways: the same bits.
  CHECK(std::equal(gx.data(), gx.data() + gx.numel(), std::get<0>(gradients).data()));
  CHECK(std::equal(gy.data(), gy.data() + gy.numel(), std::get<1>(gradients).data()));
  test::check_values(value, sum(loss_terms(x, y)), "value_and_grad's value");
  // A mean's 1/n enters in a different place: equal to rounding.
  auto [mx, my] = jit(grad(average, all_args))(x, y);
  auto [mean_value, mean_gradients] = jit(value_and_grad(average, all_args))(x, y);
  test::check_values(mx, std::get<0>(mean_gradients), "d/dx of a mean");
  test::check_values(my, std::get<1>(mean_gradients), "d/dy of a mean");
  test::check_values(mean_value, mean(loss_terms(x, y)), "a mean's value");
  // With an auxiliary output the value of the first is still not read.
  auto with_aux = [](auto a, auto b) { return std::tuple{sum(loss_terms(a, b)), sum(a)}; };
  auto [aux_gradients, aux] = jit(grad(with_aux, all_args, has_aux))(x, y);
  test::check_values(std::get<0>(aux_gradients), gx, "d/dx with an auxiliary output");
  test::check_values(aux, sum(x), "the auxiliary output");

  auto root = jit(total).trace(x, y);
  using exec = detail::executor<decltype(root), std::tuple<const tensor<double>&, const tensor<double>&>, false>;
  std::tuple<const tensor<double>&, const tensor<double>&> inputs{x, y};
  const auto& output = detail::operand_at<0>(root.children);
  exec unread(inputs, true, detail::key_of(output), false);
  CHECK(std::isnan(unread.value(output).item()));
  CHECK(unread.counters().forward_backward_passes == 1);
}

TEST_CASE("a reduction read again is not differentiated early") {
  auto twice = jit([](auto x) {
    auto s = sum(x * x);
    return s * s;
  });
  tensor<double> x = seeded({9}, 14);
  auto eager = grad([](auto a) {
    auto s = sum(a * a);
    return s * s;
  })(x);
  test::check_values(grad(twice)(x), eager, "d/dx sum(x*x)^2");
}

TEST_CASE("a fused reduction of integers computed in floating point has no gradient to send") {
  auto f = jit([](auto i, auto) { return sum(i * 0.5); });
  tensor<std::int32_t> i = {1, 2, 3};
  tensor<float> x = {1.0f, 2.0f};
  CHECK(f(i, x).item() == doctest::Approx(3.0));
  test::check_values(grad(f, args<1>)(i, x), zeros<float>({2}), "d/dx of what does not read x");
}
