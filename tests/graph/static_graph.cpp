#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/check.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

template <class Graph, class... A>
using traced = decltype(std::declval<Graph>().trace(std::declval<A>()...));

tensor<double> seeded(const shape& s, std::uint64_t seed) {
  generator gen(seed);
  return uniform<double>(s, 0.2, 1.5, gen);
}

// How many fused loops a graph's text dump lists.
std::size_t fused_loops_in(const std::string& text) {
  std::size_t count = 0;
  for (std::size_t at = text.find("fused loop, buffer"); at != std::string::npos;
       at = text.find("fused loop, buffer", at + 1))
    ++count;
  return count;
}

}  // namespace

TEST_CASE("a static graph computes what the same function computes eagerly") {
  auto f = [](auto x, auto y) { return where(x > 0.5, exp(x) * y, -y) + sigmoid(x * 2.0) - 1; };
  auto g = jit(f);
  for (std::int64_t n : test::tail_sizes) {
    tensor<double> x = seeded({n}, 1), y = seeded({n}, 2);
    test::check_values(g(x, y), f(x, y), "fused where/exp/sigmoid");
  }
  tensor<double> row = seeded({1, 17}, 3), column = seeded({7, 1}, 4);
  test::check_values(g(row, column), f(row, column), "broadcast operands");
  tensor<double> wide = seeded({17, 7}, 5);
  test::check_values(g(wide.transpose(0, 1), column), f(wide.transpose(0, 1), column), "a non-contiguous view");
}

TEST_CASE("non-elementwise ops run inside a static graph") {
  auto f = [](auto a, auto b) { return softmax(matmul(a, b) + 1, -1) * sum(a, 1, true) - mean(b); };
  tensor<double> a = seeded({3, 4}, 1), b = seeded({4, 5}, 2);
  test::check_values(jit(f)(a, b), f(a, b), "matmul, softmax, reductions");
  auto views = [](auto x) { return x.reshape({2, 6}).transpose(0, 1) * 2; };
  tensor<double> x = seeded({3, 4}, 3);
  test::check_values(jit(views)(x), views(x), "view ops");
}

TEST_CASE("values holding different scalars stay apart; a value used twice is computed once") {
  tensor<float> x = {1, 2, 3};
  auto f = jit([](auto a) { return a * 2.0 + a * 3.0; });
  test::check_values(f(x), tensor<float>{5, 10, 15}, "x*2 + x*3");
  using two_products = traced<decltype(f), tensor<float>>;
  static_assert(detail::has_shared_data_classes<two_products>,
                "two products of one type holding scalars: shared, which holds only for one value");
  CHECK(f.text(x).starts_with("eager: two values of one type hold different scalars"));
  auto two_products_sum = [](auto a) { return sum(a * 2.0 + a * 3.0); };
  test::check_values(grad(jit(two_products_sum))(x), full<float>({3}, 5.0f), "d/dx of x*2 + x*3, eagerly");

  auto shared = jit([](auto a) { return repeat<8>(a, [](auto h) { return h * h + h; }); });
  using pure = detail::graph_structure<traced<decltype(shared), tensor<float>>>;
  static_assert(pure::fusion_groups == 1, "a pure elementwise chain is one fused loop");
  static_assert(pure::buffers == 0, "and needs no buffer besides its output");
  static_assert(pure::classes == 18, "input, output and 2 classes per step: reuse is shared, not copied");

  auto scaled = jit([](auto a) { return repeat<4>(a * 0.5, [](auto h) { return h * h + h; }); });
  using data = detail::graph_structure<traced<decltype(scaled), tensor<float>>>;
  static_assert(data::fusion_groups == 1 && data::buffers == 0,
                "a scalar-holding value read three times is computed once, in registers, when it is one value");
  tensor<float> small = {0.25f, -0.5f};
  auto eager = repeat<4>(small * 0.5, [](auto h) { return h * h + h; });
  test::check_values(scaled(small), eager, "scalar-holding chain");
  CHECK(fused_loops_in(scaled.text(small)) == 1);
}

