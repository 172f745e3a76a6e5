// A matmul running the elementwise group that reads it inside the GEMM, on
// each finished block of the product (graph/execute/epilogue.hpp,
// multiply_then_group): structure, values against a double reference loop
// on tail sizes and multi-block shapes, views and broadcasting, the cases
// that fall back to a separate loop, allocations, and gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

template <class Graph, class... A>
using traced = decltype(std::declval<Graph>().trace(std::declval<A>()...));

auto dense_relu = [](auto x, auto w, auto b) { return relu(matmul(x, w) + b); };

// relu(x w + b) in double, b broadcast along rows.
std::vector<double> dense_relu_reference(const tensor<float>& x, const tensor<float>& w, const tensor<float>& b) {
  std::int64_t m = x.shape(0), k = x.shape(1), n = w.shape(1);
  std::vector<double> out(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = b.at(j);
      for (std::int64_t p = 0; p < k; ++p) acc += static_cast<double>(x.at(i, p)) * w.at(p, j);
      out[static_cast<std::size_t>(i * n + j)] = std::max(acc, 0.0);
    }
  return out;
}

template <class F, class... A>
detail::run_counters counters_of(F f, const A&... a) {
  auto root = f.trace(a...);
  using exec = detail::executor<decltype(root), std::tuple<const A&...>, false>;
  std::tuple<const A&...> inputs{a...};
  exec run(inputs, false);
  detail::apply_operands([&](const auto&... out) { (run.value(out), ...); }, root.children);
  return run.counters();
}

}  // namespace

TEST_CASE("a matmul read only by an elementwise group runs that group as its epilogue") {
  using F = decltype(jit(dense_relu));
  using dense = detail::graph_structure<traced<F, tensor<float>, tensor<float>, tensor<float>>>;
  static_assert(dense::fusion_groups == 2 && dense::epilogues == 1 && dense::buffers == 0,
                "the product is written into the group's output and updated in place");

  auto positive = jit([](auto x, auto w) { return matmul(x, w) > 0.0f; });
  using compared = detail::graph_structure<traced<decltype(positive), tensor<float>, tensor<float>>>;
  static_assert(compared::epilogues == 1 && compared::buffers == 1, "a bool group cannot hold the float product");

  auto both = jit([](auto x, auto w) {
    auto p = matmul(x, w);
    return std::tuple{p, exp(p)};
  });
  using read_twice = detail::graph_structure<traced<decltype(both), tensor<float>, tensor<float>>>;
  static_assert(read_twice::epilogues == 0, "a product that is also an output is not an epilogue's");

  auto summed = jit([](auto x, auto w) { return sum(tanh(matmul(x, w))); });
  using reduced = detail::graph_structure<traced<decltype(summed), tensor<float>, tensor<float>>>;
  static_assert(reduced::epilogues == 0, "a group summed in its reduction's loop writes no block to run on");

  auto ints = jit([](auto x, auto w) { return matmul(x, w) + 1; });
  using integers = detail::graph_structure<traced<decltype(ints), tensor<std::int32_t>, tensor<std::int32_t>>>;
  static_assert(integers::epilogues == 0, "integer products run the plain kernel");
}

TEST_CASE("matmul epilogues equal a double reference loop on tail sizes and multi-block shapes") {
  auto f = jit(dense_relu);
  std::vector<std::array<std::int64_t, 3>> sizes{{0, 3, 4},   {3, 0, 4},    {1, 1, 1},    {7, 17, 1},  {17, 7, 33},
                                                 {1, 1000, 3}, {200, 300, 70}, {130, 600, 10}, {3, 5, 4100}};
  for (const auto& mkn : sizes) {
    std::int64_t m = mkn[0], k = mkn[1], n = mkn[2];
    INFO("m, k, n = " << m << ", " << k << ", " << n);
    tensor<float> x = test::random_tensor<float>({m, k}, -1, 1, 1), w = test::random_tensor<float>({k, n}, -1, 1, 2);
    tensor<float> b = test::random_tensor<float>({n}, -1, 1, 3);
    tensor<float> got = f(x, w, b);
    test::check_values(got, {m, n}, dense_relu_reference(x, w, b), "relu(x w + b)", 1e-4, 1e-4);
    test::check_values(got, dense_relu(x, w, b), "the epilogue equals eager");
    CHECK(counters_of(f, x, w, b).matmul_epilogues == 1);
  }
}

