#pragma once
// max_pool2d and avg_pool2d and their gradients composed of ops with
// device kernels, with the host kernels' rules: padding never wins a max,
// the first maximum of a window (NaN first of all) takes its gradient, and
// an average divides by the whole window.

#include <cstdint>
#include <limits>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/ops/composed/windows.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/pool.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

inline window_grid window_grid_of(const pool_geometry& g) {
  return {g.out_h, g.out_w, g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, 1, 1};
}

// The maximum of each window and the tap that holds it.
template <class T>
pooled_maxima<T> composed_max_pool2d(const tensor<T>& x, const pool_geometry& g) {
  no_grad values_only;
  const window_grid grid = window_grid_of(g);
  tensor<T> out = max(windows_of(padded_images(x, g.pad_h, g.pad_w, -std::numeric_limits<T>::infinity()), grid),
                      axes{2, 3});
  // A tap holds the maximum where it equals it (or both are NaN) inside the
  // image; `open` (0 or 1) says no earlier tap did.
  tensor<T> values = windows_of(padded_images(x, g.pad_h, g.pad_w, T(0)), grid);
  tensor<T> inside = windows_of(padded_images(ones<T>(x.shape(), x.device()), g.pad_h, g.pad_w, T(0)), grid);
  tensor<T> open = ones_like(out), nan_peak = isnan(out).template astype<T>(), taps = zeros_like(out);
  for (std::int64_t i = 0; i < g.kernel_h; ++i)
    for (std::int64_t j = 0; j < g.kernel_w; ++j) {
      tensor<T> v = values.select(2, i).select(2, j);
      tensor<T> peak = maximum((v == out).template astype<T>(), isnan(v).template astype<T>() * nan_peak);
      tensor<T> takes = peak * inside.select(2, i).select(2, j) * open;
      taps = taps + takes * static_cast<T>(i * g.kernel_w + j);
      open = open - takes;
    }
  return {out, taps.template astype<std::int64_t>()};
}

template <class T>
tensor<T> composed_avg_pool2d(const tensor<T>& x, const pool_geometry& g) {
  no_grad values_only;
  tensor<T> padded = padded_images(x, g.pad_h, g.pad_w, T(0));
  return sum(windows_of(padded, window_grid_of(g)), axes{2, 3}) * (T(1) / static_cast<T>(g.kernel_h * g.kernel_w));
}

// Each output's gradient goes to the tap that held its maximum.
template <class T>
tensor<T> composed_max_pool2d_gradient(const tensor<T>& grad, const tensor<std::int64_t>& taps, const pool_geometry& g) {
  no_grad values_only;
  return add_through_windows<T>({grad.shape(0), grad.shape(1), g.height, g.width}, g.pad_h, g.pad_w, window_grid_of(g),
                                grad.device(), [&](std::int64_t i, std::int64_t j) {
                                  return where(taps == i * g.kernel_w + j, grad, T(0));
                                });
}

template <class T>
tensor<T> composed_avg_pool2d_gradient(const tensor<T>& grad, const pool_geometry& g) {
  no_grad values_only;
  tensor<T> share = grad * (T(1) / static_cast<T>(g.kernel_h * g.kernel_w));
  return add_through_windows<T>({grad.shape(0), grad.shape(1), g.height, g.width}, g.pad_h, g.pad_w, window_grid_of(g),
                                grad.device(), [&](std::int64_t, std::int64_t) { return share; });
}

}  // namespace tandem::detail
