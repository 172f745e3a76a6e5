// Seed 7: the side-effect scenarios. A static graph is a pure function of
// its inputs, and scalars are read on every call: a member changed between
// calls IS seen by the next call (MindSpore's cached graph keeps the old
// value; tandem deliberately does not).
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

struct func {
  float value = 5;
  auto construct(const auto& x) const { return x + value; }
};

int main() {
  int global = 5;
  auto f = jit([&global](auto x, auto y) { return x + y; });
  tensor<float> x = {1.0f, 2.0f, 3.0f};
  f(x, x);
  std::cout << global << "\n";

  func net;
  auto forward = jit(&net, [](const func& self, const auto& t) { return self.construct(t); });
  std::cout << "out1: " << forward(x) << "\n";
  net.value = 1;
  std::cout << "out2: " << forward(x) << "\n";
  std::cout << "plans built: " << forward.statistics().misses << "\n";
}
