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

TEST_CASE("switch_case runs the branch its index picks, and refuses an index out of range") {
  tensor<double> x = tensor<double>{0.5, -0.25, 1.5};
  auto pick = [](const auto& index, const auto& a) {
    return switch_case(index,
                       std::tuple{[](const auto& u) { return u + 1.0; }, [](const auto& u) { return exp(u); },
                                  [](const auto& u) { return u * u * 3.0; }},
                       a);
  };
  auto graph = jit(pick);
  std::vector<tensor<double>> want{x + 1.0, exp(x), x * x * 3.0};
  for (std::int64_t k = 0; k < 3; ++k) {
    check_values(pick(full<std::int64_t>({}, k), x), want[k], "eager, branch " + std::to_string(k), 1e-15, 1e-15);
    check_values(graph(full<std::int64_t>({}, k), x), want[k], "static, branch " + std::to_string(k), 1e-15, 1e-15);
    check_gradients([&](inputs v) { return graph(full<std::int64_t>({}, k), v[0]); }, {x},
                    "static gradient, branch " + std::to_string(k));
  }
  CHECK_THROWS_WITH_AS(graph(full<std::int64_t>({}, 3), x),
                       doctest::Contains("tandem::switch_case: the index 3 picks none of the 3 branches"), value_error);
  CHECK_THROWS_WITH_AS(pick(full<std::int32_t>({}, -1), x),
                       doctest::Contains("tandem::switch_case: the index -1 picks none of the 3 branches"),
                       value_error);
}

namespace {

// An RNN cell over a sequence: h' = tanh(x_t W + h U), y_t = 2 h'.
template <class W>
auto rnn(const W& w, const W& u) {
  return [w, u](const auto& h0, const auto& xs) {
    return scan(
        [w, u](const auto& h, const auto& x) {
          auto next = tanh(matmul(x, w) + matmul(h, u));
          return std::tuple{next, next * 2.0};
        },
        h0, xs);
  };
}

std::tuple<tensor<double>, tensor<double>> rnn_unrolled(const tensor<double>& w, const tensor<double>& u,
                                                        const tensor<double>& h0, const tensor<double>& xs) {
  tensor<double> h = h0;
  std::vector<tensor<double>> ys;
  for (std::int64_t t = 0; t < xs.shape()[0]; ++t) {
    h = tanh(matmul(xs.take(0, t, 1).squeeze(0), w) + matmul(h, u));
    ys.push_back(h * 2.0);
  }
  return {h, stack(ys)};
}

}  // namespace

TEST_CASE("scan over a sequence: an RNN's final state and outputs, eagerly and in a static graph") {
  generator gen(11);
  tensor<double> w = uniform<double>({3, 4}, -0.8, 0.8, gen), u = uniform<double>({4, 4}, -0.8, 0.8, gen);
  tensor<double> h0 = uniform<double>({2, 4}, -1, 1, gen), xs = uniform<double>({5, 2, 3}, -1, 1, gen);
  auto [want_h, want_ys] = rnn_unrolled(w, u, h0, xs);
  auto [h, ys] = rnn(w, u)(h0, xs);
  check_values(h, want_h, "eager, final state", 1e-14, 1e-14);
  check_values(ys, want_ys, "eager, outputs", 1e-14, 1e-14);
  auto [sh, sys] = jit(rnn(w, u))(h0, xs);
  check_values(sh, want_h, "static, final state", 1e-14, 1e-14);
  check_values(sys, want_ys, "static, outputs", 1e-14, 1e-14);

  // Two carries, and no steps.
  auto sums = [](const auto& a, const auto& b, const auto& xs_) {
    return scan([](const auto& s, const auto& p, const auto& x) { return std::tuple{s + x, p * x, s * 1.0}; },
                std::tuple{a, b}, xs_);
  };
  tensor<double> zero = zeros<double>({2}), one = ones<double>({2}), rows = uniform<double>({5, 2}, 0.5, 1.5, gen);
  auto [s, p, running] = jit(sums)(zero, one, rows);
  check_values(s, sum(rows, 0), "static, a running sum", 1e-14, 1e-14);
  check_values(p, prod(rows, 0), "static, a running product", 1e-14, 1e-14);
  check_values(running.take(0, 4, 1).squeeze(0), sum(rows.take(0, 0, 4), 0), "static, the sum before the last step",
               1e-14, 1e-14);
  CHECK_THROWS_WITH_AS(jit(sums)(zero, one, zeros<double>({0, 2})),
                       doctest::Contains("tandem::scan: xs of shape [0, 2] has no steps"), shape_error);
}

