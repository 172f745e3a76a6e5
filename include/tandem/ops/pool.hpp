#pragma once
// max_pool2d and avg_pool2d over NCHW images: a kernel, a stride (the
// kernel's size unless given) and zero padding, as in PyTorch. Padding never
// wins a max; an average divides by the whole window, padding included
// (PyTorch's count_include_pad). Each (image, channel) plane runs on one
// thread. max_pool2d keeps, per output, where its maximum is (the first one
// on ties), and its gradient goes there; the 2x2, stride-2 pooling of CNNs
// runs in SIMD batches (kernels/cpu/pool.hpp).

#include <array>
#include <atomic>
#include <cstdint>
#include <algorithm>
#include <memory>
#include <string>

#include "tandem/core/allocator.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/pool.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"

namespace tandem {

struct pool2d_options {
  std::array<std::int64_t, 2> kernel{2, 2};
  std::array<std::int64_t, 2> stride{0, 0};  // 0: the kernel's size
  std::array<std::int64_t, 2> padding{0, 0};
};

namespace detail {

struct pool_geometry {
  std::int64_t planes, height, width, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, out_h, out_w;
};

inline pool_geometry pool_geometry_of(const char* op, const shape& x, const pool2d_options& o) {
  auto fail = [&](const std::string& why) {
    return shape_error(std::string("tandem::") + op + ": " + why + " (input " + to_string(x) + ")");
  };
  if (x.size() != 4) throw fail("expected an NCHW input");
  std::array<std::int64_t, 2> stride{o.stride[0] ? o.stride[0] : o.kernel[0], o.stride[1] ? o.stride[1] : o.kernel[1]};
  for (int k = 0; k < 2; ++k) {
    if (o.kernel[k] < 1 || stride[k] < 1 || o.padding[k] < 0)
      throw fail("kernel and stride must be positive and padding not negative");
    if (2 * o.padding[k] > o.kernel[k]) throw fail("padding may be at most half the kernel");
  }
  if (x[2] + 2 * o.padding[0] < o.kernel[0] || x[3] + 2 * o.padding[1] < o.kernel[1])
    throw fail("the kernel is larger than the padded input");
  return {x[0] * x[1],       x[2],
          x[3],              o.kernel[0],
          o.kernel[1],       stride[0],
          stride[1],         o.padding[0],
          o.padding[1],      (x[2] + 2 * o.padding[0] - o.kernel[0]) / stride[0] + 1,
          (x[3] + 2 * o.padding[1] - o.kernel[1]) / stride[1] + 1};
}

inline shape pooled_shape(const shape& x, const pool_geometry& g) { return {x[0], x[1], g.out_h, g.out_w}; }

// The part of output (y, x)'s window that lies inside the image: rows
// [h0, h1) and columns [w0, w1).
struct window {
  std::int64_t h0, h1, w0, w1;
};
inline window window_at(const pool_geometry& g, std::int64_t y, std::int64_t x) {
  std::int64_t h = y * g.stride_h - g.pad_h, w = x * g.stride_w - g.pad_w;
  return {std::max<std::int64_t>(h, 0), std::min(h + g.kernel_h, g.height), std::max<std::int64_t>(w, 0),
          std::min(w + g.kernel_w, g.width)};
}

struct pool_gradient_op {
  static constexpr const char* name = "pool2d gradient";
};

// The maximum of each window, and which tap of the window holds it (i kw +
// j, the first one in the host kernel's order), as a GPU computes them.
template <class T>
struct pooled_maxima {
  tensor<T> values;
  tensor<std::int64_t> taps;
};

// On a GPU, pooling and its gradients are compositions of ops with device
// kernels (ops/composed/pool.hpp) that <tandem/cuda.hpp> installs here.
template <class T>
inline std::atomic<pooled_maxima<T> (*)(const tensor<T>& x, const pool_geometry& g)> cuda_max_pool2d_slot{nullptr};
template <class T>
inline std::atomic<tensor<T> (*)(const tensor<T>& grad, const tensor<std::int64_t>& taps, const pool_geometry& g)>
    cuda_max_pool2d_gradient_slot{nullptr};
template <class T>
inline std::atomic<tensor<T> (*)(const tensor<T>& x, const pool_geometry& g)> cuda_avg_pool2d_slot{nullptr};
template <class T>
inline std::atomic<tensor<T> (*)(const tensor<T>& grad, const pool_geometry& g)> cuda_avg_pool2d_gradient_slot{nullptr};

template <class Slot>
auto pool_kernel_in(Slot& slot, const char* op) {
  auto kernel = slot.load(std::memory_order_acquire);
  if (!kernel) throw_missing_kernel(op, "pooling of these elements");
  return kernel;
}

// Where each output's maximum came from, for max_pool2d's gradient: a 2x2
// window's winner where the pooling is 2x2 with stride 2 and no padding,
// otherwise the flat position in its plane; on a GPU, the window's tap.
struct max_pool2d_op {
  static constexpr const char* name = "max_pool2d";
  static constexpr bool saves_inputs = false;
  pool2d_options options;
  shape input;
  std::shared_ptr<const window_winner[]> winners;
  tensor<std::int64_t> argmax;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    using T = typename G::value_type;
    tensor<T> grad = g.detach().contiguous();
    tensor<T> dx = !grad.device().is_cpu()
                       ? pool_kernel_in(cuda_max_pool2d_gradient_slot<T>, name)(grad, argmax,
                                                                               pool_geometry_of(name, input, options))
                   : winners ? two_by_two_gradient(grad)
                             : scattered_gradient(grad);
    record(pool_gradient_op{}, dx, g);
    return dx;
  }

