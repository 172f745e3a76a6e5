#include <tandem/tandem.hpp>

int main() {
  auto f = tandem::jit([](const auto& x) {
    return tandem::host([](const tandem::tensor<float>& t) { return t * t.item(); }, x * 2.0f);
  });
  return static_cast<int>(f(tandem::ones<float>({})).numel());
}
