#pragma once
// Convolution on the CPU. With stride 1 and four output channels or more to
// compute (every CNN's 3x3 layers but an input gradient towards a one-channel
// image) the convolution and its gradients are direct (conv_direct.hpp). The
// rest run by GEMM, one image at a time: each image's receptive fields are
// laid out as columns (im2col: row (c * kh + i) * kw + j, column y * ow + x
// holds channel c at (y * stride - pad + i * dilation, x * stride - pad + j *
// dilation), or 0 outside the image) in a buffer of the thread's own that
// stays in cache, and multiplied there: the output comes out in NCHW order
// with no permutation and no batch-sized buffer. Threads split the batch; each
// image's input gradient (col2im, the adjoint of im2col) is one thread's, and
// the kernel's gradient is summed over fixed chunks of images in a fixed
// order, so every result is the same for any thread count.

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "tandem/kernels/cpu/conv_direct.hpp"
#include "tandem/kernels/cpu/conv_geometry.hpp"
#include "tandem/kernels/cpu/dispatch_slot.hpp"
#include "tandem/kernels/cpu/gemm.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

inline namespace TANDEM_KERNEL_ISA {

// With stride 1 along rows, each line of the columns is out_w consecutive
// pixels of the image padded with zeros: one short copy (or add) per line,
// with no bounds to check and no call to memmove or memset per line (rows
// of CNNs are 7 to 28 pixels).
inline bool unit_row_stride(const conv_geometry& g) { return g.stride_w == 1; }

// One image's columns: [rows(), out_h * out_w].
template <class T>
void im2col_image(const conv_geometry& g, const T* image, T* columns) {
  const std::int64_t plane = g.out_h * g.out_w;
  if (unit_row_stride(g)) {
    const std::int64_t ph = padded_height(g), pw = padded_width(g);
    const T* padded = padded_image(g, image);
    for (std::int64_t row = 0; row < g.rows(); ++row) {
      std::int64_t j = row % g.kernel_w, i = (row / g.kernel_w) % g.kernel_h, c = row / (g.kernel_w * g.kernel_h);
      const T* source = padded + (c * ph + i * g.dilation_h) * pw + j * g.dilation_w;
      for (std::int64_t y = 0; y < g.out_h; ++y)
        simd::copy_row(source + y * g.stride_h * pw, g.out_w, columns + row * plane + y * g.out_w);
    }
    return;
  }
  for (std::int64_t row = 0; row < g.rows(); ++row) {
    std::int64_t j = row % g.kernel_w, i = (row / g.kernel_w) % g.kernel_h, c = row / (g.kernel_w * g.kernel_h);
    const T* source = image + c * g.height * g.width;
    // Columns whose input lies inside the row are copied without bounds
    // checks; the rest are padding.
    auto [offset, inside, past] = g.inside_columns(j);
    for (std::int64_t y = 0; y < g.out_h; ++y) {
      std::int64_t h = y * g.stride_h - g.pad_h + i * g.dilation_h;
      T* line = columns + row * plane + y * g.out_w;
      if (h < 0 || h >= g.height) {
        std::fill(line, line + g.out_w, T(0));
        continue;
      }
      const T* row_in = source + h * g.width;
      std::fill(line, line + inside, T(0));
      for (std::int64_t x = inside; x < past; ++x) line[x] = row_in[offset + x * g.stride_w];
      std::fill(line + past, line + g.out_w, T(0));
    }
  }
}

// One image from its columns: the sum of every column entry that reads a
// pixel, written over the image. Each pixel sums its entries in the order
// of the columns' rows, on either path.
template <class T>
void col2im_image(const conv_geometry& g, const T* columns, T* image) {
  const std::int64_t plane = g.out_h * g.out_w;
  if (unit_row_stride(g)) {
    const std::int64_t ph = padded_height(g), pw = padded_width(g);
    T* padded = conv_buffer<T>(2, g.channels * ph * pw);
    std::fill(padded, padded + g.channels * ph * pw, T(0));
    for (std::int64_t row = 0; row < g.rows(); ++row) {
      std::int64_t j = row % g.kernel_w, i = (row / g.kernel_w) % g.kernel_h, c = row / (g.kernel_w * g.kernel_h);
      T* target = padded + (c * ph + i * g.dilation_h) * pw + j * g.dilation_w;
      for (std::int64_t y = 0; y < g.out_h; ++y)
        simd::add_row(columns + row * plane + y * g.out_w, g.out_w, target + y * g.stride_h * pw);
    }
    for (std::int64_t c = 0; c < g.channels; ++c)
      for (std::int64_t h = 0; h < g.height; ++h)
        simd::copy_row(padded + (c * ph + h + g.pad_h) * pw + g.pad_w, g.width, image + (c * g.height + h) * g.width);
    return;
  }
  std::fill(image, image + g.channels * g.height * g.width, T(0));
  for (std::int64_t row = 0; row < g.rows(); ++row) {
    std::int64_t j = row % g.kernel_w, i = (row / g.kernel_w) % g.kernel_h, c = row / (g.kernel_w * g.kernel_h);
    T* target = image + c * g.height * g.width;
    auto [offset, inside, past] = g.inside_columns(j);
    for (std::int64_t y = 0; y < g.out_h; ++y) {
      std::int64_t h = y * g.stride_h - g.pad_h + i * g.dilation_h;
      if (h < 0 || h >= g.height) continue;
      const T* from = columns + row * plane + y * g.out_w;
      T* row_out = target + h * g.width + offset;
      for (std::int64_t x = inside; x < past; ++x) row_out[x * g.stride_w] += from[x];
    }
  }
}

// y = conv(x, w) (+ bias per output channel, where bias is not null), by
// im2col and GEMM.
template <class T>
void columns_conv2d_forward(const conv_layout& l, const T* x, const T* w, const T* bias, T* y) {
  const std::int64_t plane = l.plane(), k = l.depth(), per_group = l.per_group();
  parallel_for(l.g.batch, 1, [&](std::int64_t first, std::int64_t last) {
    T* columns = conv_buffer<T>(0, l.g.rows() * plane);
    for (std::int64_t n = first; n < last; ++n) {
      im2col_image(l.g, x + n * l.image_size(), columns);
      T* out = y + n * l.out_channels * plane;
      for (std::int64_t group = 0; group < l.groups; ++group)
        gemm<T>(per_group, plane, k, {w + group * per_group * k, k, 1}, {columns + group * k * plane, plane, 1},
                out + group * per_group * plane, plane);
      if (bias)
        for (std::int64_t o = 0; o < l.out_channels; ++o)
          for (std::int64_t p = 0; p < plane; ++p) out[o * plane + p] += bias[o];
    }
  });
}

// dx from dy: per image W^T dy, added back into the image by col2im.
template <class T>
void columns_conv2d_backward_input(const conv_layout& l, const T* dy, const T* w, T* dx) {
  const std::int64_t plane = l.plane(), k = l.depth(), per_group = l.per_group();
  parallel_for(l.g.batch, 1, [&](std::int64_t first, std::int64_t last) {
    T* columns = conv_buffer<T>(0, l.g.rows() * plane);
    for (std::int64_t n = first; n < last; ++n) {
      const T* grad = dy + n * l.out_channels * plane;
      for (std::int64_t group = 0; group < l.groups; ++group)
        gemm<T>(k, plane, per_group, {w + group * per_group * k, 1, k}, {grad + group * per_group * plane, plane, 1},
                columns + group * k * plane, plane);
      col2im_image(l.g, columns, dx + n * l.image_size());
    }
  });
}

// dw from dy and x: the sum over images of dy_n times the columns of x_n
// transposed, taken over fixed chunks of images and then over the chunks in
// order.
template <class T>
void columns_conv2d_backward_kernel(const conv_layout& l, const T* dy, const T* x, T* dw) {
  constexpr std::int64_t images_per_chunk = 8;
  const std::int64_t plane = l.plane(), k = l.depth(), per_group = l.per_group();
  const std::int64_t size = l.out_channels * k, chunks = (l.g.batch + images_per_chunk - 1) / images_per_chunk;
  std::fill(dw, dw + size, T(0));
  if (chunks == 0) return;
  T* partial = conv_buffer<T>(3, chunks * size);
  std::fill(partial, partial + chunks * size, T(0));
  parallel_for(chunks, 1, [&](std::int64_t first, std::int64_t last) {
    T* columns = conv_buffer<T>(0, l.g.rows() * plane);
    T* product = conv_buffer<T>(1, per_group * k);
    for (std::int64_t chunk = first; chunk < last; ++chunk) {
      T* sum = partial + chunk * size;
      for (std::int64_t n = chunk * images_per_chunk; n < std::min(l.g.batch, (chunk + 1) * images_per_chunk); ++n) {
        im2col_image(l.g, x + n * l.image_size(), columns);
        const T* grad = dy + n * l.out_channels * plane;
        for (std::int64_t group = 0; group < l.groups; ++group) {
          // The product transposed, columns times dy^T: the columns are read
          // in place and dy^T packs into one or two panels, where dy times
          // the columns^T packed the columns across every panel, one
          // element per step. Each element is the same sum in the same order.
          gemm<T>(k, per_group, plane, {columns + group * k * plane, plane, 1},
                  {grad + group * per_group * plane, 1, plane}, product, per_group);
          T* target = sum + group * per_group * k;
          for (std::int64_t o = 0; o < per_group; ++o)
            for (std::int64_t r = 0; r < k; ++r) target[o * k + r] += product[r * per_group + o];
        }
      }
    }
  });
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk)
    for (std::int64_t e = 0; e < size; ++e) dw[e] += partial[chunk * size + e];
}