TEST_CASE("matmul epilogues read views and broadcast operands") {
  // 4100 columns: blocks narrower than the product (more than one panel of
  // B's columns, and the columns split among threads), run row by row.
  for (std::int64_t n : {20, 4100}) {
    tensor<float> x = test::random_tensor<float>({9, 12}, -1, 1, 4), w = test::random_tensor<float>({12, n}, -1, 1, 5);
    tensor<float> column = test::random_tensor<float>({9, 1}, -1, 1, 6), full = test::random_tensor<float>({9, n}, -1, 1, 7);
    auto g = jit([](auto a, auto v, auto c, auto d) { return sigmoid(matmul(a, v) * c - d * 0.5f); });
    auto eager = [](auto a, auto v, auto c, auto d) { return sigmoid(matmul(a, v) * c - d * 0.5f); };
    for (const auto& [layout_name, xs] : test::layouts(x)) {
      // A named copy: clang 14 cannot capture a structured binding (INFO does).
      const std::string& layout = layout_name;
      INFO("n " << n << ", x " << layout);
      tensor<float> wt = w.transpose(0, 1).contiguous().transpose(0, 1);
      test::check_values(g(xs, w, column, full), eager(xs, w, column, full), "contiguous w");
      test::check_values(g(xs, wt, column, full), eager(xs, wt, column, full), "transposed w");
      test::check_values(g(xs, w, full.take(1, 0, 1), full), eager(xs, w, full.take(1, 0, 1), full),
                         "a strided column");
    }
  }
}

TEST_CASE("a group that does not have the product's shape runs after the plain kernel") {
  tensor<float> x = test::random_tensor<float>({4, 5}, -1, 1, 8), w = test::random_tensor<float>({5, 6}, -1, 1, 9);
  tensor<float> stack = test::random_tensor<float>({3, 4, 6}, -1, 1, 10);
  auto widened = jit([](auto a, auto v, auto s) { return exp(matmul(a, v) + s); });
  test::check_values(widened(x, w, stack), exp(matmul(x, w) + stack), "a product broadcast to a stack");
  CHECK(counters_of(widened, x, w, stack).matmul_epilogues == 0);

  tensor<float> batch = test::random_tensor<float>({3, 4, 5}, -1, 1, 11), vector = test::random_tensor<float>({5}, -1, 1, 12);
  auto any_rank = jit([](auto a, auto v) { return tanh(matmul(a, v)) * 2.0f; });
  const tensor<float> across = batch.transpose(0, 1).contiguous().transpose(0, 1);
  test::check_values(any_rank(across, w), tanh(matmul(across, w)) * 2.0f, "a batch whose rows do not fold");
  test::check_values(any_rank(x, vector), tanh(matmul(x, vector)) * 2.0f, "matrix times vector");
  const tensor<float> batched_w = test::random_tensor<float>({3, 5, 6}, -1, 1, 13);
  test::check_values(any_rank(batch, batched_w), tanh(matmul(batch, batched_w)) * 2.0f, "a matrix per batch");
  CHECK(counters_of(any_rank, across, w).matmul_epilogues == 0);
  CHECK(counters_of(any_rank, batch, batched_w).matmul_epilogues == 0);

  auto positive = jit([](auto a, auto v) { return matmul(a, v) > 0.0f; });
  test::check_values(positive(x, w), matmul(x, w) > 0.0f, "a bool group");
}

