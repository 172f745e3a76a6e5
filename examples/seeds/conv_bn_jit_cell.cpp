// Seed 8: convolution (a 2x2 kernel of ones), batch norm and relu run
// eagerly, then a module whose forward is compiled as a static graph and
// reads a parameter (0.5): x + x, times the parameter, squared.
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

struct conv_bn_relu : nn::module<conv_bn_relu> {
  nn::conv2d<float> conv;
  nn::batch_norm2d<float> bn{2, 0.01, 1e-5};  // MindSpore's momentum 0.99 is 0.01 here
  explicit conv_bn_relu(generator& gen) : conv(1, 2, {2, 2}, gen, {}, false) {
    nn::init::constant_(conv.weight, 1.0);
    register_module("conv", conv);
    register_module("bn", bn);
  }
  auto forward(const auto& x) const { return relu(bn(conv(x))); }
};

struct scaled_square : nn::module<scaled_square> {
  tensor<float> param = full<float>({}, 0.5f);
  scaled_square() { register_parameter("param", param); }
  auto forward(const auto& x) const {
    auto doubled = x + x;
    auto scaled = doubled * param;
    return scaled * scaled;
  }
};

int main() {
  generator gen(0);
  conv_bn_relu features(gen);
  features.eval();  // a MindSpore Cell starts in evaluation mode; a tandem module in training mode
  scaled_square cell;
  auto compiled = jit(&cell, [](const scaled_square& self, const auto& x) { return self.forward(x); });
  tensor<float> inputs = ones<float>({1, 1, 2, 2});
  std::cout << compiled(features(inputs)) << "\n";
}