 private:
  // Every pixel is written once: its window's gradient at the winner, 0
  // elsewhere and in the last row or column that no window covers.
  template <class T>
  tensor<T> two_by_two_gradient(const tensor<T>& grad) const {
    tensor<T> dx(input);
    const std::int64_t height = input[2], width = input[3], outputs = (height / 2) * (width / 2);
    parallel_for(input[0] * input[1], 1, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t p = first; p < last; ++p)
        max_pool_2x2_backward(grad.data() + p * outputs, winners.get() + p * outputs, height, width,
                              dx.data() + p * height * width);
    });
    return dx;
  }

  template <class T>
  tensor<T> scattered_gradient(const tensor<T>& grad) const {
    tensor<T> dx = zeros<T>(input);
    std::int64_t per_plane = input[2] * input[3], outputs = grad.numel() / std::max<std::int64_t>(input[0] * input[1], 1);
    const std::int64_t* from = argmax.data();
    parallel_for(input[0] * input[1], 1, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t p = first; p < last; ++p)
        for (std::int64_t k = 0; k < outputs; ++k) dx.data()[p * per_plane + from[p * outputs + k]] += grad.data()[p * outputs + k];
    });
    return dx;
  }
};

struct avg_pool2d_op {
  static constexpr const char* name = "avg_pool2d";
  static constexpr bool saves_inputs = false;
  pool2d_options options;
  shape input;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    using T = typename G::value_type;
    pool_geometry geo = pool_geometry_of(name, input, options);
    tensor<T> grad = g.detach().contiguous();
    if (!grad.device().is_cpu()) {
      tensor<T> dx = pool_kernel_in(cuda_avg_pool2d_gradient_slot<T>, name)(grad, geo);
      record(pool_gradient_op{}, dx, g);
      return dx;
    }
    tensor<T> dx = zeros<T>(input);
    T scale = T(1) / static_cast<T>(geo.kernel_h * geo.kernel_w);
    parallel_for(geo.planes, 1, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t p = first; p < last; ++p)
        for (std::int64_t y = 0; y < geo.out_h; ++y)
          for (std::int64_t x = 0; x < geo.out_w; ++x) {
            T share = grad.data()[(p * geo.out_h + y) * geo.out_w + x] * scale;
            window win = window_at(geo, y, x);
            T* plane = dx.data() + p * geo.height * geo.width;
            for (std::int64_t h = win.h0; h < win.h1; ++h)
              for (std::int64_t w = win.w0; w < win.w1; ++w) plane[h * geo.width + w] += share;
          }
    });
    record(pool_gradient_op{}, dx, g);
    return dx;
  }
};

}  // namespace detail

