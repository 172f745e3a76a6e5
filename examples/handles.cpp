// docs/concepts.md, "Tensors are handles": copies share storage, views share
// storage, clone() does not.
#include <tandem/tandem.hpp>

#include <iostream>

int main() {
  using namespace tandem;
  tensor<float> a = zeros({3});
  tensor<float> b = a;         // the same storage
  b.fill(1);
  tensor<float> c = a.clone(); // a fresh buffer
  c.fill(2);
  std::cout << a << " " << b << " " << c << "\n";

  tensor<float> grid = zeros({2, 3});
  grid.slice(1, 1, {}).fill(5);  // a view: writes reach grid
  grid[0].at(0) = -1;
  std::cout << grid << "\n";
}