// This build's convolution and its gradients: direct where T has SIMD
// batches and the layout fits (stride 1, four channels or more to compute),
// by columns otherwise.
template <class T>
void native_conv2d_forward(const conv_layout& l, const T* x, const T* w, const T* bias, T* y) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_floating_point_v<T> && simd::supported<T>) {
    if (direct_conv_fits(l)) return direct_conv(l, x, w, bias, y);
  }
#endif
  columns_conv2d_forward(l, x, w, bias, y);
}

template <class T>
void native_conv2d_backward_input(const conv_layout& l, const T* dy, const T* w, T* dx) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_floating_point_v<T> && simd::supported<T>) {
    if (direct_conv_input_gradient_fits(l)) return direct_conv_input_gradient(l, dy, w, dx);
  }
#endif
  columns_conv2d_backward_input(l, dy, w, dx);
}

template <class T>
void native_conv2d_backward_kernel(const conv_layout& l, const T* dy, const T* x, T* dw) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if constexpr (std::is_floating_point_v<T> && simd::supported<T>) {
    if (direct_conv_fits(l)) return direct_kernel_gradient(l, dy, x, dw);
  }
#endif
  columns_conv2d_backward_kernel(l, dy, x, dw);
}

}  // inline namespace TANDEM_KERNEL_ISA

