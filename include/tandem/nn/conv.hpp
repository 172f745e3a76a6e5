#pragma once
// nn::conv2d and the pooling layers. conv2d's kernel is [out, in / groups,
// kh, kw] and, like its bias, starts uniform in +-1/sqrt(fan_in) (PyTorch's
// default) from the generator given.

#include <cmath>
#include <cstdint>
#include <string>

#include "tandem/core/random.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/nn/init.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/ops/conv.hpp"
#include "tandem/ops/pool.hpp"

namespace tandem::nn {

template <floating_element T = float>
class conv2d : public module<conv2d<T>> {
 public:
  tensor<T> weight, bias;
  conv2d_options options;

  // Options by reference: GCC 12.2 with AVX-512 can build an options
  // struct passed by value from the wrong constants (docs/concepts.md).
  conv2d(std::int64_t in_channels, std::int64_t out_channels, std::array<std::int64_t, 2> kernel, generator& gen,
         const conv2d_options& opts = {}, bool with_bias = true)
      : weight(shape{checked(in_channels, out_channels, kernel, opts), in_channels / opts.groups, kernel[0], kernel[1]}),
        bias(zeros<T>({out_channels})),
        options(opts) {
    double bound = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(init::fans_of(weight).in, 1)));
    init::uniform_(weight, -bound, bound, gen);
    this->register_parameter("weight", weight);
    if (with_bias) {
      init::uniform_(bias, -bound, bound, gen);
      this->register_parameter("bias", bias);
    }
  }

  template <class X>
  auto forward(const X& x) const {
    return tandem::conv2d(x, weight, options) + bias.reshape({bias.shape(0), 1, 1});
  }

 private:
  static std::int64_t checked(std::int64_t in, std::int64_t out, std::array<std::int64_t, 2> kernel,
                              const conv2d_options& o) {
    if (in <= 0 || out <= 0 || kernel[0] <= 0 || kernel[1] <= 0 || o.groups <= 0 || in % o.groups || out % o.groups)
      throw value_error("tandem::nn::conv2d: channels (" + std::to_string(in) + " in, " + std::to_string(out) +
                        " out) and the kernel must be positive, and the channels divisible by groups (" +
                        std::to_string(o.groups) + ")");
    return out;
  }
};

struct max_pool2d : module<max_pool2d> {
  pool2d_options options;
  explicit max_pool2d(const pool2d_options& o = {}) : options(o) {}
  template <class X>
  auto forward(const X& x) const {
    return tandem::max_pool2d(x, options);
  }
};

struct avg_pool2d : module<avg_pool2d> {
  pool2d_options options;
  explicit avg_pool2d(const pool2d_options& o = {}) : options(o) {}
  template <class X>
  auto forward(const X& x) const {
    return tandem::avg_pool2d(x, options);
  }
};

}  // namespace tandem::nn
