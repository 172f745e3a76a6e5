#include <doctest/doctest.h>

#include <string>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;
using tandem::test::check_values;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// What a host function might be: a data-dependent loop that halves its
// operand until its largest magnitude is at most 1, with tandem's ops (so
// differentiable), and a count of its calls.
struct halve_until_small {
  int* calls;
  template <class T>
  tensor<T> operator()(const tensor<T>& x) const {
    ++*calls;
    tensor<T> h = x;
    while (max(abs(h)).item() > T(1)) h = h * T(0.5);
    return h;
  }
};

// Before and after the break, fused code; the break in the middle.
template <class T>
auto program(int* calls) {
  return [calls](const auto& x, const auto& y) {
    auto a = x * y + T(1);
    auto b = host(halve_until_small{calls}, a);
    return tanh(b) * y - x;
  };
}

}  // namespace

TEST_CASE("host: on tensors it is the function's call") {
  int calls = 0;
  tensor<float> x{3.0f, -5.0f, 0.5f};
  tensor<float> h = host(halve_until_small{&calls}, x);
  check_values(h, tensor<float>{0.375f, -0.625f, 0.0625f}, "halved three times");
  CHECK(calls == 1);
}

TEST_CASE("host: a static graph calls it on every call, never while tracing, and fuses around it") {
  int calls = 0;
  auto f = program<float>(&calls);
  auto g = jit(f);
  tensor<float> x = test::random_tensor<float>({4, 5}, -3, 3, 1), y = test::random_tensor<float>({4, 5}, -3, 3, 2);
  tensor<float> want = f(x, y);
  CHECK(calls == 1);
  check_values(g(x, y), want, "static against eager");
  CHECK(calls == 2);
  check_values(g(x * 4.0f, y), f(x * 4.0f, y), "another call, other data, another number of halvings");
  CHECK(calls == 4);

  std::string text = g.text(x, y);
  CHECK(calls == 4);
  INFO(text);
  CHECK(has(text, "= host %4 : float32    [host call: graph break, buffer]"));
  CHECK(has(text, "[eager backward of host]"));
  CHECK(has(text, "[group 0: fused loop, buffer]"));
  CHECK(has(text, "[group 1: fused loop"));
  CHECK(has(g.dot(x, y), "host : float32\\ngraph break"));
}

TEST_CASE("host: with jit disabled the program runs as written") {
  int calls = 0;
  auto g = jit(program<double>(&calls));
  tensor<double> x{2.0, -0.5}, y{3.0, 1.0};
  tensor<double> with_jit = g(x, y);
  set_jit_enabled(false);
  tensor<double> without = g(x, y);
  set_jit_enabled(true);
  check_values(without, with_jit, "jit disabled");
  CHECK(calls == 2);
}

TEST_CASE("host: gradients flow through the host function, eager and static, against finite differences") {
  int calls = 0;
  auto f = program<double>(&calls);
  auto g = jit(f);
  tensor<double> x = test::away_from_zero({3, 4}, 5), y = test::away_from_zero({3, 4}, 6);
  test::check_gradients([&](const std::vector<tensor<double>>& v) { return f(v[0], v[1]); }, {x, y}, "eager");
  test::check_gradients([&](const std::vector<tensor<double>>& v) { return g(v[0], v[1]); }, {x, y}, "static");
  auto summed = [f](const auto& a, const auto& b) { return sum(f(a, b)); };
  auto [ex, ey] = grad(summed, all_args)(x, y);
  auto [sx, sy] = grad(jit(summed), all_args)(x, y);
  auto [jx, jy] = jit(grad(summed, all_args))(x, y);
  check_values(sx, ex, "grad(jit(f)), x");
  check_values(sy, ey, "grad(jit(f)), y");
  check_values(jx, ex, "jit(grad(f)), x");
  check_values(jy, ey, "jit(grad(f)), y");
}
