#include <tandem/tandem.hpp>

int main() {
  auto f = tandem::jit([](auto x) { return x * x; });
  tandem::tensor<double> out = tandem::zeros<double>({2});
  f.into(out, tandem::tensor<float>{1, 2});
  return static_cast<int>(out.numel());
}
