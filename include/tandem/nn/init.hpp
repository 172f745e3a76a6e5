#pragma once
// Initializers: new values for a parameter, drawn from a seeded generator,
// written into it in place (every handle of the parameter sees them).
// fan_in and fan_out are read from the shape: a [in, out] matrix (linear's
// layout) or an [out, in, kh, kw] convolution kernel.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/random.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::nn::init {

struct fans {
  std::int64_t in, out;
};

template <class T>
fans fans_of(const tensor<T>& t) {
  if (t.dim() < 2)
    throw shape_error("tandem::nn::init: fan in and fan out need at least two axes (shape " + to_string(t.shape()) + ")");
  if (t.dim() == 2) return {t.shape(0), t.shape(1)};
  std::int64_t field = t.numel() / (t.shape(0) * t.shape(1));
  return {t.shape(1) * field, t.shape(0) * field};
}

template <class T>
void fill_from(tensor<T>& t, const tensor<T>& values) {
  no_grad plain;
  t.assign(values);
}

template <class T>
void uniform_(tensor<T>& t, double low, double high, generator& gen) {
  fill_from(t, uniform<T>(t.shape(), low, high, gen, t.device()));
}
template <class T>
void normal_(tensor<T>& t, double mean, double stddev, generator& gen) {
  fill_from(t, normal<T>(t.shape(), mean, stddev, gen, t.device()));
}
template <class T>
void constant_(tensor<T>& t, double value) {
  fill_from(t, full<T>(t.shape(), static_cast<T>(value)));
}

// Uniform in +-1/sqrt(fan_in): PyTorch's and MindSpore's default for the
// weights and biases of linear and convolution layers.
template <class T>
void fan_in_uniform_(tensor<T>& t, std::int64_t fan_in, generator& gen) {
  double bound = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(fan_in, 1)));
  uniform_(t, -bound, bound, gen);
}

// He et al.: variance 2 / fan_in, for layers followed by relu.
template <class T>
void kaiming_uniform_(tensor<T>& t, generator& gen) {
  double bound = std::sqrt(6.0 / static_cast<double>(fans_of(t).in));
  uniform_(t, -bound, bound, gen);
}
template <class T>
void kaiming_normal_(tensor<T>& t, generator& gen) {
  normal_(t, 0.0, std::sqrt(2.0 / static_cast<double>(fans_of(t).in)), gen);
}
// Glorot and Bengio: variance 2 / (fan_in + fan_out).
template <class T>
void xavier_uniform_(tensor<T>& t, generator& gen) {
  fans f = fans_of(t);
  double bound = std::sqrt(6.0 / static_cast<double>(f.in + f.out));
  uniform_(t, -bound, bound, gen);
}
template <class T>
void xavier_normal_(tensor<T>& t, generator& gen) {
  fans f = fans_of(t);
  normal_(t, 0.0, std::sqrt(2.0 / static_cast<double>(f.in + f.out)), gen);
}

}  // namespace tandem::nn::init