TEST_CASE("gradients through scan reach the carry, the sequence and the cell's weights") {
  generator gen(12);
  tensor<double> w = uniform<double>({3, 4}, -0.8, 0.8, gen), u = uniform<double>({4, 4}, -0.8, 0.8, gen);
  tensor<double> h0 = uniform<double>({2, 4}, -1, 1, gen), xs = uniform<double>({4, 2, 3}, -1, 1, gen);
  auto both = [](const auto& out) { return std::get<0>(out) * 0.5 + sum(std::get<1>(out), 0); };
  check_gradients([&](inputs v) { return both(rnn(v[0], v[1])(v[2], v[3])); }, {w, u, h0, xs}, "eager");
  check_gradients([&](inputs v) { return both(jit(rnn(v[0], v[1]))(v[2], v[3])); }, {w, u, h0, xs}, "static");

  // The weights' .grad through one static graph equals the unrolled loop's.
  tensor<double> sw = w.detach(), su = u.detach();
  sw.set_requires_grad(true);
  su.set_requires_grad(true);
  sum(both(jit(rnn(sw, su))(h0, xs))).backward();
  tensor<double> ew = w.detach(), eu = u.detach();
  ew.set_requires_grad(true);
  eu.set_requires_grad(true);
  sum(both(rnn_unrolled(ew, eu, h0, xs))).backward();
  check_values(sw.grad(), ew.grad(), "dW, static against unrolled", 1e-12, 1e-12);
  check_values(su.grad(), eu.grad(), "dU, static against unrolled", 1e-12, 1e-12);
}

TEST_CASE("the dump shows a construct's sub-graphs, and statistics count how often each ran") {
  tensor<double> x = tensor<double>{0.5, -0.25, 1.5}, y = tensor<double>{2, 3, -1};
  auto graph = jit(branchy);
  std::string text = graph.text(x, y);
  INFO(text);
  for (const char* line : {"= cond %", "[control flow: runs the sub-graphs below]", "= cond output 0 %",
                           "[backward through the runs of cond's sub-graphs]", "sub-graph true branch of %",
                           "sub-graph false branch of %", "  forward\n    %0 = input 0 : float64"})
    CHECK(has(text, line));
  // dot() draws each branch as a cluster inside the graph, its outputs
  // joined to the construct by dashed edges.
  std::string dot = graph.dot(x, y);
  INFO(dot);
  for (const char* line : {"label=\"true branch of %", "label=\"false branch of %", "color=palegreen",
                           "[style=dashed];", "s0_v0 [label=\"%0\\ninput 0 : float64\""})
    CHECK(has(dot, line));

  graph(x, y);
  graph(x, y);
  graph(-x, y);
  plan_statistics stats = graph.statistics();
  REQUIRE(stats.subgraphs.size() == 2);
  CHECK(stats.subgraphs[0].name == "cond #1: true branch");
  CHECK(stats.subgraphs[1].name == "cond #1: false branch");
  // Counted per program point (the other tests ran this cond too); the
  // runs that compare the shapes of the branches not taken do not count.
  std::int64_t taken_before = stats.subgraphs[0].runs, other_before = stats.subgraphs[1].runs;
  graph(x, y);
  stats = graph.statistics();
  CHECK(stats.subgraphs[0].runs == taken_before + 1);
  CHECK(stats.subgraphs[1].runs == other_before);

  tensor<double> w = tensor<double>{0.5, -1.25, 0.75};
  auto loop = jit(recurrence(w, 6));
  loop(x);
  stats = loop.statistics();
  REQUIRE(stats.subgraphs.size() == 1);
  CHECK(stats.subgraphs[0].name == "fori_loop #1: body");
  CHECK(stats.subgraphs[0].runs >= 6);
  CHECK(has(loop.text(x), "sub-graph body of %"));
}

