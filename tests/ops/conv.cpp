// conv2d against a direct double loop over strides, padding, dilation and
// groups, on odd sizes and non-contiguous inputs, with and without a bias;
// the same bits on any thread count; gradients by finite
// differences eagerly and in a static graph; bad shapes; and a clear error
// for a second derivative.
#include <doctest/doctest.h>

#include <string>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

std::vector<double> conv_reference(const tensor<double>& x, const tensor<double>& w, const conv2d_options& o,
                                   shape& out_shape) {
  std::int64_t n = x.shape(0), c = x.shape(1), h = x.shape(2), wd = x.shape(3);
  std::int64_t oc = w.shape(0), cg = w.shape(1), kh = w.shape(2), kw = w.shape(3);
  std::int64_t oh = (h + 2 * o.padding[0] - o.dilation[0] * (kh - 1) - 1) / o.stride[0] + 1;
  std::int64_t ow = (wd + 2 * o.padding[1] - o.dilation[1] * (kw - 1) - 1) / o.stride[1] + 1;
  out_shape = {n, oc, oh, ow};
  std::int64_t per_group = oc / o.groups;
  std::vector<double> out;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t f = 0; f < oc; ++f)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t z = 0; z < ow; ++z) {
          double acc = 0;
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t i = 0; i < kh; ++i)
              for (std::int64_t j = 0; j < kw; ++j) {
                std::int64_t row = y * o.stride[0] - o.padding[0] + i * o.dilation[0];
                std::int64_t col = z * o.stride[1] - o.padding[1] + j * o.dilation[1];
                if (row < 0 || row >= h || col < 0 || col >= wd) continue;
                acc += x.at(b, (f / per_group) * cg + ci, row, col) * w.at(f, ci, i, j);
              }
          out.push_back(acc);
        }
  (void)c;
  return out;
}

struct conv_case {
  shape x, w;
  conv2d_options o;
};

const std::vector<conv_case> cases{
    {{1, 1, 1, 1}, {1, 1, 1, 1}, {}},
    {{2, 3, 7, 7}, {4, 3, 3, 3}, {}},
    {{2, 3, 7, 9}, {5, 3, 3, 2}, {.stride = {2, 1}, .padding = {1, 0}}},
    {{1, 4, 17, 17}, {4, 2, 3, 3}, {.stride = {2, 2}, .padding = {2, 1}, .dilation = {2, 1}, .groups = 2}},
    {{3, 4, 6, 6}, {4, 1, 3, 3}, {.padding = {1, 1}, .groups = 4}},
    {{2, 2, 5, 5}, {3, 2, 5, 5}, {.padding = {2, 2}}},
    // Rows one stride apart in the padded image: dilated, and long enough
    // for full AVX-512 batches and an overlapping last one.
    {{2, 2, 9, 11}, {3, 2, 3, 2}, {.padding = {2, 1}, .dilation = {2, 3}}},
    {{1, 2, 4, 37}, {2, 2, 3, 3}, {.padding = {1, 1}}},
};

}  // namespace

TEST_CASE("conv2d equals a direct double loop over strides, padding, dilation and groups") {
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto& [xs, ws, o] = cases[k];
    INFO("case " << k);
    tensor<double> x = test::random_tensor<double>(xs, -1, 1, 1 + k), w = test::random_tensor<double>(ws, -1, 1, 20 + k);
    shape out;
    std::vector<double> want = conv_reference(x, w, o, out);
    for (const auto& [layout_name, view] : test::layouts(x)) {
      // A named reference: clang 14 cannot capture a structured binding (INFO does).
      const std::string& layout = layout_name;
      INFO(layout);
      test::check_values(conv2d(view, w, o), out, want, "conv2d");
    }
    tensor<float> xf = x.astype<float>(), wf = w.astype<float>();
    test::check_values(conv2d(xf, wf, o), out, want, "float32", 1e-5, 1e-5);

    tensor<double> b = test::random_tensor<double>({ws[0]}, -1, 1, 80 + k);
    std::vector<double> with_bias = want;
    std::int64_t plane = out[2] * out[3];
    for (std::size_t e = 0; e < with_bias.size(); ++e)
      with_bias[e] += b.at((static_cast<std::int64_t>(e) / plane) % ws[0]);
    test::check_values(conv2d(x, w, b, o), out, with_bias, "with a bias");
    test::check_values(conv2d(x, w, tensor<double>(shape{0}), o), out, want, "with an empty bias");
  }
}

