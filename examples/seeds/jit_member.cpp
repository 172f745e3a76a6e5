// Seed 3: a member function compiled as a static graph, and the gradients
// for all of its inputs.
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

struct adder {
  auto construct(const auto& x, const auto& y) const { return x + y; }
};

int main() {
  adder net;
  auto forward = jit(&net, [](const adder& self, const auto& x, const auto& y) { return self.construct(x, y); });
  tensor<float> x = {1.0f, 2.0f, 3.0f};
  tensor<float> y = {4.0f, 5.0f, 6.0f};
  auto [grad_x, grad_y] = grad(forward, all_args)(x, y);
  std::cout << "Infer result:\n" << forward(x, y) << "\n";
  std::cout << "Gradient result:\n";
  std::cout << "Grad x Tensor1:\n" << grad_x << "\n";
  std::cout << "Grad y Tensor2:\n" << grad_y << "\n";
}
