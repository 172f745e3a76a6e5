#pragma once
// layer_norm and rms_norm: x normalized over its last axes (as many as
// `normalized` has), as compositions of mean, sqrt and arithmetic that
// run on tensors and symbolic values alike (in a static graph they fuse into
// the loops of their reductions).
//
// batch_variance: the biased variance of x over every axis but axis 1 (the
// channels of [N, C] or [N, C, H, W]), batch norm's statistic. One kernel
// reads x twice (the mean, then the squared deviations from it) where the
// composite var() makes four passes and two temporaries; its derivative,
// 2 (x - mean) g / count, is one pass too (a second derivative takes the
// composite route).
//
// batch_normalize: batch normalization in training, (x - mean) / sqrt(var +
// eps) * weight + bias per channel with the batch's statistics, as one op:
// the statistics (two reads of x) and one affine pass forward; backward,
// channel by channel, one read of g and x for the sums all three gradients
// need and one affine pass for x's while they are still cached, where the
// composite of mean, variance and broadcasts takes about ten passes over
// the activations and keeps their products. A second derivative takes the
// composite route.

#include <cmath>
#include <cstdint>
#include <array>
#include <atomic>
#include <string>
#include <tuple>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/record.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/normalization.hpp"
#include "tandem/kernels/cpu/reduce.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/ops/elementwise/map.hpp"
#include "tandem/ops/elementwise/math.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem {
namespace detail {

// The mean and biased variance per channel, kept as [1, C] or [1, C, 1, 1].
template <class T>
struct batch_moments {
  tensor<T> mean, variance;
};
// Normalized activations and their statistics, [C] each.
template <class T>
struct normalized_batch {
  tensor<T> out, mean, variance, inverse_std;
};

// On a GPU, the statistics and the normalization are compositions of ops
// with device kernels (ops/composed/normalization.hpp) that <tandem/cuda.hpp>
// installs here, values only.
template <class T>
inline std::atomic<batch_moments<T> (*)(const tensor<T>& x)> cuda_batch_moments_slot{nullptr};
template <class T>
inline std::atomic<normalized_batch<T> (*)(const tensor<T>& x, const tensor<T>& weight, const tensor<T>& bias,
                                           double eps)>
    cuda_batch_normalize_slot{nullptr};

// (x - m) * c, the variance's backward as one loop.
struct scaled_deviation_op : same_type_rule {
  static constexpr const char* name = "scaled_deviation";
  template <class V>
  TANDEM_HOST_DEVICE V operator()(const V& x, const V& m, const V& c) const {
    return (x - m) * c;
  }
};

template <class T>
struct batch_variance_op {
  static constexpr const char* name = "batch_variance";
  tensor<T> mean;  // the statistics' shape, detached
  T scale;         // 2 / count
  axes reduced;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X& x) const {
    // Differentiated again (create_graph records this), the gradient needs
    // the mean's own dependence on x, which the saved mean has lost: the
    // composite form then.
    if (is_grad_enabled()) return (x - tandem::mean(x, reduced, true)) * (g * scale);
    return elementwise(scaled_deviation_op{}, x, mean, g * scale);
  }
};

}  // namespace detail

// The variance over axes 0, 2, 3 (or 0 for [N, C]), kept as [1, C, 1, 1]
// (or [1, C]); `batch_mean`, when given, receives the mean it was taken
// around, of the same shape.
template <floating_element T>
tensor<T> batch_variance(const tensor<T>& x, tensor<T>* batch_mean = nullptr) {
  detail::profile_range range(profile_category::op, "batch_variance");
  if (range.recording()) detail::describe_inputs(range, x);
  if ((x.dim() != 2 && x.dim() != 4) || x.numel() == 0)
    throw shape_error("tandem::batch_variance: expected a non-empty [N, C] or [N, C, H, W], got " +
                      to_string(x.shape()));
  shape statistics{1, x.shape(1)};
  if (x.dim() == 4) {
    statistics.push_back(1);
    statistics.push_back(1);
  }
  tensor<T> centre, variance;
  if (!x.device().is_cpu()) {
    auto kernel = detail::cuda_batch_moments_slot<T>.load(std::memory_order_acquire);
    if (!kernel) detail::throw_missing_kernel("batch_variance", "batch statistics of these elements");
    detail::batch_moments<T> moments = kernel(x.detach());
    centre = moments.mean;
    variance = moments.variance;
  } else {
    tensor<T> values = x.detach().contiguous();
    centre = tensor<T>(statistics);
    variance = tensor<T>(statistics);
    std::int64_t inner = x.dim() == 4 ? x.shape(2) * x.shape(3) : 1;
    detail::middle_moments(values.data(), x.shape(0), x.shape(1), inner, centre.data(), variance.data());
  }
  if (batch_mean) *batch_mean = centre;
  T count = static_cast<T>(x.numel() / x.shape(1));
  detail::record(detail::batch_variance_op<T>{centre, T(2) / count, x.dim() == 4 ? axes{0, 2, 3} : axes{0}}, variance,
                 x);
  return variance;
}

