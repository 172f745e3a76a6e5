#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<std::int64_t> counts{1, 2};
  counts.set_requires_grad();
  return 0;
}
