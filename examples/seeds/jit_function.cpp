// Seed 2: a function compiled as a static graph, called from eager code.
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

int main() {
  auto add_func = jit([](auto x, auto y) { return add(x, y); });
  tensor<float> x = {1.0f, 2.0f, 3.0f};
  tensor<float> y = {4.0f, 5.0f, 6.0f};
  std::cout << add_func(x, y) << "\n";
}
