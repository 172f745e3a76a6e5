// scaled_dot_product_attention: the fused CPU op against a double reference
// loop (block tails, causal with tq != tk, masks, dropout, broadcast heads,
// strided views), its gradients against finite differences, the composed
// route a second derivative takes, and its errors.

#include <cmath>
#include <limits>

#include "support/check.hpp"
#include "support/gradcheck.hpp"

using namespace tandem;

namespace {

struct attention_case {
  std::int64_t batch, tq, tk, d, dv;
  bool causal;
};

// out[n, i, :] = sum_j p[i, j] v[j, :] in double, p the masked softmax of
// q k^T * scale, with dropout's draws as the op makes them.
std::vector<double> reference_attention(const tensor<double>& q, const tensor<double>& k, const tensor<double>& v,
                                        const attention_options& o, const tensor<bool>* mask) {
  const std::int64_t heads = q.shape(0), tq = q.shape(1), tk = k.shape(1), d = q.shape(2), dv = v.shape(2);
  const double scale = o.scale ? *o.scale : 1 / std::sqrt(double(d));
  const std::uint64_t threshold = static_cast<std::uint64_t>(o.dropout * 18446744073709551616.0);
  std::vector<double> out;
  for (std::int64_t n = 0; n < heads; ++n)
    for (std::int64_t i = 0; i < tq; ++i) {
      std::vector<double> s(static_cast<std::size_t>(tk), -INFINITY);
      double peak = -INFINITY;
      for (std::int64_t j = 0; j < tk; ++j) {
        const bool seen = (!o.causal || j <= i + tk - tq) && (!mask || mask->at(n, i, j));
        if (!seen) continue;
        double dot = 0;
        for (std::int64_t e = 0; e < d; ++e) dot += q.at(n, i, e) * k.at(n, j, e);
        s[j] = dot * scale;
        peak = std::max(peak, s[j]);
      }
      double total = 0;
      for (double& x : s) total += x = std::exp(x - peak);
      for (std::int64_t e = 0; e < dv; ++e) {
        double acc = 0;
        for (std::int64_t j = 0; j < tk; ++j) {
          double p = s[j] / total;
          if (o.dropout > 0)
            p = tandem::detail::attention_keeps(o.seed, n, i, j, threshold) ? p / (1 - o.dropout) : 0;
          acc += p * v.at(n, j, e);
        }
        out.push_back(peak == -INFINITY ? NAN : acc);
      }
    }
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("scaled_dot_product_attention matches a double loop across block tails", T, float, double) {
  const std::vector<attention_case> cases{{1, 1, 1, 1, 1, false},   {2, 7, 7, 5, 3, true},    {3, 17, 33, 8, 8, false},
                                          {1, 70, 70, 16, 16, true}, {2, 3, 130, 7, 9, true}, {1, 130, 65, 32, 32, false},
                                          {2, 0, 5, 4, 4, false},    {1, 65, 129, 33, 17, true}};
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    INFO("batch " << c.batch << " tq " << c.tq << " tk " << c.tk << " d " << c.d << " dv " << c.dv << " causal " << c.causal);
    tensor<double> q = test::random_tensor<double>({c.batch, c.tq, c.d}, -2, 2, seed++);
    tensor<double> k = test::random_tensor<double>({c.batch, c.tk, c.d}, -2, 2, seed++);
    tensor<double> v = test::random_tensor<double>({c.batch, c.tk, c.dv}, -2, 2, seed++);
    attention_options o{.causal = c.causal};
    const auto want = reference_attention(q, k, v, o, nullptr);
    tensor<T> got = scaled_dot_product_attention(q.astype<T>(), k.astype<T>(), v.astype<T>(), o);
    test::check_values(got, {c.batch, c.tq, c.dv}, want, "attention", 1e-5, 1e-5);
  }
}

TEST_CASE("scaled_dot_product_attention with a mask, a scale, dropout and broadcast heads") {
  const std::int64_t b = 2, h = 3, t = 19, d = 6;
  tensor<double> q = test::random_tensor<double>({b, h, t, d}, -1, 1, 11);
  // One head of keys and values for all query heads (broadcast), and the
  // queries as a transposed view of [b, t, h, d], as a model splits heads.
  tensor<double> k = test::random_tensor<double>({b, 1, t, d}, -1, 1, 12);
  tensor<double> v = test::random_tensor<double>({b, 1, t, d}, -1, 1, 13);
  tensor<double> q_view = q.transpose(1, 2).contiguous().transpose(1, 2);
  REQUIRE_FALSE(q_view.is_contiguous());
  tensor<bool> mask = test::random_tensor<bool>({b, 1, t, t}, 0, 1, 14);
  for (std::int64_t i = 0; i < t; ++i) mask.at(0, 0, i, 0) = true;
  attention_options o{.causal = true, .mask = mask, .scale = 0.3, .dropout = 0.25, .seed = 7};
  tensor<double> got = scaled_dot_product_attention(q_view, k, v, o);
  tensor<bool> full_mask = mask.expand({b, h, t, t}).contiguous().reshape({b * h, t, t});
  const auto want = reference_attention(q.reshape({b * h, t, d}), k.expand({b, h, t, d}).contiguous().reshape({b * h, t, d}),
                                        v.expand({b, h, t, d}).contiguous().reshape({b * h, t, d}), o, &full_mask);
  test::check_values(got.reshape({b * h, t, d}), {b * h, t, d}, want, "masked attention", 1e-12, 1e-12);
}

TEST_CASE("scaled_dot_product_attention: gradients against finite differences") {
  struct grad_case {
    attention_options options;
    std::int64_t tq, tk;
    const char* what;
  };
  tensor<bool> mask = test::random_tensor<bool>({5, 70}, 0, 1, 3);
  for (std::int64_t i = 0; i < 5; ++i) mask.at(i, 69) = true;
  const std::vector<grad_case> cases{{{}, 5, 70, "plain"},
                                     {{.causal = true}, 70, 70, "causal across blocks"},
                                     {{.causal = true}, 5, 70, "causal, fewer queries"},
                                     {{.mask = mask, .scale = 0.7}, 5, 70, "mask and scale"},
                                     {{.dropout = 0.3, .seed = 4}, 5, 70, "dropout"}};
  for (const auto& c : cases) {
    const std::int64_t d = 3;
    auto f = [&](const std::vector<tensor<double>>& x) { return scaled_dot_product_attention(x[0], x[1], x[2], c.options); };
    test::check_gradients(f,
                          {test::random_tensor<double>({2, c.tq, d}, -1, 1, 21), test::random_tensor<double>({1, c.tk, d}, -1, 1, 22),
                           test::random_tensor<double>({2, c.tk, 2}, -1, 1, 23)},
                          c.what);
  }
}

TEST_CASE("scaled_dot_product_attention: heads split by a transpose, merged back by a view") {
  const std::int64_t b = 2, t = 67, h = 2, d = 3;
  auto split_heads = [&](const tensor<double>& x) { return x.reshape({b, t, h, d}).transpose(1, 2); };
  auto attend = [&](const std::vector<tensor<double>>& x) {
    tensor<double> y = scaled_dot_product_attention(split_heads(x[0]), split_heads(x[1]), split_heads(x[2]),
                                                    {.causal = true});
    return y.transpose(1, 2).reshape({b, t, h * d});
  };
  std::vector<tensor<double>> x;
  for (std::uint64_t seed : {31, 32, 33}) x.push_back(test::random_tensor<double>({b, t, h * d}, -1, 1, seed));
  // The heads are read in place and the result laid out as [b, t, h, d]:
  // merging the heads back is a view of it.
  tensor<double> y = scaled_dot_product_attention(split_heads(x[0]), split_heads(x[1]), split_heads(x[2]),
                                                  {.causal = true});
  CHECK(y.transpose(1, 2).is_contiguous());
  const auto want = reference_attention(split_heads(x[0]).contiguous().reshape({b * h, t, d}),
                                        split_heads(x[1]).contiguous().reshape({b * h, t, d}),
                                        split_heads(x[2]).contiguous().reshape({b * h, t, d}), {.causal = true}, nullptr);
  test::check_values(y.contiguous().reshape({b * h, t, d}), {b * h, t, d}, want, "split heads", 1e-12, 1e-12);
  test::check_gradients(attend, x, "heads split by a transpose");
}

TEST_CASE("scaled_dot_product_attention: a second derivative takes the composed route") {
  tensor<double> q = test::random_tensor<double>({2, 4, 3}, -1, 1, 31);
  tensor<double> k = test::random_tensor<double>({2, 4, 3}, -1, 1, 32);
  tensor<double> v = test::random_tensor<double>({2, 4, 3}, -1, 1, 33);
  auto first = [&](const std::vector<tensor<double>>& x) {
    return grad([&](const tensor<double>& qq) {
      return sum(square(scaled_dot_product_attention(qq, x[1], x[2], {.causal = true})));
    })(x[0]);
  };
  test::check_gradients(first, {q, k, v}, "d/dk, d/dv of d/dq");
}

TEST_CASE("scaled_dot_product_attention refuses operands that do not fit") {
  tensor<float> q = zeros<float>({2, 4, 8}), k = zeros<float>({2, 5, 8}), v = zeros<float>({2, 5, 3});
  CHECK_THROWS_AS(scaled_dot_product_attention(q, zeros<float>({2, 5, 7}), v), shape_error);
  CHECK_THROWS_AS(scaled_dot_product_attention(q, k, zeros<float>({2, 4, 3})), shape_error);
  CHECK_THROWS_AS(scaled_dot_product_attention(zeros<float>({3, 4, 8}), k, v), shape_error);
  CHECK_THROWS_AS(scaled_dot_product_attention(zeros<float>({8}), k, v), shape_error);
  CHECK_THROWS_AS(scaled_dot_product_attention(q, k, v, {.mask = zeros<bool>({4, 6})}), shape_error);
  CHECK_THROWS_AS(scaled_dot_product_attention(q, k, v, {.dropout = 1}), value_error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, zeros<float>({2, 5, 7}), v),
                       doctest::Contains("scaled_dot_product_attention"), shape_error);
}

TEST_CASE("scaled_dot_product_attention: a query that sees no key gives NaN and no gradient") {
  tensor<bool> mask = ones<bool>({3, 4});
  for (std::int64_t j = 0; j < 4; ++j) mask.at(1, j) = false;
  tensor<double> q = test::random_tensor<double>({3, 2}, -1, 1, 41), k = test::random_tensor<double>({4, 2}, -1, 1, 42);
  tensor<double> v = test::random_tensor<double>({4, 2}, -1, 1, 43);
  q.set_requires_grad(true);
  tensor<double> out = scaled_dot_product_attention(q, k, v, {.mask = mask});
  CHECK(std::isnan(out.at(1, 0)));
  CHECK_FALSE(std::isnan(out.at(0, 0)));
  sum(where(isnan(out), 0.0, out)).backward();
  CHECK(q.grad().at(1, 0) == 0);
  CHECK(q.grad().at(1, 1) == 0);
}
