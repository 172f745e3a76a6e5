#include <tandem/tandem.hpp>

int main() {
  auto cube = [](const auto& x) { return tandem::sum(x * x * x); };
  auto f = tandem::jit([&](const auto& x) { return tandem::grad(cube)(x) * 2.0f; });
  return static_cast<int>(f(tandem::ones<float>({3})).numel());
}
