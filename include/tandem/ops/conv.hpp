#pragma once
// conv2d over NCHW images with a [out, in / groups, kh, kw] kernel: stride,
// padding, dilation and groups, as in PyTorch and MindSpore (pad mode "pad"),
// with an optional bias per output channel. On the CPU, a stride-1 convolution
// and its two gradients run as direct convolutions where four channels or more
// are computed (the input's gradient is a convolution of the output's with the
// kernel flipped); the rest as one GEMM per image and group on its receptive
// fields laid out as columns, their gradients W^T times the output's gradient
// added back by col2im and the output's gradient times the columns transposed
// (kernels/cpu/conv.hpp). Those two are first derivatives only:
// differentiating them again throws. The bias's gradient is a sum.

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <string>

#include "tandem/core/error.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/conv.hpp"
#include "tandem/kernels/cpu/gemm.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/ops/elementwise/map.hpp"
#include "tandem/ops/rounded_for_products.hpp"
#include "tandem/ops/reduce.hpp"

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

inline conv_layout conv_layout_of(const shape& x, const shape& w, const conv2d_options& o) {
  return {conv_geometry_of(x, w, o), w[0], o.groups};
}

// On a GPU, the convolution and its gradients are compositions of ops with
// device kernels (ops/composed/conv.hpp) that <tandem/cuda.hpp> installs
// here, values only.
template <class T>
inline std::atomic<tensor<T> (*)(const tensor<T>& x, const tensor<T>& w, const tensor<T>* bias, const conv_layout& l)>
    cuda_conv2d_slot{nullptr};
template <class T>
inline std::atomic<tensor<T> (*)(const tensor<T>& grad, const tensor<T>& w, const conv_layout& l)>
    cuda_conv2d_input_gradient_slot{nullptr};
template <class T>
inline std::atomic<tensor<T> (*)(const tensor<T>& grad, const tensor<T>& x, const conv_layout& l, const shape& w_shape)>
    cuda_conv2d_kernel_gradient_slot{nullptr};

template <class Slot>
auto conv_kernel_in(Slot& slot, const char* what) {
  auto kernel = slot.load(std::memory_order_acquire);
  if (!kernel) throw_missing_kernel("conv2d", what);
  return kernel;
}

template <class T>
tensor<T> conv2d_input_gradient(const tensor<T>& grad, const tensor<T>& w, const shape& x_shape,
                                const conv2d_options& o) {
  profile_range range(profile_category::op, "conv2d input gradient");
  if (range.recording()) describe_inputs(range, grad, w);
  conv_layout l = conv_layout_of(x_shape, w.shape(), o);
  tensor<T> dx;
  if (!grad.device().is_cpu()) {
    refuse_autocast_on_device<T>("conv2d");
    dx = conv_kernel_in(cuda_conv2d_input_gradient_slot<T>, "the input's gradient of these elements")(grad.detach(),
                                                                                                       w.detach(), l);
  } else {
    tensor<T> dy = rounded_for_products(grad.detach().contiguous()),
              kernel = rounded_for_products(w.detach().contiguous());
    dx = tensor<T>(x_shape);
    conv2d_backward_input(l, dy.data(), kernel.data(), dx.data());
  }
  record(conv2d_input_gradient_op{}, dx, grad, w);
  return dx;
}

template <class T>
tensor<T> conv2d_kernel_gradient(const tensor<T>& grad, const tensor<T>& x, const shape& w_shape,
                                 const conv2d_options& o) {
  profile_range range(profile_category::op, "conv2d kernel gradient");
  if (range.recording()) describe_inputs(range, grad, x);
  conv_layout l = conv_layout_of(x.shape(), w_shape, o);
  tensor<T> dw;
  if (!grad.device().is_cpu()) {
    refuse_autocast_on_device<T>("conv2d");
    dw = conv_kernel_in(cuda_conv2d_kernel_gradient_slot<T>, "the kernel's gradient of these elements")(
        grad.detach(), x.detach(), l, w_shape);
  } else {
    tensor<T> dy = rounded_for_products(grad.detach().contiguous()),
              image = rounded_for_products(x.detach().contiguous());
    dw = tensor<T>(w_shape);
    conv2d_backward_kernel(l, dy.data(), image.data(), dw.data());
  }
  record(conv2d_kernel_gradient_op{}, dw, grad, x);
  return dw;
}

