// The transformer's ops in static graphs and captures: shapes while
// tracing (a head split written as eagerly), split, chunk, concat and stack,
// attention, the masks, topk and multinomial, gelu's tanh form and the
// functional norms, each against its eager result and, where it has one,
// with its gradient through the graph.

#include <cmath>

#include "support/check.hpp"
#include "support/gradcheck.hpp"

using namespace tandem;

namespace {

// One generic attention layer written once: heads split with the traced
// shape, attention, heads merged; run eagerly and as a graph.
struct self_attention {
  std::int64_t heads;
  template <class X, class W>
  auto operator()(const X& x, const W& w_qkv) const {
    const std::int64_t b = x.shape(0), t = x.shape(1), d = x.shape(2);
    auto qkv = split(matmul(x, w_qkv), d, -1);
    auto head = [&](const auto& z) { return z.reshape({b, t, heads, d / heads}).transpose(1, 2); };
    auto y = scaled_dot_product_attention(head(qkv[0]), head(qkv[1]), head(qkv[2]), {.causal = true});
    return y.transpose(1, 2).reshape({b, t, d});
  }
};

}  // namespace

TEST_CASE("shape(), dim() and numel() of traced values are those the call gives") {
  tensor<float> x = test::random_tensor<float>({2, 3, 4}, -1, 1, 1), w = test::random_tensor<float>({4, 5}, -1, 1, 2);
  shape seen_sum, seen_product, seen_transposed;
  std::int64_t seen_dim = 0, seen_numel = 0, seen_last = 0;
  auto f = jit([&](auto a, auto b) {
    auto product = matmul(a, b);
    seen_product = product.shape();
    seen_sum = sum(a * 2, 1, true).shape();
    seen_transposed = product.transpose(0, 2).shape();
    seen_dim = (a + 1).dim();
    seen_numel = product.numel();
    seen_last = product.shape(-1);
    return product.reshape({a.shape(0) * a.shape(1), b.shape(1)});
  });
  tensor<float> y = f(x, w);
  CHECK(seen_product == shape{2, 3, 5});
  CHECK(seen_sum == shape{2, 1, 4});
  CHECK(seen_transposed == shape{5, 3, 2});
  CHECK(seen_dim == 3);
  CHECK(seen_numel == 30);
  CHECK(seen_last == 5);
  test::check_values(y, matmul(x, w).reshape({6, 5}), "reshape by traced extents");
  // Other shapes: a new trace, new extents, no stale ones.
  tensor<float> x2 = test::random_tensor<float>({1, 7, 4}, -1, 1, 3);
  test::check_values(f(x2, w), matmul(x2, w).reshape({7, 5}), "second signature");
  CHECK(seen_product == shape{1, 7, 5});
}

TEST_CASE("a shape the trace cannot know is an error that says so") {
  tensor<float> x = test::random_tensor<float>({4}, -1, 1, 4);
  auto f = jit([](auto a) {
    return cond(sum(a) > 0, [](auto v) { return v.reshape({v.shape(0), 1}); }, [](auto v) { return v.reshape({-1, 1}); }, a);
  });
  CHECK_THROWS_WITH_AS(f(x), doctest::Contains("is not known while tracing"), error);
}

TEST_CASE("attention written once runs eagerly, as a graph and under capture, with the same gradients") {
  const self_attention layer{2};
  tensor<double> x = test::random_tensor<double>({2, 5, 4}, -1, 1, 5);
  tensor<double> w = test::random_tensor<double>({4, 12}, -1, 1, 6);
  tensor<double> eager = layer(x, w);
  test::check_values(jit(layer)(x, w), eager, "jit");
  test::check_values(capture([&](const tensor<double>& a, const tensor<double>& b) { return layer(a, b); })(x, w), eager,
                     "capture");
  auto loss = [&](const auto& a, const auto& b) { return sum(square(layer(a, b))); };
  auto [eager_dx, eager_dw] = grad(loss, all_args)(x, w);
  auto [graph_dx, graph_dw] = grad(jit(loss), all_args)(x, w);
  test::check_values(graph_dx, eager_dx, "dx");
  test::check_values(graph_dw, eager_dw, "dw");
  test::check_gradients([&](const std::vector<tensor<double>>& a) { return jit(layer)(a[0], a[1]); }, {x, w},
                        "attention layer through jit");
}

