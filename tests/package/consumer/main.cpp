#include <tandem/tandem.hpp>

#include <iostream>

// A consumer's program, built as a user would build it (see CMakeLists.txt):
// an eager sum, and a convolution layer with default options, the pattern
// GCC 12 with AVX-512 once miscompiled (docs/concepts.md, "Compilers").
int main() {
  tandem::tensor<float> x{1, 2, 3}, y{4, 5, 6};
  std::cout << x + y << "\n";
  if ((x + y).to_vector() != std::vector<float>{5, 7, 9}) return 1;

  tandem::generator gen(1);
  tandem::nn::conv2d<float> conv(1, 2, {2, 2}, gen, {}, false);
  const auto& o = conv.options;
  bool defaults = o.stride == std::array<std::int64_t, 2>{1, 1} && o.padding == std::array<std::int64_t, 2>{0, 0} &&
                  o.dilation == std::array<std::int64_t, 2>{1, 1} && o.groups == 1;
  tandem::tensor<float> out = conv(tandem::ones<float>({1, 1, 3, 4}));
  std::cout << "conv2d output shape " << tandem::to_string(out.shape()) << "\n";
  return defaults && out.shape() == tandem::shape{1, 2, 2, 3} ? 0 : 1;
}
