#pragma once
// conv2d and its two gradients composed of ops with device kernels: the
// receptive fields gathered as columns by copying a strided view of the
// padded images (im2col), then batched matrix products per group, as the
// host kernel does (kernels/cpu/conv.hpp); the input's gradient adds the
// columns back one kernel tap at a time (col2im: within a tap, no two
// outputs touch the same pixel).

#include <cstdint>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/conv.hpp"
#include "tandem/ops/composed/windows.hpp"
#include "tandem/ops/linalg.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

inline window_grid window_grid_of(const conv_geometry& g) {
  return {g.out_h, g.out_w, g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w};
}

// The columns of images x: [N, groups, depth, OH OW], depth = C / groups
// kh kw, in the order of the kernel's [out, in / groups, kh, kw].
template <class T>
tensor<T> image_columns(const tensor<T>& x, const conv_layout& l) {
  const conv_geometry& g = l.g;
  tensor<T> padded = padded_images(x, g.pad_h, g.pad_w, T(0));
  return windows_of(padded, window_grid_of(g)).contiguous().reshape({g.batch, l.groups, l.depth(), l.plane()});
}

template <class T>
tensor<T> composed_conv2d(const tensor<T>& x, const tensor<T>& w, const tensor<T>* bias, const conv_layout& l) {
  no_grad values_only;
  const conv_geometry& g = l.g;
  tensor<T> kernel = w.contiguous().reshape({1, l.groups, l.per_group(), l.depth()});
  tensor<T> out = matmul(kernel, image_columns(x, l)).reshape({g.batch, l.out_channels, g.out_h, g.out_w});
  if (bias && bias->numel() > 0) out = out + bias->reshape({1, l.out_channels, 1, 1});
  return out;
}

// d x = col2im(W^T dy), per group.
template <class T>
tensor<T> composed_conv2d_input_gradient(const tensor<T>& grad, const tensor<T>& w, const conv_layout& l) {
  no_grad values_only;
  const conv_geometry& g = l.g;
  tensor<T> dy = grad.contiguous().reshape({g.batch, l.groups, l.per_group(), l.plane()});
  tensor<T> kernel = w.contiguous().reshape({1, l.groups, l.per_group(), l.depth()}).transpose(-1, -2);
  tensor<T> columns = matmul(kernel, dy).reshape({g.batch, g.channels, g.kernel_h, g.kernel_w, g.out_h, g.out_w});
  return add_through_windows<T>({g.batch, g.channels, g.height, g.width}, g.pad_h, g.pad_w, window_grid_of(g),
                                grad.device(), [&](std::int64_t i, std::int64_t j) {
                                  return columns.select(2, i).select(2, j);
                                });
}

// d W = sum over images of dy columns^T, per group.
template <class T>
tensor<T> composed_conv2d_kernel_gradient(const tensor<T>& grad, const tensor<T>& x, const conv_layout& l,
                                          const shape& w_shape) {
  no_grad values_only;
  const conv_geometry& g = l.g;
  tensor<T> dy = grad.contiguous().reshape({g.batch, l.groups, l.per_group(), l.plane()});
  return sum(matmul(dy, image_columns(x, l).transpose(-1, -2)), 0).reshape(w_shape);
}

}  // namespace tandem::detail
