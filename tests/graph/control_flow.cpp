#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;
using tandem::test::check_gradients;
using tandem::test::check_values;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using inputs = const std::vector<tensor<double>>&;

// A branch on a value the graph computes: its sum's sign.
auto branchy = [](const auto& x, const auto& y) {
  return cond(sum(x) > 0.0, [](const auto& a, const auto& b) { return tanh(a) * b + a; },
              [](const auto& a, const auto& b) { return a * a - b * 0.5; }, x, y);
};

auto taken_then(const tensor<double>& x, const tensor<double>& y) { return tanh(x) * y + x; }
auto taken_else(const tensor<double>& x, const tensor<double>& y) { return x * x - y * 0.5; }

// h_{i+1} = tanh(h_i * w + i / 4): a loop whose body reads its counter and a
// captured tensor.
template <class W>
auto recurrence(const W& w, std::int64_t steps) {
  return [w, steps](const auto& h0) {
    return fori_loop(0, steps, [w](const auto& i, const auto& h) { return tanh(h * w + i * 0.25); }, h0);
  };
}

tensor<double> unrolled(const tensor<double>& w, const tensor<double>& h0, std::int64_t steps) {
  tensor<double> h = h0;
  for (std::int64_t i = 0; i < steps; ++i) h = tanh(h * w + static_cast<double>(i) * 0.25);
  return h;
}

}  // namespace

TEST_CASE("cond runs the branch its predicate picks, eagerly and in a static graph") {
  tensor<double> x = tensor<double>{0.5, -0.25, 1.5}, y = tensor<double>{2, 3, -1};
  tensor<double> negative = -x;
  auto graph = jit(branchy);
  check_values(branchy(x, y), taken_then(x, y), "eager, true", 1e-15, 1e-15);
  check_values(branchy(negative, y), taken_else(negative, y), "eager, false", 1e-15, 1e-15);
  check_values(graph(x, y), taken_then(x, y), "static, true", 1e-15, 1e-15);
  check_values(graph(negative, y), taken_else(negative, y), "static, false", 1e-15, 1e-15);
  set_jit_enabled(false);
  check_values(graph(x, y), taken_then(x, y), "jit disabled", 1e-15, 1e-15);
  set_jit_enabled(true);

  // Several outputs, and a predicate passed in.
  auto both = [](const auto& p, const auto& a) {
    return cond(p, [](const auto& u) { return std::tuple{u + 1.0, u * 2.0}; },
                [](const auto& u) { return std::tuple{u - 1.0, u * 3.0}; }, a);
  };
  auto [first, second] = jit(both)(full<bool>({}, false), x);
  check_values(first, x - 1.0, "second branch, output 0", 1e-15, 1e-15);
  check_values(second, x * 3.0, "second branch, output 1", 1e-15, 1e-15);
}

TEST_CASE("gradients flow through the taken branch of cond, eagerly and through the fused backward") {
  tensor<double> x = test::away_from_zero({4}, 1), y = test::away_from_zero({4}, 2);
  tensor<double> positive = abs(x), negative = -abs(x);
  auto graph = jit(branchy);
  for (const auto& at : {positive, negative}) {
    check_gradients([&](inputs v) { return branchy(v[0], v[1]); }, {at, y}, "eager");
    check_gradients([&](inputs v) { return graph(v[0], v[1]); }, {at, y}, "static");
  }
}

TEST_CASE("cond refuses a predicate of several values and branches of different shapes") {
  tensor<double> x = tensor<double>{1, 2, 3};
  auto keep = [](const auto& a) { return a; };
  auto shrink = [](const auto& a) { return sum(a, 0, true); };
  CHECK_THROWS_WITH_AS(cond(tensor<bool>{true, false}, keep, keep, x),
                       doctest::Contains("tandem::cond: the predicate must hold one value, but has shape [2]"),
                       shape_error);
  auto graph = jit([&](const auto& p, const auto& a) { return cond(p, keep, shrink, a); });
  try {
    graph(full<bool>({}, true), x);
    FAIL("branches of different shapes ran");
  } catch (const shape_error& e) {
    CHECK(has(e.what(), "tandem::cond: the branches return different shapes for output 0: [3] from the true "
                        "branch, [1] from the false branch"));
  }
}

TEST_CASE("fori_loop matches the unrolled loop, eagerly and in a static graph, with a bound computed in the graph") {
  tensor<double> w = tensor<double>{0.5, -1.25, 0.75}, h0 = tensor<double>{0.1, 0.2, -0.3};
  for (std::int64_t steps : {0, 1, 7}) {
    INFO("steps " << steps);
    tensor<double> want = unrolled(w, h0, steps);
    check_values(recurrence(w, steps)(h0), want, "eager", 1e-14, 1e-14);
    check_values(jit(recurrence(w, steps))(h0), want, "static", 1e-14, 1e-14);
  }
  // The trip count as a value of the graph: an input.
  auto counted = jit([w](const auto& h, const auto& n) {
    return fori_loop(0, n, [w](const auto& i, const auto& s) { return tanh(s * w + i * 0.25); }, h);
  });
  check_values(counted(h0, full<std::int64_t>({}, 7)), unrolled(w, h0, 7), "a bound from the graph", 1e-14,
               1e-14);
}

TEST_CASE("gradients through fori_loop: the state and the tensors its body captures, against finite differences") {
  tensor<double> w = test::away_from_zero({3}, 5), h0 = test::away_from_zero({3}, 6);
  check_gradients([&](inputs v) { return recurrence(v[0], 5)(v[1]); }, {w, h0}, "eager");
  check_gradients([&](inputs v) { return jit(recurrence(v[0], 5))(v[1]); }, {w, h0}, "static");

  // A captured parameter's gradient reaches its .grad through a static graph.
  tensor<double> p = w.detach();
  p.set_requires_grad(true);
  sum(jit(recurrence(p, 4))(h0)).backward();
  tensor<double> q = w.detach();
  q.set_requires_grad(true);
  sum(unrolled(q, h0, 4)).backward();
  check_values(p.grad(), q.grad(), "parameter gradient, static against unrolled eager", 1e-12, 1e-12);
}

TEST_CASE("while_loop: a Newton iteration stops on its tolerance, and refuses gradients") {
  // sqrt(a) by Newton's method: x <- (x + a / x) / 2 until |x * x - a| < 1e-12.
  auto newton = [](const auto& a, const auto& x0) {
    auto result = while_loop([](const auto& aa, const auto& x) { return max(abs(x * x - aa)) > 1e-12; },
                             [](const auto& aa, const auto& x) { return std::tuple{aa, (x + aa / x) * 0.5}; }, a, x0);
    return std::get<1>(result);
  };
  tensor<double> a = tensor<double>{2, 9, 0.25}, x0 = tensor<double>{1, 1, 1};
  tensor<double> want = sqrt(a);
  check_values(newton(a, x0), want, "eager", 1e-12, 1e-12);
  check_values(jit(newton)(a, x0), want, "static", 1e-12, 1e-12);

  tensor<double> leaf = a.detach();
  leaf.set_requires_grad(true);
  CHECK_THROWS_WITH_AS(newton(leaf, x0), doctest::Contains("tandem::while_loop: has no derivative"), error);
  CHECK_THROWS_WITH_AS(jit(newton)(leaf, x0), doctest::Contains("tandem::while_loop: has no derivative"), error);
  no_grad plain;
  check_values(jit(newton)(leaf, x0), want, "static, under no_grad", 1e-12, 1e-12);
}