TEST_CASE("a scalar-holding value read twice is computed once in its loop; tensor-holding ones per instance") {
  // h holds a scalar; the square reads it twice.
  auto square = jit([](auto x, auto y) {
    auto h = x * y - 0.25;
    return h * h + sigmoid(h);
  });
  // Nodes of one type holding equal scalars are one value.
  auto equal = jit([](auto x, auto y) { return (x * y - 0.25) * (x * y - 0.25) + exp(x * y - 0.25); });
  // Values holding a captured tensor, read twice: one buffer per instance.
  tensor<double> w = seeded({7}, 9);
  auto captured = jit([&w](auto x) {
    auto h = x * w - 0.25;
    return h * h;
  });
  auto twice = jit([&w](auto x) { return (x * w - 0.25) * (x * w - 0.5); });
  tensor<double> y = seeded({7}, 12);
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}}) {
    tensor<double> x = seeded({n, 7}, 10);
    auto h = x * y - 0.25;
    test::check_values(square(x, y), h * h + sigmoid(h), "h * h + sigmoid(h), h holding a scalar");
    test::check_values(equal(x, y), h * h + exp(h), "one value written three times");
    test::check_values(captured(x), (x * w - 0.25) * (x * w - 0.25), "h * h, h holding a captured tensor");
    test::check_values(twice(x), (x * w - 0.25) * (x * w - 0.5), "two values of one type holding tensors");
  }
  tensor<double> x = seeded({3, 7}, 11);
  CHECK(fused_loops_in(square.text(x, y)) == 1);
  CHECK(fused_loops_in(equal.text(x, y)) == 1);
  CHECK(fused_loops_in(captured.text(x)) == 2);
  CHECK(fused_loops_in(twice.text(x)) == 3);

  auto square_sum = [](auto v, auto u) {
    auto h = v * u - 0.25;
    return sum(h * h + sigmoid(h));
  };
  auto twice_sum = [&w](auto v) { return sum((v * w - 0.25) * (v * w - 0.5)); };
  test::check_values(grad(jit(square_sum))(x, y), grad(square_sum)(x, y), "d/dx of h * h + sigmoid(h)");
  test::check_values(grad(jit(twice_sum))(x), grad(twice_sum)(x), "d/dx of two values of one type");
}

TEST_CASE("h = h * h + h applied 30 times is one fused loop") {
  auto chain = [](auto a) { return repeat<test::deep_steps>(a, [](auto h) { return h * h + h; }); };
  auto f = jit(chain);
  using structure = detail::graph_structure<traced<decltype(f), tensor<double>>>;
  static_assert(structure::fusion_groups == 1 && structure::buffers == 0 &&
                    structure::classes == 2 * test::deep_steps + 2,
                "30 steps are 60 classes in one loop, not 3^30 copies of the input");
  for (std::int64_t n : test::tail_sizes) {
    tensor<double> x = seeded({n}, 6) * 0.01;
    test::check_values(f(x), chain(x), "h * h + h, deep_steps times");
  }
}

TEST_CASE("a fused graph runs one loop and allocates only its output") {
  auto f = jit([](auto x, auto y) { return exp(x) * y + x / (y + 1); });
  tensor<float> x = ones<float>({64}), y = full<float>({64}, 2.0f);
  f(x, y);
  CHECK(test::allocations_during([&] { tensor<float> out = f(x, y); }) ==
        test::allocations_during([] { tensor<float> one_output({64}); }));
}

TEST_CASE("into() writes the output into a given tensor or view, allocating nothing for a fused output") {
  auto f = jit([](auto x, auto y) { return exp(x) * y + x / (y + 1.0); });
  tensor<double> x = seeded({7, 17}, 1), y = seeded({7, 17}, 2);
  tensor<double> want = f(x, y);
  tensor<double> out = zeros<double>({7, 17});
  CHECK(test::allocations_during([&] { f.into(out, x, y); }) == 0);
  test::check_values(out, want, "into a fresh tensor");

  tensor<double> wide = zeros<double>({17, 14});
  tensor<double> columns = wide.transpose(0, 1).slice(0, 0, 14, 2);
  f.into(columns, x, y);
  test::check_values(columns, want, "into a strided view");
  CHECK(wide.at(0, 1) == 0.0);

  f.into(x, x, y);
  test::check_values(x, want, "into one of its own inputs");

  set_jit_enabled(false);
  tensor<double> eager = zeros<double>({7, 17});
  f.into(eager, seeded({7, 17}, 1), y);
  set_jit_enabled(true);
  test::check_values(eager, want, "with jit off");
}

