// With the compiled library, a rule of the program's own op can still be
// replaced: the library never instantiated that op.
#define TANDEM_COMPILED_LIBRARY
#include <tandem/tandem.hpp>

struct leaky_op : tandem::relu_op {
  static constexpr const char* name = "leaky";
};

template <>
struct tandem::derivative<leaky_op> {
  template <std::size_t I, class G, class Y, class X>
  static auto gradient(const leaky_op&, const G& g, const Y&, const X& x) {
    return where(x > 0, g, g * 0.1);
  }
};

int main() {
  tandem::tensor<double> x{-2, 3};
  x.set_requires_grad();
  tandem::sum(tandem::elementwise(leaky_op{}, x)).backward();
}
