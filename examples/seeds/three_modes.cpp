// Seed 6: the eager-autodiff scenario (x * z, then matmul with y) run
// eagerly, as a static graph, and mixed: the gradients are the same.
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

int main() {
  tensor<float> x = {{0.5f, 0.6f, 0.4f}, {1.2f, 1.3f, 1.1f}};
  tensor<float> y = {{0.01f, 0.3f, 1.1f}, {0.1f, 0.2f, 1.3f}, {2.1f, 1.2f, 3.3f}};
  tensor<float> z = {{1.0f, 1.0f, 1.0f}, {1.0f, 1.0f, 1.0f}};
  auto f = [](auto a, auto b, auto c) { return matmul(a * c, b); };
  auto scaled = jit([](auto a, auto c) { return a * c; });
  auto mixed = [&](auto a, auto b, auto c) { return matmul(scaled(a, c), b); };

  auto [eager_x, eager_y] = grad(f, args<0, 1>)(x, y, z);
  auto [static_x, static_y] = grad(jit(f), args<0, 1>)(x, y, z);
  auto [mixed_x, mixed_y] = grad(mixed, args<0, 1>)(x, y, z);
  std::cout << "eager:\n" << eager_x << "\n" << eager_y << "\n";
  std::cout << "static:\n" << static_x << "\n" << static_y << "\n";
  std::cout << "mixed:\n" << mixed_x << "\n" << mixed_y << "\n";
}
