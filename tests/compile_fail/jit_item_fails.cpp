#include <tandem/tandem.hpp>

int main() {
  auto f = tandem::jit([](auto x) { return x * x.item(); });
  return static_cast<int>(f(tandem::tensor<float>{2}).numel());
}
