#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<std::int32_t> numbers;
  return static_cast<int>(numbers.numel());
}
