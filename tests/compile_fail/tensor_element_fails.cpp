#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<char> letters;
  return static_cast<int>(letters.numel());
}
