// max_pool2d and avg_pool2d against double loops over kernels, strides and
// padding, on odd sizes and non-contiguous inputs; NaN; gradients by finite
// differences eagerly and in a static graph; bad shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

std::vector<double> pool_reference(const tensor<double>& x, const pool2d_options& o, bool take_max, shape& out_shape) {
  std::int64_t sh = o.stride[0] ? o.stride[0] : o.kernel[0], sw = o.stride[1] ? o.stride[1] : o.kernel[1];
  std::int64_t oh = (x.shape(2) + 2 * o.padding[0] - o.kernel[0]) / sh + 1;
  std::int64_t ow = (x.shape(3) + 2 * o.padding[1] - o.kernel[1]) / sw + 1;
  out_shape = {x.shape(0), x.shape(1), oh, ow};
  std::vector<double> out;
  for (std::int64_t n = 0; n < x.shape(0); ++n)
    for (std::int64_t c = 0; c < x.shape(1); ++c)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t z = 0; z < ow; ++z) {
          double best = -INFINITY, total = 0;
          for (std::int64_t i = 0; i < o.kernel[0]; ++i)
            for (std::int64_t j = 0; j < o.kernel[1]; ++j) {
              std::int64_t h = y * sh - o.padding[0] + i, w = z * sw - o.padding[1] + j;
              if (h < 0 || h >= x.shape(2) || w < 0 || w >= x.shape(3)) continue;
              best = std::max(best, x.at(n, c, h, w));
              total += x.at(n, c, h, w);
            }
          out.push_back(take_max ? best : total / static_cast<double>(o.kernel[0] * o.kernel[1]));
        }
  return out;
}

bool same_bits(const tensor<float>& a, const tensor<float>& b) {
  tensor<float> x = a.contiguous(), y = b.contiguous();
  return x.shape() == y.shape() &&
         std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.numel()) * sizeof(float)) == 0;
}

const std::vector<std::pair<shape, pool2d_options>> cases{
    {{1, 1, 2, 2}, {}},
    {{2, 3, 7, 7}, {.kernel = {3, 3}}},
    {{1, 2, 17, 9}, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}}},
    {{3, 1, 6, 5}, {.kernel = {2, 2}, .stride = {1, 1}}},
};

}  // namespace

TEST_CASE("pooling equals double loops over kernels, strides and padding") {
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto& [xs, o] = cases[k];
    INFO("case " << k);
    tensor<double> x = test::random_tensor<double>(xs, -1, 1, 1 + k);
    for (const auto& [layout_name, view] : test::layouts(x)) {
      // A named copy: clang 14 cannot capture a structured binding (INFO does).
      const std::string& layout = layout_name;
      INFO(layout);
      shape out;
      std::vector<double> want_max = pool_reference(x, o, true, out), want_avg = pool_reference(x, o, false, out);
      test::check_values(max_pool2d(view, o), out, want_max, "max");
      test::check_values(avg_pool2d(view, o), out, want_avg, "avg");
    }
  }
  tensor<float> with_nan = ones<float>({1, 1, 2, 2});
  with_nan.at(0, 0, 1, 0) = NAN;
  CHECK(std::isnan(max_pool2d(with_nan).item()));
}

namespace {

// 2x2 max pooling's winner in double: the first maximum in window order, a
// NaN over any number.
std::int64_t winner_reference(const tensor<double>& x, std::int64_t n, std::int64_t c, std::int64_t y,
                              std::int64_t z) {
  std::int64_t best = 0;
  for (std::int64_t k = 1; k < 4; ++k) {
    double now = x.at(n, c, 2 * y + best / 2, 2 * z + best % 2), next = x.at(n, c, 2 * y + k / 2, 2 * z + k % 2);
    if (next > now || (std::isnan(next) && !std::isnan(now))) best = k;
  }
  return best;
}

template <class T>
void check_two_by_two(const shape& xs, std::uint64_t seed) {
  // Values from a few levels, so that windows hold ties, and some NaN.
  tensor<double> x = test::random_tensor<double>(xs, 0, 4, seed);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = i % 11 == 3 ? NAN : std::floor(x.data()[i]);
  tensor<double> weights = test::random_tensor<double>({xs[0], xs[1], xs[2] / 2, xs[3] / 2}, -1, 1, seed + 1);
  std::vector<double> want_out, want_dx(static_cast<std::size_t>(x.numel()), 0.0);
  for (std::int64_t n = 0; n < xs[0]; ++n)
    for (std::int64_t c = 0; c < xs[1]; ++c)
      for (std::int64_t y = 0; y < xs[2] / 2; ++y)
        for (std::int64_t z = 0; z < xs[3] / 2; ++z) {
          std::int64_t k = winner_reference(x, n, c, y, z), h = 2 * y + k / 2, w = 2 * z + k % 2;
          want_out.push_back(x.at(n, c, h, w));
          want_dx[static_cast<std::size_t>(((n * xs[1] + c) * xs[2] + h) * xs[3] + w)] = weights.at(n, c, y, z);
        }
  for (const auto& [layout_name, view] : test::layouts(x.astype<T>())) {
    const std::string& layout = layout_name;
    INFO(layout);
    tensor<T> input = view.detach();
    input.set_requires_grad();
    tensor<T> out = max_pool2d(input);
    test::check_values(out, weights.shape(), want_out, "2x2 max");
    sum(out * weights.astype<T>()).backward();
    test::check_values(input.grad(), xs, want_dx, "2x2 max gradient");
  }
}

}  // namespace

