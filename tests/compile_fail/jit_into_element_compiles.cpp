#include <tandem/tandem.hpp>

int main() {
  auto f = tandem::jit([](auto x) { return x * x; });
  tandem::tensor<float> out = tandem::zeros<float>({2});
  f.into(out, tandem::tensor<float>{1, 2});
  return static_cast<int>(out.numel());
}
