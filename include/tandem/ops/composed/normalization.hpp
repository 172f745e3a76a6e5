#pragma once
// Batch statistics and batch normalization composed of ops with device
// kernels: per-channel means over every axis but 1, the biased variance
// around them, and one affine pass. Their gradients need no composition of
// their own: ops/normalization.hpp's derivatives are differentiable ops.

#include <cstdint>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/normalization.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

// The mean and biased variance of x [N, C] or [N, C, H, W] per channel,
// kept as [1, C] or [1, C, 1, 1].
template <class T>
batch_moments<T> composed_batch_moments(const tensor<T>& x) {
  no_grad values_only;
  const axes reduced = x.dim() == 4 ? axes{0, 2, 3} : axes{0};
  tensor<T> centre = mean(x, reduced, true);
  return {centre, mean(square(x - centre), reduced, true)};
}

template <class T>
normalized_batch<T> composed_batch_normalize(const tensor<T>& x, const tensor<T>& weight, const tensor<T>& bias,
                                             double eps) {
  no_grad values_only;
  const std::int64_t channels = x.shape(1);
  const shape per_channel = x.dim() == 4 ? shape{1, channels, 1, 1} : shape{1, channels};
  batch_moments<T> moments = composed_batch_moments(x);
  tensor<T> inverse_std = rsqrt(moments.variance + static_cast<T>(eps));
  tensor<T> out = (x - moments.mean) * (inverse_std * weight.reshape(per_channel)) + bias.reshape(per_channel);
  return {out, moments.mean.reshape({channels}), moments.variance.reshape({channels}), inverse_std.reshape({channels})};
}

}  // namespace tandem::detail