namespace detail {

// [N, C] or [N, C, H, W] as [outer, kept, inner].
struct channel_layout {
  std::int64_t outer, kept, inner;
};
inline channel_layout channel_layout_of(const shape& x) {
  return {x[0], x[1], x.size() == 4 ? x[2] * x[3] : 1};
}

template <class T>
struct batch_normalize_op {
  static constexpr const char* name = "batch_normalize";
  tensor<T> mean, inverse_std;  // [C], detached
  double eps;

  template <std::size_t I, class G, class Y, class X, class W, class B>
  G derivative(const G& g, const Y& y, const X& x, const W& weight, const B& bias) const {
    std::array<bool, 3> wanted{};
    wanted[I] = true;
    return std::get<I>(gradients(wanted, g, y, x, weight, bias));
  }

  // The three gradients from one pass of sums (autograd/derivative.hpp,
  // has_joint_gradients).
  template <class G, class Y, class X, class W, class B>
  std::tuple<G, G, G> gradients(const std::array<bool, 3>& wanted, const G& g, const Y&, const X& x, const W& weight,
                                const B&) const {
    if (is_grad_enabled() || !x.device().is_cpu())
      return {wanted[0] ? composite_derivative<0>(g, x, weight) : G(),
              wanted[1] ? composite_derivative<1>(g, x, weight) : G(),
              wanted[2] ? composite_derivative<2>(g, x, weight) : G()};
    const channel_layout l = channel_layout_of(x.shape());
    tensor<T> dy = g.detach().contiguous(), values = x.detach().contiguous(), w = weight.detach().contiguous();
    std::vector<double> sum_g(static_cast<std::size_t>(l.kept)), sum_gx(static_cast<std::size_t>(l.kept));
    std::tuple<G, G, G> out;
    tensor<T> dx = wanted[0] ? tensor<T>(x.shape()) : tensor<T>();
    batch_norm_backward(dy.data(), values.data(), l.outer, l.kept, l.inner, mean.data(), inverse_std.data(), w.data(),
                        sum_g.data(), sum_gx.data(), wanted[0] ? dx.data() : nullptr);
    if (wanted[2]) std::get<2>(out) = channel_values<T>(l.kept, [&](std::int64_t k) { return sum_g[k]; });
    if (wanted[1])
      std::get<1>(out) =
          channel_values<T>(l.kept, [&](std::int64_t k) { return sum_gx[k] * double(inverse_std.data()[k]); });
    if (wanted[0]) std::get<0>(out) = dx;
    return out;
  }

 private:
  template <class U, class F>
  static tensor<U> channel_values(std::int64_t kept, F value) {
    tensor<U> out(shape{kept});
    for (std::int64_t k = 0; k < kept; ++k) out.data()[k] = static_cast<U>(value(k));
    return out;
  }

  // The same derivatives from differentiable ops, for create_graph.
  template <std::size_t I, class G, class X, class W>
  auto composite_derivative(const G& g, const X& x, const W& weight) const {
    const bool images = x.dim() == 4;
    const axes reduced = images ? axes{0, 2, 3} : axes{0};
    const shape per_channel = images ? shape{x.shape(1), 1, 1} : shape{x.shape(1)};
    auto centred = x - tandem::mean(x, reduced, true);
    auto r = rsqrt(tandem::mean(centred * centred, reduced, true) + static_cast<T>(eps));
    auto normalized = centred * r;
    if constexpr (I == 2) return sum(g, reduced);
    else if constexpr (I == 1) return sum(g * normalized, reduced);
    else
      return weight.reshape(per_channel) * r *
             (g - tandem::mean(g, reduced, true) - normalized * tandem::mean(g * normalized, reduced, true));
  }
};

}  // namespace detail

