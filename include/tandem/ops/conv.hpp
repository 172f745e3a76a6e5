#pragma once
// conv2d over NCHW images with a [out, in / groups, kh, kw] kernel: stride,
// padding, dilation and groups, as in PyTorch and MindSpore (pad mode
// "pad"). It runs as one GEMM per group over the whole batch: im2col lays
// the receptive fields out as columns (kernels/cpu/conv.hpp), the kernel
// multiplies them, and the product is put back in NCHW order. Its
// derivative is two more GEMMs: the input's gradient is W^T times the
// output's gradient, added back into images by col2im; the kernel's is the
// output's gradient times the columns transposed. Those two are first
// derivatives only: differentiating them again throws.

#include <array>
#include <cstdint>
#include <string>

#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/conv.hpp"
#include "tandem/kernels/cpu/gemm.hpp"

namespace tandem {

struct conv2d_options {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
};

namespace detail {

// The two gradients' own ops: recorded so that differentiating them again
// (create_graph) says so, rather than giving zero.
struct conv2d_input_gradient_op {
  static constexpr const char* name = "conv2d input gradient";
};
struct conv2d_kernel_gradient_op {
  static constexpr const char* name = "conv2d kernel gradient";
};

inline conv_geometry conv_geometry_of(const shape& x, const shape& w, const conv2d_options& o) {
  auto fail = [&](const std::string& why) {
    return shape_error("tandem::conv2d: " + why + " (input " + to_string(x) + ", kernel " + to_string(w) + ")");
  };
  if (x.size() != 4 || w.size() != 4) throw fail("expected an NCHW input and an [out, in / groups, kh, kw] kernel");
  for (int k = 0; k < 2; ++k)
    if (o.stride[k] < 1 || o.dilation[k] < 1 || o.padding[k] < 0)
      throw fail("stride and dilation must be positive and padding not negative");
  if (o.groups < 1 || x[1] % o.groups != 0 || w[0] % o.groups != 0)
    throw fail("groups (" + std::to_string(o.groups) + ") must divide the input and output channels");
  if (w[1] * o.groups != x[1]) throw fail("the kernel's input channels times groups must equal the input's channels");
  conv_geometry g{x[0], x[1], x[2], x[3], w[2], w[3], o.stride[0], o.stride[1], o.padding[0],
                  o.padding[1], o.dilation[0], o.dilation[1], 0, 0};
  std::int64_t reach_h = o.dilation[0] * (w[2] - 1) + 1, reach_w = o.dilation[1] * (w[3] - 1) + 1;
  if (x[2] + 2 * o.padding[0] < reach_h || x[3] + 2 * o.padding[1] < reach_w)
    throw fail("the kernel is larger than the padded input");
  g.out_h = (x[2] + 2 * o.padding[0] - reach_h) / o.stride[0] + 1;
  g.out_w = (x[3] + 2 * o.padding[1] - reach_w) / o.stride[1] + 1;
  return g;
}

// The output's gradient [N, O, OH, OW] as the [O, N * OH * OW] matrix the
// GEMMs read.
template <class T>
tensor<T> output_matrix(const tensor<T>& g) {
  return g.detach().permute(std::vector<std::int64_t>{1, 0, 2, 3}).contiguous();
}

template <class T>
tensor<T> columns_of(const tensor<T>& x, const conv_geometry& g) {
  tensor<T> image = x.detach().contiguous();
  tensor<T> columns(shape{g.rows(), g.columns()});
  im2col(g, image.data(), columns.data());
  return columns;
}

template <class T>
tensor<T> conv2d_input_gradient(const tensor<T>& grad, const tensor<T>& w, const shape& x_shape,
                                const conv2d_options& o) {
  conv_geometry g = conv_geometry_of(x_shape, w.shape(), o);
  tensor<T> dy = output_matrix(grad), kernel = w.detach().contiguous();
  std::int64_t out_per_group = w.shape(0) / o.groups, k = g.rows() / o.groups, n = g.columns();
  tensor<T> columns(shape{g.rows(), n});
  for (std::int64_t group = 0; group < o.groups; ++group)
    gemm<T>(k, n, out_per_group, {kernel.data() + group * out_per_group * k, 1, k},
            {dy.data() + group * out_per_group * n, n, 1}, columns.data() + group * k * n, n);
  tensor<T> dx(x_shape);
  col2im(g, columns.data(), dx.data());
  record(conv2d_input_gradient_op{}, dx, grad, w);
  return dx;
}

template <class T>
tensor<T> conv2d_kernel_gradient(const tensor<T>& grad, const tensor<T>& x, const shape& w_shape,
                                 const conv2d_options& o) {
  conv_geometry g = conv_geometry_of(x.shape(), w_shape, o);
  tensor<T> dy = output_matrix(grad), columns = columns_of(x, g);
  std::int64_t out_per_group = w_shape[0] / o.groups, k = g.rows() / o.groups, n = g.columns();
  tensor<T> dw(w_shape);
  for (std::int64_t group = 0; group < o.groups; ++group)
    gemm<T>(out_per_group, k, n, {dy.data() + group * out_per_group * n, n, 1},
            {columns.data() + group * k * n, 1, n}, dw.data() + group * out_per_group * k, k);
  record(conv2d_kernel_gradient_op{}, dw, grad, x);
  return dw;
}

}  // namespace detail

struct conv2d_op {
  static constexpr const char* name = "conv2d";
  conv2d_options options;
  template <std::size_t I, class G, class Y, class X, class W>
  auto derivative(const G& g, const Y&, const X& x, const W& w) const {
    if constexpr (I == 0) return detail::conv2d_input_gradient(g, w, x.shape(), options);
    else return detail::conv2d_kernel_gradient(g, x, w.shape(), options);
  }
};

template <floating_element T>
tensor<T> conv2d(const tensor<T>& x, const tensor<T>& w, const conv2d_options& options = {}) {
  detail::conv_geometry g = detail::conv_geometry_of(x.shape(), w.shape(), options);
  tensor<T> columns = detail::columns_of(x, g), kernel = w.detach().contiguous();
  std::int64_t out_channels = w.shape(0), out_per_group = out_channels / options.groups;
  std::int64_t k = g.rows() / options.groups, n = g.columns();
  tensor<T> product(shape{out_channels, n});
  for (std::int64_t group = 0; group < options.groups; ++group)
    detail::gemm<T>(out_per_group, n, k, {kernel.data() + group * out_per_group * k, k, 1},
                    {columns.data() + group * k * n, n, 1}, product.data() + group * out_per_group * n, n);
  tensor<T> out = product.reshape({out_channels, g.batch, g.out_h * g.out_w})
                      .permute(std::vector<std::int64_t>{1, 0, 2})
                      .contiguous()
                      .reshape({g.batch, out_channels, g.out_h, g.out_w});
  detail::record(conv2d_op{options}, out, x, w);
  return out;
}

}  // namespace tandem
