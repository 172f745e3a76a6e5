// docs/autodiff.md: eager autodiff, from the seed scenario of MindSpore's
// PyNative tutorial (GradOperation over matmul(x * z, y)) to the PyTorch habit
// (loss.backward(), x.grad()) and gradients of gradients.
#include <tandem/tandem.hpp>

#include <iostream>

using namespace tandem;

int main() {
  tensor<float> x{{0.8f, 0.6f, 0.2f}, {1.8f, 1.3f, 1.1f}};
  tensor<float> y{{0.11f, 3.3f, 1.1f}, {1.1f, 0.2f, 1.4f}, {1.1f, 2.2f, 0.3f}};
  parameter<float> z(tensor<float>{2.0f}, "z");
  auto net = [&](const tensor<float>& a, const tensor<float>& b) { return matmul(a * z, b); };

  // GradOperation(): the gradient with respect to the first input, with a
  // sensitivity of ones for the 2x3 output.
  std::cout << grad(net)(x, y) << "\n";

  // GradOperation(get_all=True) over x + y.
  auto [dx, dy] = grad([](const tensor<float>& a, const tensor<float>& b) { return a + b; }, all_args)(
      tensor<float>{1, 2, 3}, tensor<float>{4, 5, 6});
  std::cout << dx << "\n" << dy << "\n";

  // GradOperation(get_by_list=True): with respect to parameters, and the value.
  auto [value, dz] = value_and_grad(net, std::vector<tensor<float>>{z})(x, y);
  std::cout << value << "\n" << dz[0] << "\n";

  // The PyTorch habit: backward() into the leaves' grad().
  tensor<float> w = x.clone();
  w.set_requires_grad();
  tensor<float> loss = mean(square(matmul(w * z, y)));
  loss.backward();
  print_options four_digits;
  four_digits.precision = 4;
  std::cout << to_string(loss, four_digits) << "\n" << to_string(w.grad(), four_digits) << "\n";

  // Gradients of gradients: d2/dt2 sum(t^3) = 6t.
  auto second = grad(grad([](const tensor<double>& t) { return sum(t * t * t); }));
  std::cout << second(tensor<double>{1, 2, 3}) << "\n";
}
