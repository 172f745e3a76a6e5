// Finite-difference checks (double) of the derivative rules of reductions
// (over each axis and all), matmul (1-d, 2-d, batched, broadcast), softmax,
// log_softmax, cross-entropy, views and the shape ops.

#include "support/gradcheck.hpp"

using namespace tandem;
using tandem::test::away_from_zero;
using tandem::test::check_gradients;

namespace {
using inputs = const std::vector<tensor<double>>&;
}

TEST_CASE("reductions over each axis, all axes, keepdims") {
  tensor<double> x = away_from_zero({2, 3, 4}, 1);
  for (bool keep : {false, true}) {
    for (axes ax : {axes(0), axes(1), axes(-1), axes({0, 2}), axes::all()}) {
      std::string what = std::string(keep ? " keepdims" : "") + (ax.is_all() ? " all" : " axes " + to_string(std::span<const std::int64_t>(ax.data(), ax.size())));
      check_gradients([&](inputs v) { return sum(v[0], ax, keep); }, {x}, "sum" + what);
      check_gradients([&](inputs v) { return mean(v[0], ax, keep); }, {x}, "mean" + what);
      check_gradients([&](inputs v) { return prod(v[0], ax, keep); }, {x}, "prod" + what);
      check_gradients([&](inputs v) { return max(v[0], ax, keep); }, {x}, "max" + what);
      check_gradients([&](inputs v) { return min(v[0], ax, keep); }, {x}, "min" + what);
      check_gradients([&](inputs v) { return var(v[0], ax, keep); }, {x}, "var" + what);
      check_gradients([&](inputs v) { return tandem::std(v[0], ax, keep); }, {x}, "std" + what);
      check_gradients([&](inputs v) { return logsumexp(v[0], ax, keep); }, {x}, "logsumexp" + what);
    }
  }
}

TEST_CASE("prod with zeros") {
  tensor<double> one_zero{{0.0, 2.0, 3.0}, {1.5, 0.5, 2.0}};
  check_gradients([](inputs v) { return prod(v[0], 1); }, {one_zero}, "one zero in a row");
  tensor<double> x = one_zero.clone();
  x.set_requires_grad();
  prod(tensor<double>{{0, 0, 3}}.astype<double>() * x.slice(0, 0, 1)).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{0, 0, 0, 0, 0, 0});
}

TEST_CASE("max shares the gradient among ties") {
  tensor<double> x{3, 1, 3};
  x.set_requires_grad();
  max(x).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{0.5, 0, 0.5});
}

TEST_CASE("matmul in all its forms") {
  struct pair_case {
    shape a, b;
  };
  for (auto [sa, sb] : std::vector<pair_case>{{{3}, {3}},
                                              {{3}, {3, 4}},
                                              {{2, 3}, {3}},
                                              {{2, 3}, {3, 4}},
                                              {{2, 2, 3}, {3, 4}},
                                              {{2, 1, 2, 3}, {3, 3, 2}}}) {
    tensor<double> a = away_from_zero(sa, 2), b = away_from_zero(sb, 3);
    check_gradients([](inputs v) { return matmul(v[0], v[1]); }, {a, b},
                    "matmul " + to_string(sa) + " x " + to_string(sb));
  }
  tensor<double> a = away_from_zero({3, 2}, 4), b = away_from_zero({4, 3}, 5);
  check_gradients([](inputs v) { return matmul(v[0].transpose(0, 1), v[1].transpose(0, 1)); }, {a, b},
                  "matmul of transposed views");
}

TEST_CASE("softmax, log_softmax and cross-entropy") {
  tensor<double> x = away_from_zero({3, 5}, 6, 0.2, 3);
  for (std::int64_t axis : {0, 1}) {
    check_gradients([&](inputs v) { return softmax(v[0], axis); }, {x}, "softmax axis " + std::to_string(axis));
    check_gradients([&](inputs v) { return log_softmax(v[0], axis); }, {x}, "log_softmax axis " + std::to_string(axis));
  }
  tensor<std::int64_t> target{4, 0, 2};
  for (reduction how : {reduction::mean, reduction::sum, reduction::none})
    check_gradients([&](inputs v) { return cross_entropy(v[0], target, how); }, {x}, "cross_entropy");
  tensor<double> extreme{{1e4, -1e4, 0}, {-80, 80, 0}};
  extreme.set_requires_grad();
  cross_entropy(extreme, tensor<std::int64_t>{0, 0}).backward();
  auto g = extreme.grad().to_vector();
  CHECK(g[0] == doctest::Approx(0));
  CHECK(g[3] == doctest::Approx(-0.5));
  CHECK(g[4] == doctest::Approx(0.5));
}

TEST_CASE("views route gradients to the right elements") {
  tensor<double> x = away_from_zero({3, 4}, 7);
  check_gradients([](inputs v) { return v[0].reshape({2, 6}) * 2; }, {x}, "reshape");
  check_gradients([](inputs v) { return v[0].transpose(0, 1).contiguous() * 2; }, {x}, "transpose");
  check_gradients([](inputs v) { return v[0].permute({1, 0}).flatten(); }, {x}, "permute");
  check_gradients([](inputs v) { return v[0].slice(1, 1, {}, 2) * v[0].slice(1, {}, {}, -2); }, {x}, "slices");
  check_gradients([](inputs v) { return v[0][1] * v[0].select(1, -1).slice(0, 0, 1); }, {x}, "select");
  check_gradients([](inputs v) { return v[0].unsqueeze(1).expand({3, 2, 4}) * 3; }, {x}, "expand");
  check_gradients([](inputs v) { return v[0].reshape({3, 1, 4}).squeeze() + v[0].unsqueeze(0).squeeze(0); }, {x}, "squeeze");
  check_gradients([](inputs v) { return v[0].take(0, 2, 2, -1); }, {x}, "take");
}

TEST_CASE("shape ops") {
  tensor<double> a = away_from_zero({2, 3}, 8), b = away_from_zero({1, 3}, 9);
  check_gradients([](inputs v) { return concat<double>({v[0], v[1], v[0]}); }, {a, b}, "concat");
  check_gradients([](inputs v) { return stack<double>({v[0][0], v[1][0]}, 1); }, {a, b}, "stack");
  check_gradients([](inputs v) { return split(v[0], 2, 1)[1] * 2; }, {a}, "split");
  check_gradients([](inputs v) { return index_select(v[0], 1, tensor<std::int64_t>{2, 0, 2}); }, {a}, "index_select");
  check_gradients([](inputs v) { return gather(v[0], 1, tensor<std::int64_t>{{2, 2}, {0, 1}}); }, {a}, "gather");
  check_gradients([](inputs v) { return index_add(v[0], 0, tensor<std::int64_t>{1, 1, 0}, v[1].expand({3, 3}) * 1); },
                  {a, b}, "index_add");
  check_gradients([](inputs v) { return scatter_add(v[0], 1, tensor<std::int64_t>{{2, 0, 2}}, v[1]); }, {a, b},
                  "scatter_add");
  check_gradients([](inputs v) { return sum_to(v[0], {1, 3}) * v[1]; }, {a, b}, "sum_to");
}
