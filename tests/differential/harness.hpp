#pragma once
// Differential testing of whole programs (tests/differential/generate.py
// writes them): one generic function of x and y, run every way tandem can
// run it, and every result compared with eager autograd in double:
//
//   values     eager and under jit, in float and in double
//   gradients  grad(f), grad(jit(f)), jit(grad(f)) and backward() through a
//              static graph called while recording, in float and in double;
//              eager double against finite differences
//   second     the gradient of sum(grad(jit(f))) against eager
//
// Same type, same ops: double results agree to rounding. Float against
// double: to what float's rounding can accumulate over a short program.

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "support/gradcheck.hpp"

namespace tandem::test {

struct program_tolerance {
  double rel, abs;
};
inline constexpr program_tolerance same_type{1e-9, 1e-9};
inline constexpr program_tolerance float_against_double{2e-3, 2e-3};

template <class T>
void check_against(const tensor<T>& got, const tensor<double>& want, const std::string& what,
                   program_tolerance tolerance) {
  check_values(got.template astype<double>(), want, what, tolerance.rel, tolerance.abs);
}

template <class F>
void check_program(const std::string& name, const F& f, const shape& x_shape, const shape& y_shape,
                   std::uint64_t seed) {
  INFO("program " << name << ", x " << to_string(x_shape) << ", y " << to_string(y_shape));
  tensor<double> x = random_tensor<double>(x_shape, -1.5, 1.5, seed);
  tensor<double> y = random_tensor<double>(y_shape, -1.5, 1.5, seed + 1);
  tensor<float> xf = x.astype<float>(), yf = y.astype<float>();
  auto g = jit(f);

  // Values.
  tensor<double> want = f(x, y);
  check_against(g(x, y), want, "jit, double", same_type);
  check_against(f(xf, yf), want, "eager, float", float_against_double);
  check_against(g(xf, yf), want, "jit, float", float_against_double);

  // Gradients: eager double first, itself checked by finite differences.
  check_gradients([&](const std::vector<tensor<double>>& v) { return f(v[0], v[1]); }, {x, y}, "eager, double");
  // Not a structured binding: clang 14 refuses to capture one in a lambda.
  auto wanted = grad(f, all_args)(x, y);
  const tensor<double>& wx = std::get<0>(wanted);
  const tensor<double>& wy = std::get<1>(wanted);
  auto compare = [&](const auto& got, const std::string& route, program_tolerance tolerance) {
    check_against(std::get<0>(got), wx, route + ", d/dx", tolerance);
    check_against(std::get<1>(got), wy, route + ", d/dy", tolerance);
  };
  compare(grad(g, all_args)(x, y), "grad(jit(f)), double", same_type);
  compare(jit(grad(f, all_args))(x, y), "jit(grad(f)), double", same_type);
  compare(grad(g, all_args)(xf, yf), "grad(jit(f)), float", float_against_double);
  compare(grad(f, all_args)(xf, yf), "grad(f), float", float_against_double);
  {
    tensor<double> lx = x.detach(), ly = y.detach();
    lx.set_requires_grad(true);
    ly.set_requires_grad(true);
    sum(g(lx, ly)).backward();
    compare(std::tuple{lx.grad(), ly.grad()}, "backward() through jit(f), double", same_type);
  }

  // Second order: d/d(x, y) of sum(d/dx f), through the static graph's
  // recorded backward, against eager.
  auto slope_sum = [](const auto& h) {
    return [&h](const tensor<double>& a, const tensor<double>& b) { return sum(std::get<0>(grad(h, all_args)(a, b))); };
  };
  auto [ex, ey] = grad(slope_sum(f), all_args)(x, y);
  auto [sx, sy] = grad(slope_sum(g), all_args)(x, y);
  check_against(sx, ex, "second order through jit, d/dx", same_type);
  check_against(sy, ey, "second order through jit, d/dy", same_type);
}

}  // namespace tandem::test
