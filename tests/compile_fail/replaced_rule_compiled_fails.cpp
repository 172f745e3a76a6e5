// With the compiled library, replacing the rule of one of tandem's ops would
// be ignored wherever the library's nodes run: it must not compile.
#define TANDEM_COMPILED_LIBRARY
#include <tandem/tandem.hpp>

template <>
struct tandem::derivative<tandem::relu_op> {
  template <std::size_t I, class G, class Y, class X>
  static auto gradient(const relu_op&, const G& g, const Y&, const X& x) {
    return where(x > 0, g, g * 0.1);
  }
};

int main() {
  tandem::tensor<double> x{-2, 3};
  x.set_requires_grad();
  tandem::sum(tandem::relu(x)).backward();
}
