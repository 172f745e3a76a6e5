#include <tandem/tandem.hpp>

// The branches of a cond return values of different element types.
int main() {
  auto f = tandem::jit([](const auto& x) {
    return tandem::cond(
        tandem::sum(x) > 0.0f, [](const auto& a) { return a * 2.0f; }, [](const auto& a) { return a > 0.0f; }, x);
  });
  return static_cast<int>(f(tandem::ones<float>({3})).numel());
}