TEST_CASE("into() copies an output that no fused loop computes, and refuses what it cannot do") {
  auto total = jit([](auto x) { return sum(x * x, 0); });
  tensor<float> x = {{1, 2}, {3, 4}};
  tensor<float> out = zeros<float>({2});
  total.into(out, x);
  test::check_values(out, tensor<float>{10, 20}, "a reduction's output");

  CHECK_THROWS_WITH_AS(total.into(zeros<float>({3}), x),
                       doctest::Contains("the graph's output has shape [2], the tensor to write into has shape [3]"),
                       shape_error);
  tensor<float> w = {{1, 2}, {3, 4}};
  w.set_requires_grad();
  CHECK_THROWS_WITH_AS(total.into(out, w), doctest::Contains("records no gradient, but an input requires one"), error);
  {
    no_grad off;
    total.into(out, w);
  }
  test::check_values(out, tensor<float>{10, 20}, "under no_grad");

  tensor<float> scale = {2, 3};
  auto scaled = jit([&scale](auto v) { return v * scale; });
  CHECK_THROWS_WITH_AS(scaled.into(out, tensor<float>{1, 1}), doctest::Contains("the function captures tensors"),
                       error);
  no_grad off;
  scaled.into(out, tensor<float>{1, 1});
  test::check_values(out, tensor<float>{2, 3}, "a captured tensor under no_grad");
}

TEST_CASE("a cached call reads its inputs and captured tensors in place") {
  // One group reads an input, two captured tensors and a computed value
  // (the sum): the first three bound where they live, the sum held for the
  // run. A weight updated in place between calls (as an optimizer does) is
  // seen by the next call, with or without autograd.
  tensor<float> w = {1, 2, 3};
  w.set_requires_grad();
  tensor<float> bias = {0.5f, 0.5f, 0.5f};
  auto layer = jit([&w, &bias](auto x) { return x * w + bias + sum(x); });
  const tensor<float> x = {1, 1, 2};
  {
    no_grad inference;
    test::check_values(layer(x), tensor<float>{5.5, 6.5, 10.5}, "captured tensors under no_grad");
    w.assign(tensor<float>{2, 2, 2});
    test::check_values(layer(x), tensor<float>{6.5, 6.5, 8.5}, "a weight updated in place");
  }
  tensor<float> y = layer(x);
  test::check_values(y, tensor<float>{6.5, 6.5, 8.5}, "the same call, recorded");
  sum(y).backward();
  test::check_values(w.grad(), x, "the captured weight's gradient");
}

TEST_CASE("plans are cached per signature; scalars never build a new plan") {
  double scale = 2;
  auto f = jit([&scale](auto x) { return x * scale; });
  tensor<float> a = ones<float>({3}), b = ones<float>({2, 3});
  f(a);
  scale = 5;
  test::check_values(f(a), full<float>({3}, 5.0f), "a changed scalar is seen on the next call");
  f(b);
  f(tensor<double>{1.0, 2.0});
  plan_statistics stats = f.statistics();
  CHECK(stats.misses == 3);
  CHECK(stats.hits == 1);
  REQUIRE(stats.signatures.size() == 3);
  CHECK(stats.signatures[0] == "float32[3]@cpu");
  CHECK(stats.signatures[1] == "float32[2, 3]@cpu");
  // A call is compared in place with the last signature found: repeats,
  // switches between known signatures, and a new element type of a known
  // shape are each counted as their own.
  f(a);
  f(a);
  f(b);
  f(a);
  f(a.astype<double>());
  stats = f.statistics();
  CHECK(stats.misses == 4);
  CHECK(stats.hits == 5);
  CHECK(stats.signatures[3] == "float64[3]@cpu");
}

TEST_CASE("shape errors found while planning name the op and the shapes") {
  auto f = jit([](auto x, auto y) { return x + y; });
  CHECK_THROWS_WITH_AS(f(ones<float>({2}), ones<float>({3})),
                       doctest::Contains("cannot be broadcast together"), shape_error);
  auto m = jit([](auto a, auto b) { return matmul(a, b); });
  CHECK_THROWS_AS(m(ones<float>({2, 3}), ones<float>({2, 3})), shape_error);
}

TEST_CASE("disabling jit runs the same function eagerly") {
  auto f = jit([](auto x) { return x * x + 1; });
  tensor<float> x = {1, 2, 3};
  set_jit_enabled(false);
  tensor<float> eager = f(x);
  set_jit_enabled(true);
  test::check_values(eager, f(x), "eager and static agree");
  CHECK(f.statistics().misses == 1);
}

TEST_CASE("the graph mode switch is global and readable") {
  CHECK(get_mode() == mode::eager);
  set_mode(mode::graph);
  CHECK(get_mode() == mode::graph);
  set_mode(mode::eager);
}
