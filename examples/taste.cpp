// The README's taste of eager tandem: every line runs at once and prints
// like NumPy.
#include <tandem/tandem.hpp>

#include <iostream>

int main() {
  using namespace tandem;
  tensor<float> x{1, 2, 3}, y{4, 5, 6};
  std::cout << x + y << "\n";                      // [5. 7. 9.]

  tensor<float> m = arange<float>(6).reshape({2, 3});
  std::cout << m.transpose(0, 1) << "\n";          // a view: no copy
  std::cout << matmul(m, m.transpose(0, 1)) << "\n";
  std::cout << sum(m, 1) << " " << mean(m) << "\n";

  generator gen(42);                               // same seed, same numbers
  std::cout << uniform({2, 3}, -1, 1, gen) << "\n";

  tensor<float> logits{{1, 2, 3, 4}, {2, 0, 0, 2}};
  std::cout << softmax(logits, -1) << "\n";
  std::cout << cross_entropy(logits, tensor<std::int64_t>{3, 0}) << "\n";

  m.slice(1, 1, {}) *= 10;                         // writes through a view
  std::cout << m << "\n";
  std::cout << where(m > 10, m, 0.0f) << "\n";
}