TEST_CASE("a batch of rows against one matrix runs as one product with its group as the epilogue") {
  // A layer on [B, T, K]: all B T rows in one GEMM, its bias and
  // activation on each finished block; contiguous and a slice of the last
  // axis (rows evenly apart), tail sizes; values, then gradients.
  auto f = jit(dense_relu);
  std::uint64_t seed = 30;
  for (const auto& size : std::vector<std::array<std::int64_t, 4>>{
           {2, 1, 1, 1}, {3, 7, 17, 5}, {2, 17, 7, 33}, {4, 0, 3, 2}, {3, 40, 70, 129}}) {
    // Named copies, not a structured binding: clang 14 cannot capture one in INFO.
    const std::int64_t batches = size[0], rows = size[1], k = size[2], n = size[3];
    tensor<float> wide = test::random_tensor<float>({batches, rows, k + 3}, -1, 1, seed++);
    tensor<float> w = test::random_tensor<float>({k, n}, -1, 1, seed++), b = test::random_tensor<float>({n}, -1, 1, seed++);
    for (const tensor<float>& x : {wide.slice(2, 0, k).contiguous(), wide.slice(2, 2, k + 2)}) {
      INFO(batches, "x", rows, "x", k, " x ", k, "x", n, x.is_contiguous() ? "" : ", x a slice");
      tensor<float> got = f(x, w, b);
      test::check_values(got, {batches, rows, n}, dense_relu_reference(x.reshape({-1, k}), w, b), "relu(x w + b)", 1e-4, 1e-4);
      CHECK(counters_of(f, x, w, b).matmul_epilogues == 1);
    }
  }
  auto layer = jit([](auto x, auto w, auto b) { return tanh(matmul(x, w) + b) * 0.5; });
  test::check_gradients([&](const auto& v) { return sum(square(layer(v[0], v[1], v[2]))); },
                        {test::away_from_zero({3, 4, 5}, 40), test::away_from_zero({5, 6}, 41), test::away_from_zero({6}, 42)},
                        "tanh(x w + b) / 2, x [3, 4, 5]");
}

TEST_CASE("a matmul epilogue without gradients allocates only the group's output") {
  auto f = jit(dense_relu);
  tensor<float> x = test::random_tensor<float>({64, 32}, -1, 1, 13), w = test::random_tensor<float>({32, 48}, -1, 1, 14);
  tensor<float> b = test::random_tensor<float>({48}, -1, 1, 15);
  f(x, w, b);
  CHECK(test::allocations_during([&] { tensor<float> out = f(x, w, b); }) ==
        test::allocations_during([] { tensor<float> one_output({64, 48}); }));
}

TEST_CASE("matmul epilogues pass finite-difference gradient checks and match eager gradients") {
  auto f = jit([](auto x, auto w, auto b) { return tanh(matmul(x, w) + b) * sum(x, 1, true); });
  test::check_gradients([&](const auto& v) { return f(v[0], v[1], v[2]); },
                        {test::away_from_zero({5, 7}, 16), test::away_from_zero({7, 3}, 17), test::away_from_zero({3}, 18)},
                        "tanh(x w + b) * row sums of x");

  tensor<double> x = test::away_from_zero({6, 9}, 19), w = test::away_from_zero({9, 4}, 20), b = test::away_from_zero({4}, 21);
  auto loss = [](auto a, auto v, auto c) { return sum(square(relu(matmul(a, v) + c)) * 0.5); };
  auto layer = [](auto a, auto v, auto c) { return relu(matmul(a, v) + c); };
  auto [ex, ew, eb] = grad(loss, all_args)(x, w, b);
  auto [jx, jw, jb] = grad([&](auto a, auto v, auto c) { return sum(square(jit(layer)(a, v, c)) * 0.5); }, all_args)(x, w, b);
  test::check_values(jx, ex, "d/dx");
  test::check_values(jw, ew, "d/dw");
  test::check_values(jb, eb, "d/db");
}

TEST_CASE("matmul epilogues report bad shapes with the op and the shapes") {
  auto f = jit(dense_relu);
  tensor<float> x = zeros<float>({3, 4}), w = zeros<float>({5, 6}), b = zeros<float>({6});
  CHECK_THROWS_WITH_AS(f(x, w, b), doctest::Contains("tandem::matmul: inner dimensions must agree"), shape_error);
  CHECK_THROWS_WITH_AS(f(x, zeros<float>({4, 6}), zeros<float>({5})), doctest::Contains("shapes [5], [3, 6] cannot be broadcast together"), shape_error);
}
