// Direct convolution (kernels/cpu/conv_direct.hpp), the path of every
// stride-1 convolution with four or more channels to compute, and of its
// gradients: against double loops, in float and double, on output channels
// that fill a tile of each shape (8 x 3 and 4 x 6 on AVX-512, 4 x 3 below
// it) or leave it one short, and fewer than four (the columns path); rows
// and widths that end a tile or a batch early; padding up to and past
// (k - 1) * dilation (where the input gradient takes the columns path),
// dilation and groups.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/check.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

struct direct_case {
  shape x, w;
  conv2d_options o;
};

std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t pad, std::int64_t dilation) {
  return in + 2 * pad - dilation * (k - 1);
}

// y, dL/dx and dL/dw for L = sum(y * weights), in double.
struct reference {
  std::vector<double> y, dx, dw;
};

reference direct_reference(const tensor<double>& x, const tensor<double>& w, const tensor<double>& weights,
                           const conv2d_options& o) {
  const std::int64_t n = x.shape(0), c = x.shape(1), h = x.shape(2), wd = x.shape(3);
  const std::int64_t oc = w.shape(0), cg = w.shape(1), kh = w.shape(2), kw = w.shape(3);
  const std::int64_t oh = out_size(h, kh, o.padding[0], o.dilation[0]);
  const std::int64_t ow = out_size(wd, kw, o.padding[1], o.dilation[1]);
  const std::int64_t per_group = oc / o.groups;
  reference r{std::vector<double>(static_cast<std::size_t>(n * oc * oh * ow), 0.0),
              std::vector<double>(static_cast<std::size_t>(n * c * h * wd), 0.0),
              std::vector<double>(static_cast<std::size_t>(w.numel()), 0.0)};
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t f = 0; f < oc; ++f)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t z = 0; z < ow; ++z) {
          const std::size_t at = static_cast<std::size_t>(((b * oc + f) * oh + y) * ow + z);
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t i = 0; i < kh; ++i)
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t row = y - o.padding[0] + i * o.dilation[0];
                const std::int64_t col = z - o.padding[1] + j * o.dilation[1];
                if (row < 0 || row >= h || col < 0 || col >= wd) continue;
                const std::int64_t channel = (f / per_group) * cg + ci;
                r.y[at] += x.at(b, channel, row, col) * w.at(f, ci, i, j);
                r.dx[static_cast<std::size_t>(((b * c + channel) * h + row) * wd + col)] +=
                    weights.data()[at] * w.at(f, ci, i, j);
                r.dw[static_cast<std::size_t>(((f * cg + ci) * kh + i) * kw + j)] +=
                    weights.data()[at] * x.at(b, channel, row, col);
              }
        }
  return r;
}

const std::vector<direct_case> direct_cases{
    // Output channels around each tile's: 1, 2, 3, 4, 5, 7, 8, 9, 17.
    {{2, 3, 7, 7}, {1, 3, 3, 3}, {.padding = {1, 1}}},
    {{1, 2, 9, 17}, {2, 2, 3, 3}, {.padding = {1, 1}}},
    {{1, 2, 5, 16}, {3, 2, 3, 3}, {.padding = {1, 1}}},
    {{2, 1, 4, 15}, {4, 1, 3, 3}, {.padding = {1, 1}}},
    {{1, 4, 8, 33}, {5, 4, 3, 3}, {.padding = {1, 1}}},
    {{1, 3, 11, 14}, {7, 3, 3, 3}, {.padding = {1, 1}}},
    {{1, 2, 14, 14}, {8, 2, 3, 3}, {.padding = {1, 1}}},
    {{1, 2, 6, 28}, {9, 2, 3, 3}, {.padding = {1, 1}}},
    {{1, 16, 7, 7}, {17, 16, 3, 3}, {.padding = {1, 1}}},
    // One row, one pixel, no padding, a 1x1 kernel.
    {{2, 3, 1, 1}, {4, 3, 1, 1}, {}},
    {{1, 2, 3, 40}, {6, 2, 3, 1}, {}},
    // Padding past (k - 1) * dilation: the input gradient by columns.
    {{1, 2, 5, 6}, {3, 2, 2, 2}, {.padding = {2, 1}}},
    // Wide and dilated kernels, groups.
    {{1, 2, 9, 19}, {3, 2, 5, 3}, {.padding = {2, 1}, .dilation = {1, 2}}},
    {{2, 4, 6, 10}, {6, 2, 3, 3}, {.padding = {1, 1}, .groups = 2}},
    {{1, 6, 5, 9}, {6, 1, 3, 3}, {.padding = {1, 1}, .groups = 6}},
};

template <class T>
void check_direct_case(const direct_case& c, std::uint64_t seed, double rel, double abs) {
  const tensor<double> x = test::random_tensor<double>(c.x, -1, 1, seed);
  const tensor<double> w = test::random_tensor<double>(c.w, -1, 1, seed + 1);
  const tensor<double> bias = test::random_tensor<double>({c.w[0]}, -1, 1, seed + 2);
  tensor<T> xt = x.astype<T>(), wt = w.astype<T>();
  xt.set_requires_grad(true);
  wt.set_requires_grad(true);
  tensor<T> y = conv2d(xt, wt, bias.astype<T>(), c.o);
  const tensor<double> weights = test::random_tensor<double>(y.shape(), -1, 1, seed + 3);
  sum(y * weights.astype<T>()).backward();
  reference want = direct_reference(x, w, weights, c.o);
  const std::int64_t plane = y.shape(2) * y.shape(3);
  for (std::size_t e = 0; e < want.y.size(); ++e)
    want.y[e] += bias.data()[(static_cast<std::int64_t>(e) / plane) % c.w[0]];
  test::check_values(y.detach(), y.shape(), want.y, "y", rel, abs);
  test::check_values(xt.grad(), c.x, want.dx, "dx", rel, abs);
  test::check_values(wt.grad(), c.w, want.dw, "dw", rel, abs);
}

}  // namespace

TEST_CASE("stride-1 convolutions and both their gradients equal double loops on every tile's edges") {
  for (std::size_t k = 0; k < direct_cases.size(); ++k) {
    INFO("case " << k);
    check_direct_case<double>(direct_cases[k], 100 + 4 * k, 1e-12, 1e-12);
    check_direct_case<float>(direct_cases[k], 100 + 4 * k, 1e-5, 1e-5);
  }
}

TEST_CASE("a stride-1 convolution gives the same bits for any thread count") {
  const tensor<float> x = test::random_tensor<float>({19, 16, 14, 14}, -1, 1, 7);
  const tensor<float> w = test::random_tensor<float>({32, 16, 3, 3}, -1, 1, 8);
  auto run = [&] {
    tensor<float> xg = x.clone(), wg = w.clone();
    xg.set_requires_grad(true);
    wg.set_requires_grad(true);
    tensor<float> y = conv2d(xg, wg, {.padding = {1, 1}});
    sum(y * y).backward();
    return std::tuple{y.detach(), xg.grad(), wg.grad()};
  };
  set_num_threads(1);
  auto [y1, dx1, dw1] = run();
  set_num_threads(2);
  auto [y2, dx2, dw2] = run();
  set_num_threads(0);
  test::check_values(y2, y1, "y, two threads", 0, 0);
  test::check_values(dx2, dx1, "dx, two threads", 0, 0);
  test::check_values(dw2, dw1, "dw, two threads", 0, 0);
}
