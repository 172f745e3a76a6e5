#pragma once
// The two data movements of convolution by GEMM. im2col lays every
// receptive field of a batch of NCHW images out as a column: row
// (c * kh + i) * kw + j, column n * (oh * ow) + y * ow + x holds
// image n, channel c, at (y * stride - pad + i * dilation, x * ... + j * ...),
// or 0 outside the image. col2im adds such columns back into images (the
// adjoint of im2col), each (image, channel) plane on one thread, so the sums
// run in a fixed order for any thread count.

#include <algorithm>
#include <cstdint>

#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

struct conv_geometry {
  std::int64_t batch, channels, height, width;  // the input
  std::int64_t kernel_h, kernel_w;
  std::int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  std::int64_t out_h, out_w;

  std::int64_t rows() const { return channels * kernel_h * kernel_w; }
  std::int64_t columns() const { return batch * out_h * out_w; }
};

template <class T>
void im2col(const conv_geometry& g, const T* image, T* columns) {
  const std::int64_t plane = g.out_h * g.out_w, width = g.columns();
  parallel_for(g.rows(), std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(width, 1)),
               [&](std::int64_t first, std::int64_t last) {
                 for (std::int64_t row = first; row < last; ++row) {
                   std::int64_t j = row % g.kernel_w, i = (row / g.kernel_w) % g.kernel_h, c = row / (g.kernel_w * g.kernel_h);
                   T* out = columns + row * width;
                   for (std::int64_t n = 0; n < g.batch; ++n) {
                     const T* source = image + (n * g.channels + c) * g.height * g.width;
                     for (std::int64_t y = 0; y < g.out_h; ++y) {
                       std::int64_t h = y * g.stride_h - g.pad_h + i * g.dilation_h;
                       T* line = out + n * plane + y * g.out_w;
                       if (h < 0 || h >= g.height) {
                         std::fill(line, line + g.out_w, T(0));
                         continue;
                       }
                       // Columns whose input lies inside the row, [inside, past), are
                       // copied without bounds checks; the rest are padding.
                       std::int64_t offset = j * g.dilation_w - g.pad_w;
                       std::int64_t inside = offset >= 0 ? 0 : (-offset + g.stride_w - 1) / g.stride_w;
                       std::int64_t past = g.width - offset <= 0 ? 0 : (g.width - offset + g.stride_w - 1) / g.stride_w;
                       inside = std::min(inside, g.out_w);
                       past = std::clamp(past, inside, g.out_w);
                       const T* row_in = source + h * g.width;
                       std::fill(line, line + inside, T(0));
                       if (g.stride_w == 1) std::copy(row_in + offset + inside, row_in + offset + past, line + inside);
                       else
                         for (std::int64_t x = inside; x < past; ++x) line[x] = row_in[offset + x * g.stride_w];
                       std::fill(line + past, line + g.out_w, T(0));
                     }
                   }
                 }
               });
}

template <class T>
void col2im(const conv_geometry& g, const T* columns, T* image) {
  const std::int64_t plane = g.out_h * g.out_w, width = g.columns();
  parallel_for(g.batch * g.channels, 1, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t nc = first; nc < last; ++nc) {
      std::int64_t n = nc / g.channels, c = nc % g.channels;
      T* target = image + nc * g.height * g.width;
      std::fill(target, target + g.height * g.width, T(0));
      for (std::int64_t i = 0; i < g.kernel_h; ++i)
        for (std::int64_t j = 0; j < g.kernel_w; ++j) {
          const T* from = columns + ((c * g.kernel_h + i) * g.kernel_w + j) * width + n * plane;
          for (std::int64_t y = 0; y < g.out_h; ++y) {
            std::int64_t h = y * g.stride_h - g.pad_h + i * g.dilation_h;
            if (h < 0 || h >= g.height) continue;
            for (std::int64_t x = 0; x < g.out_w; ++x) {
              std::int64_t w = x * g.stride_w - g.pad_w + j * g.dilation_w;
              if (w >= 0 && w < g.width) target[h * g.width + w] += from[y * g.out_w + x];
            }
          }
        }
    }
  });
}

}  // namespace tandem::detail
