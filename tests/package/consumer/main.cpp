#include <tandem/tandem.hpp>

#include <iostream>

int main() {
  tandem::tensor<float> x{1, 2, 3}, y{4, 5, 6};
  std::cout << x + y << "\n";
  return (x + y).to_vector() == std::vector<float>{5, 7, 9} ? 0 : 1;
}
