#include <tandem/tandem.hpp>

// A fori_loop body that returns the state it is given.
int main() {
  auto f = tandem::jit([](const auto& x) {
    return tandem::fori_loop(0, 3, [](const auto&, const auto& h) { return h * 0.5f; }, x);
  });
  return static_cast<int>(f(tandem::ones<float>({3})).numel());
}