template <class T>
tensor<T> conv2d(const tensor<T>& x, const tensor<T>& w, const tensor<T>* bias, const conv2d_options& options) {
  profile_range range(profile_category::op, "conv2d");
  if (range.recording()) describe_inputs(range, x, w);
  conv_layout l = conv_layout_of(x.shape(), w.shape(), options);
  if (bias && bias->numel() > 0 && bias->shape() != shape{w.shape(0)})
    throw shape_error("tandem::conv2d: the bias must have shape [" + std::to_string(w.shape(0)) + "] (one per output "
                      "channel) or no elements, not " + to_string(bias->shape()));
  const bool has_bias = bias && bias->numel() > 0;
  const device where =
      common_device("conv2d", {place_of(x), place_of(w), has_bias ? place_of(*bias) : operand_place{nullptr, device::cpu}});
  if (!where.is_cpu()) {
    refuse_autocast_on_device<T>("conv2d");
    tensor<T> offsets = has_bias ? bias->detach() : tensor<T>();
    return conv_kernel_in(cuda_conv2d_slot<T>, "convolutions of these elements")(x.detach(), w.detach(),
                                                                                 has_bias ? &offsets : nullptr, l);
  }
  tensor<T> image = rounded_for_products(x.detach().contiguous()),
            kernel = rounded_for_products(w.detach().contiguous());
  tensor<T> offsets = bias && bias->numel() > 0 ? bias->detach().contiguous() : tensor<T>();
  tensor<T> out(shape{l.g.batch, l.out_channels, l.g.out_h, l.g.out_w});
  conv2d_forward(l, image.data(), kernel.data(), offsets.numel() > 0 ? offsets.data() : nullptr, out.data());
  return out;
}

}  // namespace detail

struct conv2d_op {
  static constexpr const char* name = "conv2d";
  conv2d_options options;
  template <std::size_t I, class G, class Y, class X, class W, class... B>
  auto derivative(const G& g, const Y&, const X& x, const W& w, const B&... b) const {
    if constexpr (I == 0) return detail::conv2d_input_gradient(g, w, x.shape(), options);
    else if constexpr (I == 1) return detail::conv2d_kernel_gradient(g, x, w.shape(), options);
    else return bias_gradient(g, b...);
  }

 private:
  // An empty bias (no bias) gets an empty gradient.
  template <class G, class B>
  static G bias_gradient(const G& g, const B& bias) {
    if (bias.numel() == 0) return G(shape{0});
    return sum(g, axes{0, 2, 3});
  }
};

template <floating_element T>
tensor<T> conv2d(const tensor<T>& x, const tensor<T>& w, const conv2d_options& options = {}) {
  tensor<T> out = detail::conv2d(x, w, static_cast<const tensor<T>*>(nullptr), options);
  detail::record(conv2d_op{options}, out, x, w);
  return out;
}

// With a bias per output channel, added to the output (a bias with no
// elements adds nothing: a layer without bias passes one so). The bias is
// deduced, never built from braces, so conv2d(x, w, {.stride = ...}) stays
// the call without one.
template <floating_element T, class B>
  requires std::same_as<B, tensor<T>>
tensor<T> conv2d(const tensor<T>& x, const tensor<T>& w, const B& bias, const conv2d_options& options = {}) {
  tensor<T> out = detail::conv2d(x, w, &bias, options);
  detail::record(conv2d_op{options}, out, x, w, bias);
  return out;
}

}  // namespace tandem
