#pragma once
// batch_variance: the biased variance of x over every axis but axis 1 (the
// channels of [N, C] or [N, C, H, W]), batch norm's statistic. One kernel
// reads x twice (the mean, then the squared deviations from it) where the
// composite var() makes four passes and two temporaries; its derivative,
// 2 (x - mean) g / count, is one pass too (a second derivative takes the
// composite route).

#include <cstdint>
#include <string>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/record.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/reduce.hpp"
#include "tandem/ops/elementwise/map.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem {
namespace detail {

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
  if ((x.dim() != 2 && x.dim() != 4) || x.numel() == 0)
    throw shape_error("tandem::batch_variance: expected a non-empty [N, C] or [N, C, H, W], got " +
                      to_string(x.shape()));
  shape statistics{1, x.shape(1)};
  if (x.dim() == 4) {
    statistics.push_back(1);
    statistics.push_back(1);
  }
  tensor<T> values = x.detach().contiguous();
  tensor<T> centre(statistics), variance(statistics);
  std::int64_t inner = x.dim() == 4 ? x.shape(2) * x.shape(3) : 1;
  detail::middle_moments(values.data(), x.shape(0), x.shape(1), inner, centre.data(), variance.data());
  if (batch_mean) *batch_mean = centre;
  T count = static_cast<T>(x.numel() / x.shape(1));
  detail::record(detail::batch_variance_op<T>{centre, T(2) / count, x.dim() == 4 ? axes{0, 2, 3} : axes{0}}, variance,
                 x);
  return variance;
}

}  // namespace tandem
