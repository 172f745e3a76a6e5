#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<bool> a{{true}}, b{{false}};
  return static_cast<int>(tandem::matmul(a, b).numel());
}
