#include <doctest/doctest.h>

#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {
tensor<double> seeded(const shape& s, std::uint64_t seed) { return test::away_from_zero(s, seed); }
}  // namespace

TEST_CASE("static graphs pass finite-difference gradient checks") {
  auto f = jit([](auto x, auto y) {
    return tanh(x) * y + exp(x * 0.5) / (square(y) + 1) + maximum(x, y) + where(x > y, x, y * 2);
  });
  test::check_gradients([&](const auto& v) { return f(v[0], v[1]); }, {seeded({7}, 1), seeded({7}, 2)},
                        "fused elementwise graph");
  test::check_gradients([&](const auto& v) { return f(v[0], v[1]); }, {seeded({3, 1}, 3), seeded({1, 17}, 4)},
                        "broadcast operands");
  auto m = jit([](auto a, auto b) { return log_softmax(relu(matmul(a, b)) * 2, -1) + sum(a, 1, true); });
  test::check_gradients([&](const auto& v) { return m(v[0], v[1]); }, {seeded({3, 4}, 5), seeded({4, 5}, 6)},
                        "matmul, relu, log_softmax, sum");
}

TEST_CASE("grad(jit(f)), jit(grad(f)) and mixed programs give the eager gradients") {
  auto f = [](auto x, auto z) { return matmul(x * z, z.transpose(0, 1)); };
  tensor<double> x = seeded({2, 3}, 1), z = seeded({2, 3}, 2);
  auto [ex, ez] = grad(f, all_args)(x, z);
  auto [sx, sz] = grad(jit(f), all_args)(x, z);
  auto [jx, jz] = jit(grad(f, all_args))(x, z);
  test::check_values(sx, ex, "grad(jit(f)) x");
  test::check_values(sz, ez, "grad(jit(f)) z");
  test::check_values(jx, ex, "jit(grad(f)) x");
  test::check_values(jz, ez, "jit(grad(f)) z");

  auto inner = jit([](auto a) { return exp(a) * a; });
  auto mixed = [&](auto a, auto b) { return sum(inner(a * b) + b); };
  auto plain = [](auto a, auto b) { return sum(exp(a * b) * (a * b) + b); };
  auto [ma, mb] = grad(mixed, all_args)(x, z);
  auto [pa, pb] = grad(plain, all_args)(x, z);
  test::check_values(ma, pa, "eager ops around a static graph: a");
  test::check_values(mb, pb, "eager ops around a static graph: b");
}

TEST_CASE("the two sides of an addition share one adjoint, also where one is accumulated again") {
  // relu(x w + b): the group's backward pass writes one adjoint for the
  // product and the broadcast bias. relu(p + q) * c: p and q have the
  // group's shape, so both gradients hold the same tensor, and p's is then
  // accumulated with the 3 from p * 3, which must not reach q's.
  auto layer = jit([](auto x, auto w, auto b) { return relu(matmul(x, w) + b) * 1.5; });
  test::check_gradients([&](const auto& v) { return layer(v[0], v[1], v[2]); },
                        {seeded({5, 4}, 11), seeded({4, 3}, 12), seeded({3}, 13)}, "relu(x w + b)");
  auto shared = [](auto p, auto q, auto c) { return sum(relu(p + q) * c) + sum(p * 3); };
  tensor<double> p = seeded({4, 6}, 14), q = seeded({4, 6}, 15), c = seeded({4, 6}, 16);
  auto [ep, eq, ec] = grad(shared, all_args)(p, q, c);
  auto [sp, sq, sc] = grad(jit(shared), all_args)(p, q, c);
  test::check_values(sp, ep, "d/dp");
  test::check_values(sq, eq, "d/dq");
  test::check_values(sc, ec, "d/dc");
  test::check_gradients([&](const auto& v) { return jit(shared)(v[0], v[1], v[2]); }, {p, q, c},
                        "sum(relu(p + q) * c) + sum(p * 3)");
}

TEST_CASE("a captured tensor that requires a gradient receives it") {
  parameter<double> w(seeded({3}, 7));
  auto f = jit([&w](auto x) { return x * w + w; });
  tensor<double> x = seeded({3}, 8);
  sum(f(x)).backward();
  REQUIRE(w.has_grad());
  test::check_values(w.grad(), x + 1, "d/dw sum(x*w + w)");
}

TEST_CASE("the gradient of 30 fused steps equals the eager gradient") {
  auto chain = [](auto a) { return repeat<test::deep_steps>(a, [](auto h) { return h * h + h; }); };
  tensor<double> x = seeded({17}, 9) * 0.01;
  auto eager = grad([&](auto a) { return sum(chain(a)); })(x);
  auto fused = jit(grad([&](auto a) { return sum(chain(a)); }))(x);
  test::check_values(fused, eager, "d/dx sum(h * h + h, deep_steps times)");
}

namespace {
// An op with no derivative rule: fine forward, an error when a gradient is asked of it.
struct clipped_op {
  static constexpr const char* name = "clipped";
  template <class... T>
  using compute = promote_t<T...>;
  template <class... T>
  using result = promote_t<T...>;
  template <class V>
  V operator()(const V& a) const {
    return a * a;
  }
};
}  // namespace

TEST_CASE("a fused op with no derivative rule runs forward and names itself when a gradient is asked") {
  auto f = jit([](auto x) { return elementwise(clipped_op{}, x) + x; });
  tensor<double> x = seeded({3}, 10);
  test::check_values(f(x), x * x + x, "forward");
  x.set_requires_grad(true);
  CHECK_THROWS_WITH_AS(f(x), doctest::Contains("tandem::clipped: this op has no derivative rule"), error);
}