// The three drivers are dispatched whole (kernels/cpu/dispatch.hpp): a
// build's unfolding and its products run together.
template <class T>
using conv2d_forward_function = void (*)(const conv_layout&, const T*, const T*, const T*, T*);
template <class T>
using conv2d_backward_function = void (*)(const conv_layout&, const T*, const T*, T*);
template <class T>
inline constinit std::atomic<conv2d_forward_function<T>> dispatched_conv2d_forward{nullptr};
template <class T>
inline constinit std::atomic<conv2d_backward_function<T>> dispatched_conv2d_backward_input{nullptr};
template <class T>
inline constinit std::atomic<conv2d_backward_function<T>> dispatched_conv2d_backward_kernel{nullptr};

inline namespace TANDEM_KERNEL_ISA {

template <class T>
void conv2d_forward(const conv_layout& l, const T* x, const T* w, const T* bias, T* y) {
  call_dispatched<&native_conv2d_forward<T>>(dispatched_conv2d_forward<T>, l, x, w, bias, y);
}

template <class T>
void conv2d_backward_input(const conv_layout& l, const T* dy, const T* w, T* dx) {
  call_dispatched<&native_conv2d_backward_input<T>>(dispatched_conv2d_backward_input<T>, l, dy, w, dx);
}

template <class T>
void conv2d_backward_kernel(const conv_layout& l, const T* dy, const T* x, T* dw) {
  call_dispatched<&native_conv2d_backward_kernel<T>>(dispatched_conv2d_backward_kernel<T>, l, dy, x, dw);
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
