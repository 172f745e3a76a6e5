// Seed 1: an eager Add (x + x twice), a static-graph Mul (x * x twice),
// then the eager Add again, on ones(3, 3).
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

int main() {
  auto add = [](const tensor<float>& x) {
    tensor<float> y = x + x;
    return y + y;
  };
  auto mul = jit([](auto x) {
    auto y = x * x;
    return y * y;
  });
  tensor<float> x = ones<float>({3, 3});
  std::cout << "init x:\n" << x << "\n";
  x = add(mul(add(x)));
  std::cout << "\nx:\n" << x << "\n";
}