// Batch normalization in training: x ([N, C] or [N, C, H, W]) normalized per
// channel with the batch's mean and biased variance, times weight plus bias
// ([C] each). `batch_mean` and `batch_var`, when given, receive the
// statistics ([C]) for the running averages.
template <floating_element T>
tensor<T> batch_normalize(const tensor<T>& x, const tensor<T>& weight, const tensor<T>& bias, double eps,
                          tensor<T>* batch_mean = nullptr, tensor<T>* batch_var = nullptr) {
  detail::profile_range range(profile_category::op, "batch_normalize");
  if (range.recording()) detail::describe_inputs(range, x, weight, bias);
  if ((x.dim() != 2 && x.dim() != 4) || x.numel() == 0 || weight.shape() != shape{x.shape(1)} ||
      bias.shape() != shape{x.shape(1)})
    throw shape_error("tandem::batch_normalize: expected a non-empty [N, C] or [N, C, H, W] input and a [C] weight "
                      "and bias, got " +
                      to_string(x.shape()) + ", " + to_string(weight.shape()) + " and " + to_string(bias.shape()));
  if (!(eps > 0)) throw value_error("tandem::batch_normalize: eps must be positive");
  if (!detail::common_device("batch_normalize", {detail::place_of(x), detail::place_of(weight), detail::place_of(bias)})
           .is_cpu()) {
    auto kernel = detail::cuda_batch_normalize_slot<T>.load(std::memory_order_acquire);
    if (!kernel) detail::throw_missing_kernel("batch_normalize", "batch normalization of these elements");
    detail::normalized_batch<T> batch = kernel(x.detach(), weight.detach(), bias.detach(), eps);
    if (batch_mean) *batch_mean = batch.mean;
    if (batch_var) *batch_var = batch.variance;
    detail::record(detail::batch_normalize_op<T>{batch.mean, batch.inverse_std, eps}, batch.out, x, weight, bias);
    return batch.out;
  }
  const detail::channel_layout l = detail::channel_layout_of(x.shape());
  tensor<T> values = x.detach().contiguous(), w = weight.detach().contiguous(), b = bias.detach().contiguous();
  const shape channels{l.kept};
  tensor<T> centre(channels), variance(channels), inverse_std(channels), scale(channels), shift(channels);
  detail::middle_moments(values.data(), l.outer, l.kept, l.inner, centre.data(), variance.data());
  for (std::int64_t k = 0; k < l.kept; ++k) {
    const double r = 1.0 / std::sqrt(double(variance.data()[k]) + eps);
    inverse_std.data()[k] = static_cast<T>(r);
    scale.data()[k] = static_cast<T>(double(w.data()[k]) * r);
    shift.data()[k] = static_cast<T>(double(b.data()[k]) - double(centre.data()[k]) * double(w.data()[k]) * r);
  }
  tensor<T> out(x.shape());
  detail::affine_per_channel(values.data(), l.outer, l.kept, l.inner, scale.data(), shift.data(), out.data());
  if (batch_mean) *batch_mean = centre;
  if (batch_var) *batch_var = variance;
  detail::record(detail::batch_normalize_op<T>{centre, inverse_std, eps}, out, x, weight, bias);
  return out;
}

namespace detail {
// The last `count` axes, and a check that they are x's trailing extents.
template <class X>
axes normalized_axes(const X& x, const shape& normalized, const char* op) {
  if (normalized.empty())
    throw value_error(std::string("tandem::") + op + ": the normalized shape needs at least one axis");
  if constexpr (is_tensor_v<X>) {
    bool fits = x.dim() >= static_cast<std::int64_t>(normalized.size());
    for (std::size_t a = 0; fits && a < normalized.size(); ++a)
      fits = x.shape()[x.shape().size() - normalized.size() + a] == normalized[a];
    if (!fits)
      throw shape_error(std::string("tandem::") + op + ": normalized shape " + to_string(normalized) +
                        " is not the end of the input's shape " + to_string(x.shape()));
  }
  std::vector<std::int64_t> last;
  for (std::int64_t k = -static_cast<std::int64_t>(normalized.size()); k < 0; ++k) last.push_back(k);
  return axes(last);
}
}  // namespace detail

// (x - mean) / sqrt(var + eps) over the last axes (biased variance), as
// torch.nn.functional.layer_norm without the affine part.
template <class X>
  requires detail::has_elements<X>
auto layer_norm(const X& x, const shape& normalized, double eps = 1e-5) {
  const axes last = detail::normalized_axes(x, normalized, "layer_norm");
  auto centred = x - mean(x, last, true);
  return centred / sqrt(mean(centred * centred, last, true) + eps);
}
// ... times weight plus bias, both of the normalized shape.
template <class X, class W, class B>
  requires detail::has_elements<X> && detail::has_elements<W> && detail::has_elements<B>
auto layer_norm(const X& x, const shape& normalized, const W& weight, const B& bias, double eps = 1e-5) {
  return layer_norm(x, normalized, eps) * weight + bias;
}

// x / sqrt(mean(x^2) + eps) over the last axes, times weight.
template <class X, class W>
  requires detail::has_elements<X> && detail::has_elements<W>
auto rms_norm(const X& x, const shape& normalized, const W& weight, double eps = 1e-6) {
  const axes last = detail::normalized_axes(x, normalized, "rms_norm");
  return x / sqrt(mean(x * x, last, true) + eps) * weight;
}

}  // namespace tandem
