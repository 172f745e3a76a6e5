#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<bool> mask{true, false};
  return static_cast<int>((-mask).numel());
}