template <floating_element T>
tensor<T> max_pool2d(const tensor<T>& x, const pool2d_options& options = {}) {
  detail::profile_range range(profile_category::op, "max_pool2d");
  if (range.recording()) detail::describe_inputs(range, x);
  detail::pool_geometry g = detail::pool_geometry_of("max_pool2d", x.shape(), options);
  if (!x.device().is_cpu()) {
    detail::pooled_maxima<T> pooled =
        detail::pool_kernel_in(detail::cuda_max_pool2d_slot<T>, "max_pool2d")(x.detach(), g);
    detail::record(detail::max_pool2d_op{options, x.shape(), nullptr, pooled.taps}, pooled.values, x);
    return pooled.values;
  }
  tensor<T> in = x.detach().contiguous();
  tensor<T> out(detail::pooled_shape(x.shape(), g));
  const bool two_by_two = g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 &&
                          g.pad_w == 0;
  if (two_by_two) {
    // From the tensors' caching allocator: a fresh block of this size is
    // mapped and zeroed by the kernel on every call.
    const std::size_t bytes = std::max<std::size_t>(1, static_cast<std::size_t>(out.numel()));
    std::shared_ptr<detail::window_winner[]> winners(
        static_cast<detail::window_winner*>(detail::caching_allocator::allocate(bytes)),
        [bytes](detail::window_winner* block) { detail::caching_allocator::deallocate(block, bytes); });
    const std::int64_t outputs = g.out_h * g.out_w;
    detail::parallel_for(g.planes, 1, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t p = first; p < last; ++p)
        detail::max_pool_2x2(in.data() + p * g.height * g.width, g.height, g.width, out.data() + p * outputs,
                             winners.get() + p * outputs);
    });
    detail::record(detail::max_pool2d_op{options, x.shape(), std::move(winners), {}}, out, x);
    return out;
  }
  tensor<std::int64_t> argmax(out.shape());
  detail::parallel_for(g.planes, 1, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t p = first; p < last; ++p) {
      const T* plane = in.data() + p * g.height * g.width;
      for (std::int64_t y = 0; y < g.out_h; ++y)
        for (std::int64_t x0 = 0; x0 < g.out_w; ++x0) {
          detail::window win = detail::window_at(g, y, x0);
          std::int64_t where = win.h0 * g.width + win.w0;
          T best = plane[where];
          for (std::int64_t h = win.h0; h < win.h1; ++h)
            for (std::int64_t w = win.w0; w < win.w1; ++w) {
              T v = plane[h * g.width + w];
              bool take = detail::second_wins(best, v);
              best = detail::select_bits(take, v, best);
              where += static_cast<std::int64_t>(take) * (h * g.width + w - where);
            }
          std::int64_t o = (p * g.out_h + y) * g.out_w + x0;
          out.data()[o] = best;
          argmax.data()[o] = where;
        }
    }
  });
  detail::record(detail::max_pool2d_op{options, x.shape(), nullptr, argmax}, out, x);
  return out;
}

template <floating_element T>
tensor<T> avg_pool2d(const tensor<T>& x, const pool2d_options& options = {}) {
  detail::profile_range range(profile_category::op, "avg_pool2d");
  if (range.recording()) detail::describe_inputs(range, x);
  detail::pool_geometry g = detail::pool_geometry_of("avg_pool2d", x.shape(), options);
  if (!x.device().is_cpu()) {
    tensor<T> out = detail::pool_kernel_in(detail::cuda_avg_pool2d_slot<T>, "avg_pool2d")(x.detach(), g);
    detail::record(detail::avg_pool2d_op{options, x.shape()}, out, x);
    return out;
  }
  tensor<T> in = x.detach().contiguous();
  tensor<T> out(detail::pooled_shape(x.shape(), g));
  T scale = T(1) / static_cast<T>(g.kernel_h * g.kernel_w);
  detail::parallel_for(g.planes, 1, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t p = first; p < last; ++p) {
      const T* plane = in.data() + p * g.height * g.width;
      for (std::int64_t y = 0; y < g.out_h; ++y)
        for (std::int64_t x0 = 0; x0 < g.out_w; ++x0) {
          T total = 0;
          detail::window win = detail::window_at(g, y, x0);
          for (std::int64_t h = win.h0; h < win.h1; ++h)
            for (std::int64_t w = win.w0; w < win.w1; ++w) total += plane[h * g.width + w];
          out.data()[(p * g.out_h + y) * g.out_w + x0] = total * scale;
        }
    }
  });
  detail::record(detail::avg_pool2d_op{options, x.shape()}, out, x);
  return out;
}

}  // namespace tandem
