#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<float> w = tandem::ones<float>({3});
  w.set_requires_grad(true);
  tandem::nn::sgd opt({{"w", w}}, {.lr = 0.1});
  tandem::nn::train_step step([&w](const auto& x) { return tandem::sum(x * w > 0); }, opt);
  return static_cast<int>(step(tandem::ones<float>({3})).numel());
}
