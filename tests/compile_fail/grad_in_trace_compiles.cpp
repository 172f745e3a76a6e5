#include <tandem/tandem.hpp>

int main() {
  auto cube = [](const auto& x) { return tandem::sum(x * x * x); };
  auto f = tandem::jit(tandem::grad(cube));
  return static_cast<int>(f(tandem::ones<float>({3})).numel());
}