TEST_CASE("conv2d is the same for any thread count, and on a batch larger than a chunk of the kernel's gradient") {
  tensor<double> x = test::random_tensor<double>({19, 3, 9, 8}, -1, 1, 5), w = test::random_tensor<double>({4, 3, 3, 3}, -1, 1, 6);
  shape out;
  std::vector<double> want = conv_reference(x, w, {.padding = {1, 1}}, out);
  auto run = [&] {
    tensor<double> xg = x.clone(), wg = w.clone();
    xg.set_requires_grad(true);
    wg.set_requires_grad(true);
    tensor<double> y = conv2d(xg, wg, {.padding = {1, 1}});
    sum(y * y).backward();
    return std::tuple{y.detach(), xg.grad(), wg.grad()};
  };
  set_num_threads(1);
  auto [y1, dx1, dw1] = run();
  set_num_threads(3);
  auto [y3, dx3, dw3] = run();
  set_num_threads(0);
  test::check_values(y1, out, want, "one thread");
  test::check_values(y3, y1, "three threads", 0, 0);
  test::check_values(dx3, dx1, "dx, three threads", 0, 0);
  test::check_values(dw3, dw1, "dw, three threads", 0, 0);
}

TEST_CASE("conv2d passes finite-difference gradient checks, eagerly and in a static graph") {
  auto graph = jit([](auto x, auto w, conv2d_options o) { return tanh(conv2d(x, w, o)); });
  auto biased = jit([](auto x, auto w, auto b, conv2d_options o) { return tanh(conv2d(x, w, b, o)); });
  for (std::size_t k = 1; k < cases.size(); ++k) {
    const auto& [xs, ws, options] = cases[k];
    // A named reference: clang 14 cannot capture a structured binding.
    const conv2d_options& o = options;
    INFO("case " << k);
    tensor<double> x = test::away_from_zero(xs, 40 + k, 0.1, 1.0), w = test::away_from_zero(ws, 60 + k, 0.1, 1.0);
    test::check_gradients([&](const auto& v) { return tanh(conv2d(v[0], v[1], o)); }, {x, w}, "eager");
    test::check_gradients([&](const auto& v) { return graph(v[0], v[1], o); }, {x, w}, "static");
    tensor<double> b = test::away_from_zero({ws[0]}, 70 + k, 0.1, 1.0);
    test::check_gradients([&](const auto& v) { return tanh(conv2d(v[0], v[1], v[2], o)); }, {x, w, b}, "eager, bias");
    test::check_gradients([&](const auto& v) { return biased(v[0], v[1], v[2], o); }, {x, w, b}, "static, bias");
  }
}

TEST_CASE("conv2d reports bad shapes and refuses a second derivative") {
  tensor<double> x = zeros<double>({1, 4, 5, 5});
  CHECK_THROWS_WITH_AS(conv2d(x, zeros<double>({2, 3, 3, 3})), doctest::Contains("tandem::conv2d"), shape_error);
  CHECK_THROWS_WITH_AS(conv2d(x, zeros<double>({3, 2, 3, 3}), {.groups = 2}), doctest::Contains("groups (2)"),
                       shape_error);
  CHECK_THROWS_WITH_AS(conv2d(x, zeros<double>({2, 4, 7, 7})), doctest::Contains("larger than the padded input"),
                       shape_error);
  CHECK_THROWS_AS(conv2d(x, zeros<double>({2, 4, 3, 3}), {.stride = {0, 1}}), shape_error);
  CHECK_THROWS_AS(conv2d(zeros<double>({4, 5, 5}), zeros<double>({2, 4, 3, 3})), shape_error);
  CHECK_THROWS_WITH_AS(conv2d(x, zeros<double>({2, 4, 3, 3}), zeros<double>({3})),
                       "tandem::conv2d: the bias must have shape [2] (one per output channel) or no elements, not [3]",
                       shape_error);

  tensor<double> input = test::random_tensor<double>({1, 1, 4, 4}, -1, 1, 3);
  tensor<double> kernel = test::random_tensor<double>({1, 1, 2, 2}, -1, 1, 4);
  kernel.set_requires_grad(true);
  auto first = grad([](auto a, auto k) { return sum(conv2d(a, k)); }, args<1>);
  CHECK_NOTHROW(first(input, kernel));
  CHECK_THROWS_WITH_AS(grad([&](auto a) { return sum(square(first(a, kernel))); })(input),
                       doctest::Contains("has no derivative rule"), error);
}
