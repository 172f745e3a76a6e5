// Seed 4: matmul and add in one static graph.
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

int main() {
  auto f = jit([](auto x, auto y, auto z) { return matmul(x, y) + z; });
  std::cout << f(ones<float>({2, 3}), ones<float>({3, 4}), ones<float>({2, 4})) << "\n";
}
