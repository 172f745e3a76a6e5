#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<bool> a{{true}}, b{{false}};
  return static_cast<int>(tandem::matmul(a.astype<std::int32_t>(), b.astype<std::int32_t>()).numel());
}
