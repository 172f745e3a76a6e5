#pragma once
// nn::conv2d and the pooling layers. conv2d's kernel is [out, in / groups,
// kh, kw] and, like its bias, starts uniform in +-1/sqrt(fan_in) (PyTorch's
// default) from the generator given. A layer without bias holds an empty
// one, which conv2d skips.

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
        bias(shape{with_bias ? out_channels : 0}),
        options(opts) {
    std::int64_t fan_in = init::fans_of(weight).in;
    init::fan_in_uniform_(weight, fan_in, gen);
    this->register_parameter("weight", weight);
    if (with_bias) {
      init::fan_in_uniform_(bias, fan_in, gen);
      this->register_parameter("bias", bias);
    }
  }

  template <class X>
  auto forward(const X& x) const {
    return tandem::conv2d(x, weight, bias, options);
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

// A pooling layer: its options, and the op of the same name.
template <class Pool>
struct pool_layer : module<pool_layer<Pool>> {
  pool2d_options options;
  explicit pool_layer(const pool2d_options& o = {}) : options(o) {}
  template <class X>
  auto forward(const X& x) const {
    return Pool{}(x, options);
  }
};

namespace detail {
struct max_pool2d_of {
  auto operator()(const auto& x, const pool2d_options& o) const { return tandem::max_pool2d(x, o); }
};
struct avg_pool2d_of {
  auto operator()(const auto& x, const pool2d_options& o) const { return tandem::avg_pool2d(x, o); }
};
}  // namespace detail

using max_pool2d = pool_layer<detail::max_pool2d_of>;
using avg_pool2d = pool_layer<detail::avg_pool2d_of>;

}  // namespace tandem::nn