namespace {

// The seeds' graph-mode control flow: an `if` on tensors in a cell's
// construct, run in graph mode and in PyNative mode alike.
struct larger_or_scaled : nn::module<larger_or_scaled> {
  auto forward(const auto& x, const auto& y) const {
    return cond(sum(x) > sum(y), [](const auto& a, const auto&) { return a * 1.0f; },
                [](const auto& a, const auto& b) { return b - a; }, x, y);
  }
};

}  // namespace

TEST_CASE("an if on tensors inside a graph-mode module, as in the seeds' graph mode") {
  larger_or_scaled net;
  tensor<float> x = tensor<float>{1, 2, 3}, y = tensor<float>{4, 5, 6};
  set_mode(mode::graph);
  tensor<float> in_graph = net(x, y), swapped = net(y, x);
  set_mode(mode::eager);
  check_values(in_graph, net(x, y), "graph mode against eager, false branch", 0, 0);
  check_values(in_graph, y - x, "the false branch", 0, 0);
  check_values(swapped, y * 1.0f, "the true branch", 0, 0);
  CHECK(net.graph_statistics().subgraphs.size() == 2);
}

TEST_CASE("a cond on a loss value: clipping a gradient whose norm exceeds a threshold") {
  auto clipped = jit([](const auto& g) {
    auto norm = sqrt(sum(g * g));
    return cond(norm > 1.0, [](const auto& v, const auto& n) { return v / n; },
                [](const auto& v, const auto&) { return v * 1.0; }, g, norm);
  });
  tensor<double> large = tensor<double>{3, 4}, small = tensor<double>{0.3, 0.4};
  check_values(clipped(large), tensor<double>{0.6, 0.8}, "clipped to norm 1", 1e-15, 1e-15);
  check_values(clipped(small), small, "left alone", 1e-15, 1e-15);
  check_gradients([&](inputs v) { return clipped(v[0]); }, {large}, "static gradient, clipped");
  check_gradients([&](inputs v) { return clipped(v[0]); }, {small}, "static gradient, left alone");
}

TEST_CASE("loops and scan give the same results with jit disabled") {
  tensor<double> w = tensor<double>{0.5, -1.25, 0.75}, h0 = tensor<double>{0.1, 0.2, -0.3};
  generator gen(13);
  tensor<double> u = uniform<double>({4, 4}, -0.8, 0.8, gen), wx = uniform<double>({3, 4}, -0.8, 0.8, gen);
  tensor<double> s0 = uniform<double>({2, 4}, -1, 1, gen), xs = uniform<double>({5, 2, 3}, -1, 1, gen);
  tensor<double> loop = jit(recurrence(w, 5))(h0);
  auto [h, ys] = jit(rnn(wx, u))(s0, xs);
  set_jit_enabled(false);
  tensor<double> loop_eager = jit(recurrence(w, 5))(h0);
  auto [he, yse] = jit(rnn(wx, u))(s0, xs);
  set_jit_enabled(true);
  check_values(loop_eager, loop, "fori_loop", 1e-14, 1e-14);
  check_values(he, h, "scan, final state", 1e-14, 1e-14);
  check_values(yse, ys, "scan, outputs", 1e-14, 1e-14);
}

