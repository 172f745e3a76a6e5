// Finite-difference checks (double) of elementwise gradients the op table
// (tests/ops/op_table_*.cpp) does not take: scalars on either side of an op,
// clamp with scalar and tensor bounds, casts.


#include "support/gradcheck.hpp"

using namespace tandem;
using tandem::test::away_from_zero;
using tandem::test::check_gradients;

namespace {
using inputs = const std::vector<tensor<double>>&;
}  // namespace

TEST_CASE("scalars on either side") {
  tensor<double> x = away_from_zero({5}, 6, 0.3, 1.5, false);
  check_gradients([](inputs v) { return 3.0 - v[0] * 2; }, {x}, "3 - 2x");
  check_gradients([](inputs v) { return 2.0 / v[0]; }, {x}, "2 / x");
  check_gradients([](inputs v) { return pow(v[0], 2.5); }, {x}, "x ^ 2.5");
  check_gradients([](inputs v) { return pow(2.0, v[0]); }, {x}, "2 ^ x");
  check_gradients([](inputs v) { return clamp(v[0], 0.5, 1.2); }, {x}, "clamp(x, 0.5, 1.2)");
  tensor<double> low = full<double>({5}, 0.6), high = full<double>({1}, 1.1);
  check_gradients([](inputs v) { return clamp(v[0], v[1], v[2]); }, {x, low, high}, "clamp with tensor bounds");
}

TEST_CASE("casts pass the gradient in the input's type") {
  tensor<double> x = away_from_zero({4}, 7);
  check_gradients([](inputs v) { return (v[0].astype<float>() * 2.0f).astype<double>(); }, {x}, "double -> float -> double",
                  1e-3, 1e-3, 1e-2);
  tensor<float> f = tensor<float>{1, 2, 3};
  f.set_requires_grad();
  tensor<double> wide = tensor<double>{0.5, 0.25, 2};
  (f * wide).backward(ones<double>({3}));
  static_assert(std::is_same_v<decltype(f.grad()), tensor<float>>);
  CHECK(f.grad().to_vector() == std::vector<float>{0.5, 0.25, 2});
}
