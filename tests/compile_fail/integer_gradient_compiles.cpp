#include <tandem/tandem.hpp>

int main() {
  tandem::tensor<double> values{1, 2};
  values.set_requires_grad();
  return 0;
}