TEST_CASE("bodies and branches that return a std::pair work as a two-element std::tuple, eager and in a graph") {
  tensor<double> h0 = tensor<double>{0.1, 0.2, -0.3}, xs = tensor<double>({{1, 2, 3}, {-1, 0.5, 2}});
  auto pair_cell = [](const auto& h, const auto& x) { return std::pair{tanh(h + x), h * x}; };
  auto tuple_cell = [](const auto& h, const auto& x) { return std::tuple{tanh(h + x), h * x}; };
  auto with = [](auto cell) {
    return [cell](const auto& h, const auto& x) {
      auto [last, ys] = scan(cell, h, x);
      auto [picked, other] = cond(sum(last) > 0.0, [](const auto& a) { return std::pair{a, a * 2.0}; },
                                  [](const auto& a) { return std::pair{a * 3.0, a}; }, last);
      return std::pair{picked + other, ys};
    };
  };
  auto [want, want_ys] = with(tuple_cell)(h0, xs);
  auto [eager, eager_ys] = with(pair_cell)(h0, xs);
  check_values(eager, want, "eager scan and cond", 1e-14, 1e-14);
  check_values(eager_ys, want_ys, "eager scan outputs", 1e-14, 1e-14);
  auto [graph, graph_ys] = jit(with(pair_cell))(h0, xs);
  check_values(graph, want, "jit scan and cond", 1e-14, 1e-14);
  check_values(graph_ys, want_ys, "jit scan outputs", 1e-14, 1e-14);
}

TEST_CASE("recompute(body): the same gradients, the residuals computed again in the backward") {
  generator gen(14);
  tensor<double> w = uniform<double>({3, 4}, -0.8, 0.8, gen), u = uniform<double>({4, 4}, -0.8, 0.8, gen);
  tensor<double> h0 = uniform<double>({2, 4}, -1, 1, gen), xs = uniform<double>({6, 2, 3}, -1, 1, gen);
  auto stored = [&](const tensor<double>& wv, const tensor<double>& uv) {
    return jit([wv, uv](const auto& h, const auto& x) {
      auto cell = [wv, uv](const auto& s, const auto& xt) {
        auto next = tanh(matmul(xt, wv) + matmul(s, uv));
        return std::tuple{next, next * 2.0};
      };
      return std::get<0>(scan(cell, h, x));
    });
  };
  auto recomputing = [&](const tensor<double>& wv, const tensor<double>& uv) {
    return jit([wv, uv](const auto& h, const auto& x) {
      auto cell = [wv, uv](const auto& s, const auto& xt) {
        auto next = tanh(matmul(xt, wv) + matmul(s, uv));
        return std::tuple{next, next * 2.0};
      };
      return std::get<0>(scan(recompute(cell), h, x));
    });
  };
  check_gradients([&](inputs v) { return recomputing(v[0], v[1])(v[2], v[3]); }, {w, u, h0, xs}, "scan, recomputed");
  tensor<double> a = w.detach(), b = w.detach();
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  sum(stored(a, u)(h0, xs)).backward();
  sum(recomputing(b, u)(h0, xs)).backward();
  check_values(b.grad(), a.grad(), "recomputed against stored residuals", 1e-14, 1e-14);

  tensor<double> p = tensor<double>{0.5, -1.25, 0.75}, q = p.detach();
  p.set_requires_grad(true);
  q.set_requires_grad(true);
  tensor<double> start = tensor<double>{0.1, 0.2, -0.3};
  sum(jit([p](const auto& h) {
        return fori_loop(0, 5, [p](const auto& i, const auto& s) { return tanh(s * p + i * 0.25); }, h);
      })(start))
      .backward();
  sum(jit([q](const auto& h) {
        return fori_loop(0, 5, recompute([q](const auto& i, const auto& s) { return tanh(s * q + i * 0.25); }), h);
      })(start))
      .backward();
  check_values(q.grad(), p.grad(), "fori_loop, recomputed against stored residuals", 1e-14, 1e-14);
}