TEST_CASE("split, chunk, concat and stack inside a static graph") {
  tensor<float> x = test::random_tensor<float>({3, 10}, -1, 1, 7), y = test::random_tensor<float>({3, 2}, -1, 1, 8);
  auto f = jit([](auto a, auto b) {
    auto pieces = split(a, 4, 1);                 // 4, 4, 2
    auto sized = split(a, {3, 7}, 1);             // 3, 7
    auto thirds = chunk(a, 3, 1);                 // 4, 4, 2
    auto joined = concat(std::tuple{pieces[2], b, sized[0]}, 1);
    auto stacked = stack(std::tuple{thirds[2], b}, 0);
    return sum(joined, 1) + sum(stacked, {0, 2}) + sum(sized[1] * pieces[0].take(1, 0, 1), 1);
  });
  auto pieces = split(x, 4, 1);
  auto sized = split(x, {3, 7}, 1);
  auto thirds = chunk(x, 3, 1);
  tensor<float> want = sum(concat(std::tuple{pieces[2], y, sized[0]}, 1), 1) + sum(stack(std::tuple{thirds[2], y}, 0), {0, 2}) +
                       sum(sized[1] * pieces[0].take(1, 0, 1), 1);
  test::check_values(f(x, y), want, "pieces joined");
  CHECK(thirds.size() == 3);
  CHECK(thirds[2].shape() == shape{3, 2});
  auto bad = jit([](auto a) { return split(a, {3, 3}, 1)[0]; });
  CHECK_THROWS_WITH_AS(bad(x), doctest::Contains("do not cut axis"), shape_error);
  test::check_gradients(
      [](const std::vector<tensor<double>>& a) {
        return jit([](auto u, auto v) {
          auto p = chunk(u, 2, 0);
          return concat(std::tuple{p[1], v * p[0]}, 1);
        })(a[0], a[1]);
      },
      {test::random_tensor<double>({4, 3}, -1, 1, 9), test::random_tensor<double>({2, 3}, -1, 1, 10)}, "concat of chunks");
}

TEST_CASE("tril, triu, masked_fill, gelu's tanh form and the norms in a graph match eager") {
  tensor<double> x = test::random_tensor<double>({2, 5, 6}, -2, 2, 11);
  tensor<double> w = test::random_tensor<double>({6}, 0.5, 1.5, 12), b = test::random_tensor<double>({6}, -1, 1, 13);
  tensor<bool> mask = test::random_tensor<bool>({5, 1}, 0, 1, 14);
  auto f = [&](const auto& a, const auto& weight, const auto& bias) {
    auto masked = masked_fill(tril(a, 1) + triu(a, -1), mask, -3.0);
    return layer_norm(gelu(masked, approximate_tanh), {6}, weight, bias) + rms_norm(masked, {5, 6}, 2.0 * a);
  };
  test::check_values(jit(f)(x, w, b), f(x, w, b), "jit", 1e-12, 1e-12);
  test::check_gradients([&](const std::vector<tensor<double>>& a) { return jit(f)(a[0], a[1], a[2]); }, {x, w, b},
                        "through jit");
  test::check_gradients([&](const std::vector<tensor<double>>& a) { return f(a[0], a[1], a[2]); }, {x, w, b}, "eager");
}

TEST_CASE("topk and multinomial in a graph") {
  tensor<float> x = test::random_tensor<float>({4, 9}, -1, 1, 15);
  auto top_values = jit([](auto a) { return topk(a, 3, 1).first * 2; });
  auto top_indices = jit([](auto a) { return topk(a, 3, 1, false).second; });
  test::check_values(top_values(x), topk(x, 3, 1).first * 2, "topk values");
  CHECK(top_indices(x).to_vector() == topk(x, 3, 1, false).second.to_vector());
  generator g1(5), g2(5);
  tensor<float> p = softmax(x, 1);
  auto draw = jit([&](auto a) { return multinomial(a, 2, g1); });
  CHECK(draw(p).to_vector() == multinomial(p, 2, g2).to_vector());
  CHECK(draw(p).to_vector() == multinomial(p, 2, g2).to_vector());
  CHECK(draw(p).shape() == shape{4, 2});
}
