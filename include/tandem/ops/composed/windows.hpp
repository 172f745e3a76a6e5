#pragma once
// Images as the composed convolution and pooling read them: padded with a
// value, their sliding windows as one strided view (no copy), and the
// gradient that flows back through those windows.

#include <cstdint>

#include "tandem/core/creation.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::detail {

// The sliding windows of images [N, C, H, W] (dense).
struct window_grid {
  std::int64_t out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
};

// x [N, C, H, W] with `pad_h` rows and `pad_w` columns of `value` on each
// side, dense.
template <class T>
tensor<T> padded_images(const tensor<T>& x, std::int64_t pad_h, std::int64_t pad_w, T value) {
  if (pad_h == 0 && pad_w == 0) return x.contiguous();
  tensor<T> out = full<T>({x.shape(0), x.shape(1), x.shape(2) + 2 * pad_h, x.shape(3) + 2 * pad_w}, value, x.device());
  out.slice(2, pad_h, pad_h + x.shape(2)).slice(3, pad_w, pad_w + x.shape(3)).assign(x);
  return out;
}

// The inside of padded images: the rows and columns that are not padding.
template <class T>
tensor<T> unpadded(const tensor<T>& padded, std::int64_t pad_h, std::int64_t pad_w) {
  return padded.slice(2, pad_h, padded.shape(2) - pad_h).slice(3, pad_w, padded.shape(3) - pad_w);
}

// The windows of dense images [N, C, H, W] as a view [N, C, KH, KW, OH,
// OW]: element (n, c, i, j, y, x) is pixel (y stride_h + i dilation_h,
// x stride_w + j dilation_w) of plane (n, c).
template <class T>
tensor<T> windows_of(const tensor<T>& dense, const window_grid& w) {
  const std::int64_t image = dense.shape(1) * dense.shape(2) * dense.shape(3), plane = dense.shape(2) * dense.shape(3),
                     row = dense.shape(3);
  return tensor<T>(dense.storage(), shape{dense.shape(0), dense.shape(1), w.kernel_h, w.kernel_w, w.out_h, w.out_w},
                   dims{image, plane, row * w.dilation_h, w.dilation_w, row * w.stride_h, w.stride_w}, dense.offset());
}

// The gradient of images [N, C, H, W] read through their windows (with
// `pad_h` and `pad_w` of padding): per_tap(i, j), the [N, C, OH, OW]
// gradient of what tap (i, j) of every window read, added into the pixels
// it read. Within one tap no two windows read the same pixel, so each tap
// is one elementwise pass.
template <class T, class PerTap>
tensor<T> add_through_windows(const shape& images, std::int64_t pad_h, std::int64_t pad_w, const window_grid& grid,
                              device where, PerTap&& per_tap) {
  tensor<T> padded = zeros<T>({images[0], images[1], images[2] + 2 * pad_h, images[3] + 2 * pad_w}, where);
  tensor<T> taps = windows_of(padded, grid);
  for (std::int64_t i = 0; i < grid.kernel_h; ++i)
    for (std::int64_t j = 0; j < grid.kernel_w; ++j) {
      tensor<T> pixels = taps.select(2, i).select(2, j);
      pixels.assign(pixels + per_tap(i, j));
    }
  return unpadded(padded, pad_h, pad_w).contiguous();
}

}  // namespace tandem::detail
