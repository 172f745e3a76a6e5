#pragma once
// nn::linear: y = x W + b, with W stored [in_features, out_features] (the
// layout of JAX and Flax: the GEMM reads it without a transpose). Weights
// and bias start uniform in +-1/sqrt(in_features), as in PyTorch and
// MindSpore, from the generator given. Without a bias, `bias` is zeros that
// nothing trains (so the graph is the same in both cases).

#include <cstdint>
#include <string>

#include "tandem/core/random.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/nn/init.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/ops/linalg.hpp"

namespace tandem::nn {

template <floating_element T = float>
class linear : public module<linear<T>> {
 public:
  tensor<T> weight, bias;

  linear(std::int64_t in_features, std::int64_t out_features, generator& gen, bool with_bias = true)
      : weight(shape{check(in_features, out_features), out_features}), bias(zeros<T>({out_features})) {
    init::fan_in_uniform_(weight, in_features, gen);
    this->register_parameter("weight", weight);
    if (with_bias) {
      init::fan_in_uniform_(bias, in_features, gen);
      this->register_parameter("bias", bias);
    }
  }

  std::int64_t in_features() const { return weight.shape(0); }
  std::int64_t out_features() const { return weight.shape(1); }

  template <class X>
  auto forward(const X& x) const {
    return matmul(x, weight) + bias;
  }

 private:
  static std::int64_t check(std::int64_t in, std::int64_t out) {
    if (in < 0 || out < 0)
      throw value_error("tandem::nn::linear: feature counts must not be negative (got " + std::to_string(in) + ", " +
                        std::to_string(out) + ")");
    return in;
  }
};

}  // namespace tandem::nn
