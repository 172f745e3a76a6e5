#pragma once
// What the CPU convolution kernels share: the geometry of a convolution,
// the layout of its operands, the thread's scratch buffers and the image
// padded with zeros that both the direct kernels (conv_direct.hpp) and the
// unfolding into columns (conv.hpp) read.

#include <algorithm>
#include <cstdint>

#include "tandem/kernels/cpu/isa.hpp"
#include "tandem/kernels/cpu/simd.hpp"

namespace tandem::detail {

struct conv_geometry {
  std::int64_t batch, channels, height, width;  // the input
  std::int64_t kernel_h, kernel_w;
  std::int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  std::int64_t out_h, out_w;

  std::int64_t rows() const { return channels * kernel_h * kernel_w; }

  // For kernel column j: the input column of output column 0 (offset), and
  // the output columns [inside, past) whose input lies inside the row.
  struct column_span {
    std::int64_t offset, inside, past;
  };
  column_span inside_columns(std::int64_t j) const {
    std::int64_t offset = j * dilation_w - pad_w;
    std::int64_t inside = offset >= 0 ? 0 : (-offset + stride_w - 1) / stride_w;
    std::int64_t past = width - offset <= 0 ? 0 : (width - offset + stride_w - 1) / stride_w;
    inside = std::min(inside, out_w);
    return {offset, inside, std::clamp(past, inside, out_w)};
  }
};

// The layout every driver shares: x [N, C, H, W], w [O, C / groups, kh, kw],
// y [N, O, OH, OW], all contiguous.
struct conv_layout {
  conv_geometry g;
  std::int64_t out_channels, groups;
  std::int64_t plane() const { return g.out_h * g.out_w; }
  std::int64_t per_group() const { return out_channels / groups; }
  std::int64_t depth() const { return g.rows() / groups; }  // a group's kernel size
  std::int64_t image_size() const { return g.channels * g.height * g.width; }
};

inline std::int64_t padded_height(const conv_geometry& g) { return g.height + 2 * g.pad_h; }
inline std::int64_t padded_width(const conv_geometry& g) { return g.width + 2 * g.pad_w; }

inline namespace TANDEM_KERNEL_ISA {

// A buffer of the calling thread's, kept between calls: 0 for columns, 1
// for products, 2 for a padded image, 3 for the kernel gradient's partial
// sums, 4 for a flipped kernel.
template <class T>
T* conv_buffer(int which, std::int64_t size) {
  thread_local simd::buffer<T> buffers[5];
  buffers[which].resize(static_cast<std::size_t>(size));
  return buffers[which].data();
}

// The image's channels with pad_h zero rows above and below and pad_w zero
// columns either side, followed by `slack` zeros that a kernel may read past
// the last channel (and whose results it does not store).
template <class T>
T* padded_image(const conv_geometry& g, const T* image, std::int64_t slack = 0) {
  const std::int64_t ph = padded_height(g), pw = padded_width(g);
  const std::int64_t size = g.channels * ph * pw + slack;
  T* padded = conv_buffer<T>(2, size);
  std::fill(padded, padded + size, T(0));
  for (std::int64_t c = 0; c < g.channels; ++c)
    for (std::int64_t h = 0; h < g.height; ++h)
      simd::copy_row(image + (c * g.height + h) * g.width, g.width, padded + (c * ph + h + g.pad_h) * pw + g.pad_w);
  return padded;
}

}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
