#include <tandem/tandem.hpp>

// A fori_loop body that returns a state of another element type.
int main() {
  auto f = tandem::jit([](const auto& x) {
    return tandem::fori_loop(0, 3, [](const auto&, const auto& h) { return h > 0.0f; }, x);
  });
  return static_cast<int>(f(tandem::ones<float>({3})).numel());
}