TEST_CASE("2x2 max pooling picks the first maximum, NaN over numbers, on every row width") {
  // Rows of 1 to 33 outputs: the scalar loop, batches of 2, 4, 8 and 16
  // lanes, and the overlapping last batch of each; odd heights and widths
  // leave a row and a column that no window covers.
  std::uint64_t seed = 50;
  for (std::int64_t out_w : {1, 2, 3, 4, 5, 7, 8, 9, 14, 16, 17, 33})
    for (std::int64_t odd : {0, 1}) {
      shape xs{2, 3, 4 + odd, 2 * out_w + odd};
      INFO("input " << to_string(xs));
      check_two_by_two<float>(xs, ++seed);
      check_two_by_two<double>(xs, ++seed);
    }
}

TEST_CASE("pooling passes finite-difference gradient checks, eagerly and in a static graph") {
  auto graph_max = jit([](auto x, pool2d_options o) { return max_pool2d(x * x, o); });
  auto graph_avg = jit([](auto x, pool2d_options o) { return avg_pool2d(x * x, o); });
  for (std::size_t k = 1; k < cases.size(); ++k) {
    const shape& xs = cases[k].first;
    const pool2d_options& o = cases[k].second;
    INFO("case " << k);
    tensor<double> x = test::random_tensor<double>(xs, 0.1, 2.0, 30 + k);
    test::check_gradients([&](const auto& v) { return max_pool2d(v[0] * v[0], o); }, {x}, "max, eager");
    test::check_gradients([&](const auto& v) { return graph_max(v[0], o); }, {x}, "max, static");
    test::check_gradients([&](const auto& v) { return avg_pool2d(v[0] * v[0], o); }, {x}, "avg, eager");
    test::check_gradients([&](const auto& v) { return graph_avg(v[0], o); }, {x}, "avg, static");
  }
}

TEST_CASE("a static graph pools before relu, with the bits of relu then pooling eagerly") {
  // Windows that are all negative, hold zeros of both signs, ties, positive
  // maxima and NaN; 2x2 pooling, overlapping 3x3 windows with padding.
  auto f = [](auto x, pool2d_options o) { return max_pool2d(relu(x * 2.0f), o); };
  auto graph = jit(f);
  for (const auto& pooling_case : cases) {
    // Not a structured binding: clang 14 does not let INFO's lambda name one.
    const shape& xs = pooling_case.first;
    const pool2d_options& o = pooling_case.second;
    INFO("input " << to_string(xs));
    tensor<float> x = test::random_tensor<double>(xs, -2, 2, 60).astype<float>();
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      float& v = x.data()[i];
      v = i % 13 == 5 ? NAN : i % 5 == 1 ? 0.0f : i % 7 == 2 ? -0.0f : i % 3 == 0 ? -std::fabs(v) : std::round(v);
    }
    tensor<float> weights = test::random_tensor<double>(max_pool2d(x, o).shape(), -1, 1, 61).astype<float>();
    tensor<float> eager_input = x.detach(), graph_input = x.detach();
    eager_input.set_requires_grad();
    graph_input.set_requires_grad();
    tensor<float> eager_out = f(eager_input, o), graph_out = graph(graph_input, o);
    sum(eager_out * weights).backward();
    sum(graph_out * weights).backward();
    CHECK(same_bits(graph_out, eager_out));
    CHECK(same_bits(graph_input.grad(), eager_input.grad()));
  }
  const std::string text = graph.text(zeros<float>({1, 1, 4, 4}), pool2d_options{});
  CHECK(text.find("max_pool2d") < text.find("relu"));
}

TEST_CASE("pooling reports bad shapes") {
  tensor<double> x = zeros<double>({1, 1, 4, 4});
  CHECK_THROWS_WITH_AS(max_pool2d(zeros<double>({4, 4})), doctest::Contains("tandem::max_pool2d: expected an NCHW"),
                       shape_error);
  CHECK_THROWS_AS(avg_pool2d(x, {.kernel = {5, 5}}), shape_error);
  CHECK_THROWS_AS(max_pool2d(x, {.kernel = {2, 2}, .padding = {2, 0}}), shape_error);
  CHECK_THROWS_AS(max_pool2d(x, {.kernel = {0, 2}}), shape_error);
}
