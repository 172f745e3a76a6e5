#pragma once
// Batch and layer normalization.
//
// batch_norm1d ([N, C] inputs) and batch_norm2d ([N, C, H, W]) normalize
// each channel. In training they use the batch's mean and (biased) variance
// and update the running statistics with PyTorch's convention:
//   running = (1 - momentum) * running + momentum * batch
// (MindSpore's momentum m is PyTorch's 1 - m); the running variance takes
// the unbiased batch variance. In evaluation they use the running
// statistics. The layer is one node of a static graph whose work depends on
// the mode, so the same graph serves both, and the update runs on every
// call of it.
//
// layer_norm normalizes over the last axes (`normalized` extents) with a
// learned scale and shift per element; rms_norm by the root mean square,
// with a scale alone.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/ops/normalization.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::nn {

template <floating_element T, int Rank>
class batch_norm : public module<batch_norm<T, Rank>> {
  static_assert(Rank == 2 || Rank == 4, "tandem::nn::batch_norm: inputs are [N, C] (1d) or [N, C, H, W] (2d)");

 public:
  tensor<T> weight, bias, running_mean, running_var;
  double momentum, eps;

  explicit batch_norm(std::int64_t channels, double momentum_ = 0.1, double eps_ = 1e-5)
      : weight(ones<T>({check(channels)})),
        bias(zeros<T>({channels})),
        running_mean(zeros<T>({channels})),
        running_var(ones<T>({channels})),
        momentum(momentum_),
        eps(eps_) {
    this->register_parameter("weight", weight);
    this->register_parameter("bias", bias);
    this->register_buffer("running_mean", running_mean);
    this->register_buffer("running_var", running_var);
  }

  template <class X>
  auto forward(const X& x) const {
    return tandem::detail::call_or_trace(
        "batch_norm", tandem::detail::parameterized_layer_call<T>{{this, &normalized_by}, &parameters_of}, x);
  }

 private:
  static tensor<T> normalized_by(const void* self, const tensor<T>& x) {
    return static_cast<const batch_norm*>(self)->normalized(x);
  }
  static std::vector<tensor<T>> parameters_of(const void* self) {
    const auto& layer = *static_cast<const batch_norm*>(self);
    return {layer.weight, layer.bias};
  }

  static std::int64_t check(std::int64_t channels) {
    if (channels <= 0) throw value_error("tandem::nn::batch_norm: the channel count must be positive");
    return channels;
  }
  shape broadcast_shape() const {
    shape s{weight.shape(0)};
    for (int k = 2; k < Rank; ++k) s.push_back(1);
    return s;
  }
  void check_input(const tensor<T>& x) const {
    if (x.dim() != Rank || x.shape(1) != weight.shape(0))
      throw shape_error("tandem::nn::batch_norm: expected " + std::string(Rank == 2 ? "[N, C]" : "[N, C, H, W]") +
                        " with C = " + std::to_string(weight.shape(0)) + ", got " + to_string(x.shape()));
  }

  // Training: the batch's statistics (batch_normalize, one op forward and
  // backward) and the running statistics' update. Evaluating: the running
  // statistics.
  tensor<T> normalized(const tensor<T>& x) const {
    check_input(x);
    const shape channels = broadcast_shape();
    if (!this->is_training())
      return (x - running_mean.reshape(channels)) * (weight / sqrt(running_var + static_cast<T>(eps))).reshape(channels) +
             bias.reshape(channels);
    tensor<T> batch_mean, variance;
    tensor<T> out = batch_normalize(x, weight, bias, eps, &batch_mean, &variance);
    no_grad update;
    std::int64_t count = x.numel() / x.shape(1);
    T bessel = count > 1 ? static_cast<T>(count) / static_cast<T>(count - 1) : T(1);
    auto m = static_cast<T>(momentum);
    tensor<T> next_mean = running_mean * (1 - m) + batch_mean * m;
    tensor<T> next_var = running_var * (1 - m) + variance * bessel * m;
    // Handles share storage: writing through a copy updates the buffers
    // (forward is const, as a graph's function is).
    tensor<T> mean_buffer = running_mean, var_buffer = running_var;
    mean_buffer.assign(next_mean);
    var_buffer.assign(next_var);
    return out;
  }
};

template <floating_element T = float>
using batch_norm1d = batch_norm<T, 2>;
template <floating_element T = float>
using batch_norm2d = batch_norm<T, 4>;

template <floating_element T = float>
class layer_norm : public module<layer_norm<T>> {
 public:
  tensor<T> weight, bias;
  double eps;

  explicit layer_norm(shape normalized, double eps_ = 1e-5)
      : weight(ones<T>(check(normalized))), bias(zeros<T>(normalized)), eps(eps_) {
    this->register_parameter("weight", weight);
    this->register_parameter("bias", bias);
  }

  template <class X>
  auto forward(const X& x) const {
    return tandem::layer_norm(x, weight.shape(), weight, bias, eps);
  }

 private:
  static shape check(const shape& s) {
    if (s.empty()) throw value_error("tandem::nn::layer_norm: the normalized shape needs at least one axis");
    return s;
  }
};

// Root-mean-square normalization (Zhang and Sennrich) over the last axes,
// with a learned scale per element and no shift.
template <floating_element T = float>
class rms_norm : public module<rms_norm<T>> {
 public:
  tensor<T> weight;
  double eps;

  explicit rms_norm(shape normalized, double eps_ = 1e-6) : weight(ones<T>(check(normalized))), eps(eps_) {
    this->register_parameter("weight", weight);
  }

  template <class X>
  auto forward(const X& x) const {
    return tandem::rms_norm(x, weight.shape(), weight, eps);
  }

 private:
  static shape check(const shape& s) {
    if (s.empty()) throw value_error("tandem::nn::rms_norm: the normalized shape needs at least one axis");
    return s;
  }
};

}  // namespace tandem::nn
