#pragma once
// Direct convolution with stride 1: every output pixel is summed straight
// from the image padded with zeros, with no columns unfolded (im2col) and no
// operand packed. With stride 1, the pixels a kernel tap (c, i, j) reads for
// consecutive outputs of a row are consecutive in the padded image, so one
// SIMD batch along an output row is one load per tap, and a tile of
// `channels` output channels by `rows` output rows keeps its sums in
// registers across the whole depth, each kernel weight broadcast once per
// tap. Every output sums its taps in the order (c, i, j), lane by lane: the
// same bits on AVX2 and AVX-512 and for any thread count. The input
// gradient is a direct convolution too (of the output's gradient with the
// kernel flipped and its channels swapped), which spares col2im's
// scatter-add; the kernel's gradient sums each image's pixels in registers,
// output channels along the lanes.
//
// On the Xeon measured (AVX-512, one thread), the CNN's 16 -> 32 channel
// 3x3 layer on 128 images of 14x14 ran 1.8x (forward), 2.4x (input
// gradient) and 1.6x (kernel gradient) as fast as by im2col and GEMM
// (docs/benchmarks/cpu_kernels.md).

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tandem/core/config.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/kernels/cpu/conv_geometry.hpp"
#include "tandem/kernels/cpu/gemm.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {

// Direct kernels need rows of consecutive pixels: stride 1 both ways.
inline bool direct_conv_applies(const conv_geometry& g) { return g.stride_h == 1 && g.stride_w == 1; }

// A direct convolution also needs four output channels per group to
// broadcast each weight to: with fewer, a tile has one unaligned load per
// multiply-add, and GEMM on columns was faster (the input gradient towards
// a one-channel image, 16 channels of 28x28: 0.82 ms by columns, 1.04 ms
// direct).
inline constexpr std::int64_t direct_conv_least_channels = 4;
inline bool direct_conv_fits(const conv_layout& l) {
  return direct_conv_applies(l.g) && l.per_group() >= direct_conv_least_channels;
}

// The input gradient is a direct convolution of the output's gradient with
// padding (k - 1) * dilation - pad, which must not be negative, to the
// input's channels.
inline bool direct_conv_input_gradient_fits(const conv_layout& l) {
  const conv_geometry& g = l.g;
  return direct_conv_applies(g) && g.channels / l.groups >= direct_conv_least_channels &&
         g.pad_h <= (g.kernel_h - 1) * g.dilation_h && g.pad_w <= (g.kernel_w - 1) * g.dilation_w;
}

// The convolution whose output is the input gradient of `l`'s: the output's
// gradient [N, O, OH, OW] is its input, [C, O / groups, kh, kw] its kernel
// (flip_kernel), [N, C, H, W] its output.
inline conv_layout input_gradient_layout(const conv_layout& l) {
  const conv_geometry& g = l.g;
  conv_geometry t{g.batch, l.out_channels, g.out_h, g.out_w, g.kernel_h, g.kernel_w, 1, 1,
                  (g.kernel_h - 1) * g.dilation_h - g.pad_h, (g.kernel_w - 1) * g.dilation_w - g.pad_w,
                  g.dilation_h, g.dilation_w, g.height, g.width};
  return {t, g.channels, l.groups};
}

// w' [C, O / groups, kh, kw] from w [O, C / groups, kh, kw]: within each
// group, input and output channels swapped and the taps reversed.
template <class T>
void flip_kernel(const conv_layout& l, const T* w, T* flipped) {
  const std::int64_t kh = l.g.kernel_h, kw = l.g.kernel_w, taps = kh * kw;
  const std::int64_t outs = l.per_group(), ins = l.g.channels / l.groups;
  for (std::int64_t group = 0; group < l.groups; ++group)
    for (std::int64_t c = 0; c < ins; ++c)
      for (std::int64_t o = 0; o < outs; ++o) {
        const T* from = w + ((group * outs + o) * ins + c) * taps;
        T* to = flipped + ((group * ins + c) * outs + o) * taps;
        for (std::int64_t t = 0; t < taps; ++t) to[t] = from[taps - 1 - t];
      }
}

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE

// Calls f(integral_constant<int64_t, I>) for I in [0, N): loops over a
// tile's sums unrolled whole, so that the sums stay in registers (GCC's -O2
// kept them in memory, at 2.3x the time).
template <std::int64_t N, class F>
TANDEM_ALWAYS_INLINE void for_each_index(F&& f) {
  [&]<std::int64_t... I>(std::integer_sequence<std::int64_t, I...>) {
    (f(std::integral_constant<std::int64_t, I>{}), ...);
  }(std::make_integer_sequence<std::int64_t, N>{});
}

// A tile: Channels output channels by Rows output rows by one batch of
// pixels, Channels * Rows sums in registers with Rows loads and a broadcast
// beside them: 8 x 3 of 32 registers on AVX-512, 4 x 3 of 16 otherwise. On
// AVX-512, a group of 4 to 7 channels takes 4 x 6 instead, so that half
// the sums are not padding.
template <class T, std::int64_t Channels, std::int64_t Rows>
struct direct_conv_tile {
  static constexpr std::int64_t width = static_cast<std::int64_t>(simd::width<T>);
  static constexpr std::int64_t channels = Channels, rows = Rows;
};

// Where each tap (c, i, j) of a group's depth reads the padded image,
// relative to the output pixel's own position there. (A buffer of the
// build's own: std::vector<int64_t> would be one symbol for every build.)
inline simd::buffer<std::int64_t> tap_offsets(const conv_layout& l) {
  const conv_geometry& g = l.g;
  const std::int64_t pw = padded_width(g), plane = padded_height(g) * pw;
  simd::buffer<std::int64_t> taps;
  taps.reserve(static_cast<std::size_t>(l.depth()));
  for (std::int64_t c = 0; c < g.channels / l.groups; ++c)
    for (std::int64_t i = 0; i < g.kernel_h; ++i)
      for (std::int64_t j = 0; j < g.kernel_w; ++j)
        taps.push_back(c * plane + i * g.dilation_h * pw + j * g.dilation_w);
  return taps;
}

template <class T>
inline constexpr bool many_simd_registers = simd::width<T> * sizeof(T) >= 64;

// What every image of one call reads: where each tap of a group's depth
// lies in the padded image, and the kernel as [group][block of channels]
// [tap][channel], zero past a group's last channel.
template <class T, std::int64_t Channels>
struct direct_conv_plan {
  simd::buffer<std::int64_t> taps;
  simd::buffer<T> weights;
  std::int64_t blocks;  // blocks of Channels per group

  direct_conv_plan(const conv_layout& l, const T* w) : taps(tap_offsets(l)) {
    const std::int64_t depth = l.depth(), outs = l.per_group();
    blocks = (outs + Channels - 1) / Channels;
    weights.assign(static_cast<std::size_t>(l.groups * blocks * depth * Channels), T(0));
    for (std::int64_t group = 0; group < l.groups; ++group)
      for (std::int64_t o = 0; o < outs; ++o) {
        T* block = weights.data() + (group * blocks + o / Channels) * depth * Channels;
        for (std::int64_t k = 0; k < depth; ++k) block[k * Channels + o % Channels] = w[(group * outs + o) * depth + k];
      }
  }
};

// Rows x channels of a tile's sums, `tile` [row][tile_channels][batch],
// each `pixels` long, out to y (+ bias) from `to`, its first.
template <class T>
void store_direct_tile(const T* tile, std::int64_t tile_channels, std::int64_t rows,
                       std::int64_t channels, std::int64_t pixels, const T* bias, T* to, std::int64_t plane,
                       std::int64_t row_stride) {
  using batch = simd::batch<T>;
  constexpr std::int64_t width = static_cast<std::int64_t>(simd::width<T>);
  for (std::int64_t o = 0; o < channels; ++o)
    for (std::int64_t r = 0; r < rows; ++r) {
      batch sum = batch::load_aligned(tile + (r * tile_channels + o) * width);
      if (bias) sum += simd::splat(bias[o]);
      simd::store_first(to + o * plane + r * row_stride, sum, pixels);
    }
}

// One image: y [O, OH, OW] = conv(x [C, H, W], w) (+ bias), in tiles of
// `Tile`.
template <class Tile, class T>
void direct_conv_image(const conv_layout& l, const direct_conv_plan<T, Tile::channels>& plan, const T* image,
                       const T* bias, T* out) {
  using batch = simd::batch<T>;
  const conv_geometry& g = l.g;
  const std::int64_t pw = padded_width(g), oh = g.out_h, ow = g.out_w, plane = l.plane();
  // A tile's last rows and pixels may lie past the image: they read into
  // the next channel or the slack, and are not stored.
  const T* padded = padded_image(g, image, Tile::rows * pw + Tile::width);
  const std::int64_t depth = l.depth(), outs = l.per_group();
  const std::int64_t in_group = (g.channels / l.groups) * padded_height(g) * pw;
  const std::int64_t* taps = plan.taps.data();
  for (std::int64_t group = 0; group < l.groups; ++group)
    for (std::int64_t block = 0; block < plan.blocks; ++block) {
      const T* weights = plan.weights.data() + (group * plan.blocks + block) * depth * Tile::channels;
      const std::int64_t first = group * outs + block * Tile::channels;
      const std::int64_t channels = std::min(Tile::channels, outs - block * Tile::channels);
      for (std::int64_t y = 0; y < oh; y += Tile::rows)
        for (std::int64_t x = 0; x < ow; x += Tile::width) {
          const T* in = padded + group * in_group + y * pw + x;
          batch sums[Tile::rows][Tile::channels];
          for_each_index<Tile::rows>([&](auto r) {
            for_each_index<Tile::channels>([&](auto o) { sums[r][o] = batch(T(0)); });
          });
          for (std::int64_t k = 0; k < depth; ++k) {
            const T* at = in + taps[k];
            batch pixels[Tile::rows];
            for_each_index<Tile::rows>([&](auto r) { pixels[r] = simd::load(at + r * pw); });
            for_each_index<Tile::channels>([&](auto o) {
              const batch weight = simd::splat(weights[k * Tile::channels + o]);
              for_each_index<Tile::rows>(
                  [&](auto r) { sums[r][o] = math::multiply_add(weight, pixels[r], sums[r][o]); });
            });
          }
          // Stored through the stack by one loop, not unrolled: 24 inlined
          // masked stores cost more to compile than the copy costs to run.
          alignas(64) T tile[Tile::rows][Tile::channels][Tile::width];
          for_each_index<Tile::rows>([&](auto r) {
            for_each_index<Tile::channels>([&](auto o) { sums[r][o].store_aligned(tile[r][o]); });
          });
          store_direct_tile<T>(&tile[0][0][0], Tile::channels, std::min(Tile::rows, oh - y), channels,
                               std::min(Tile::width, ow - x), bias ? bias + first : nullptr,
                               out + first * plane + y * ow + x, plane, ow);
        }
    }
}

template <class Tile, class T>
void direct_conv_in_tiles(const conv_layout& l, const T* x, const T* w, const T* bias, T* y) {
  const direct_conv_plan<T, Tile::channels> plan(l, w);
  parallel_for(l.g.batch, 1, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t n = first; n < last; ++n)
      direct_conv_image<Tile>(l, plan, x + n * l.image_size(), bias, y + n * l.out_channels * l.plane());
  });
}

// y = conv(x, w) (+ bias where not null) for a layout that
// direct_conv_fits, every image on a thread of its own, in the tile whose
// channels best fit a group's.
template <class T>
void direct_conv(const conv_layout& l, const T* x, const T* w, const T* bias, T* y) {
  if constexpr (many_simd_registers<T>) {
    if (l.per_group() >= 8) direct_conv_in_tiles<direct_conv_tile<T, 8, 3>>(l, x, w, bias, y);
    else direct_conv_in_tiles<direct_conv_tile<T, 4, 6>>(l, x, w, bias, y);
  } else {
    direct_conv_in_tiles<direct_conv_tile<T, 4, 3>>(l, x, w, bias, y);
  }
}

// The kernel's gradient in tiles of Taps taps by Batches batches of output
// channels: dw^T [tap][channel] summed over an image's pixels in
// Taps * Batches registers, each pixel's output gradients (transposed into
// a panel, channels along lanes) loaded once and each tap's pixel broadcast
// once. Every sum runs over the pixels in order, lane by lane: the same bits
// on AVX2 and AVX-512.
template <class T, std::int64_t Taps, std::int64_t Batches>
struct direct_kernel_gradient_tile {
  static constexpr std::int64_t taps = Taps, batches = Batches;
  static constexpr std::int64_t lanes = Batches * static_cast<std::int64_t>(simd::width<T>);
};

// One image's dw^T, added into `sums` [group][tap][channels of the group,
// in blocks of Tile::lanes].
template <class Tile, class T>
void direct_kernel_gradient_image(const conv_layout& l, const simd::buffer<std::int64_t>& taps, const T* image,
                                  const T* dy, T* sums) {
  using batch = simd::batch<T>;
  constexpr std::int64_t width = static_cast<std::int64_t>(simd::width<T>);
  const conv_geometry& g = l.g;
  const std::int64_t pw = padded_width(g), oh = g.out_h, ow = g.out_w, plane = l.plane();
  const T* padded = padded_image(g, image);
  const std::int64_t depth = l.depth(), outs = l.per_group(), blocks = (outs + Tile::lanes - 1) / Tile::lanes;
  const std::int64_t in_group = (g.channels / l.groups) * padded_height(g) * pw;
  T* panel = conv_buffer<T>(1, plane * Tile::lanes);
  for (std::int64_t group = 0; group < l.groups; ++group)
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t first = block * Tile::lanes;
      pack_panel<Tile::lanes, true>(strided_matrix<T>{dy + group * outs * plane, plane, 1}, first, 0, plane,
                                    std::min(Tile::lanes, outs - first), panel);
      const T* in = padded + group * in_group;
      for (std::int64_t k0 = 0; k0 < depth; k0 += Tile::taps) {
        // Taps past the depth read the first tap's pixels and are not added.
        std::int64_t at[Tile::taps];
        for_each_index<Tile::taps>(
            [&](auto t) { at[t] = taps[static_cast<std::size_t>(k0 + t < depth ? k0 + t : 0)]; });
        batch acc[Tile::taps][Tile::batches];
        for_each_index<Tile::taps>([&](auto t) {
          for_each_index<Tile::batches>([&](auto b) { acc[t][b] = batch(T(0)); });
        });
        for (std::int64_t y = 0; y < oh; ++y) {
          const T* row = in + y * pw;
          const T* grads = panel + y * ow * Tile::lanes;
          for (std::int64_t x = 0; x < ow; ++x) {
            batch grad[Tile::batches];
            for_each_index<Tile::batches>([&](auto b) { grad[b] = simd::load(grads + x * Tile::lanes + b * width); });
            for_each_index<Tile::taps>([&](auto t) {
              const batch pixel = simd::splat(row[at[t] + x]);
              for_each_index<Tile::batches>([&](auto b) { acc[t][b] = math::multiply_add(pixel, grad[b], acc[t][b]); });
            });
          }
        }
        T* target = sums + (group * depth + k0) * blocks * Tile::lanes + first;
        for_each_index<Tile::taps>([&](auto t) {
          if (k0 + t >= depth) return;
          for_each_index<Tile::batches>([&](auto b) {
            T* to = target + t * blocks * Tile::lanes + b * width;
            simd::store(to, simd::load(to) + acc[t][b]);
          });
        });
      }
    }
}

// dw for a stride-1 layout: the sum over images of each image's, taken
// over fixed chunks of images (a thread's) and then over the chunks in
// order, so that any thread count gives the same bits.
template <class Tile, class T>
void direct_kernel_gradient_in_tiles(const conv_layout& l, const T* dy, const T* x, T* dw) {
  constexpr std::int64_t images_per_chunk = 8;
  const std::int64_t depth = l.depth(), outs = l.per_group(), blocks = (outs + Tile::lanes - 1) / Tile::lanes;
  const std::int64_t size = l.groups * depth * blocks * Tile::lanes;
  const std::int64_t chunks = (l.g.batch + images_per_chunk - 1) / images_per_chunk;
  const simd::buffer<std::int64_t> taps = tap_offsets(l);
  T* partial = conv_buffer<T>(3, chunks * size);
  std::fill(partial, partial + chunks * size, T(0));
  parallel_for(chunks, 1, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t chunk = first; chunk < last; ++chunk)
      for (std::int64_t n = chunk * images_per_chunk; n < std::min(l.g.batch, (chunk + 1) * images_per_chunk); ++n)
        direct_kernel_gradient_image<Tile>(l, taps, x + n * l.image_size(), dy + n * l.out_channels * l.plane(),
                                           partial + chunk * size);
  });
  for (std::int64_t group = 0; group < l.groups; ++group)
    for (std::int64_t o = 0; o < outs; ++o)
      for (std::int64_t k = 0; k < depth; ++k) {
        T total = T(0);
        for (std::int64_t chunk = 0; chunk < chunks; ++chunk)
          total += partial[chunk * size + (group * depth + k) * blocks * Tile::lanes + o];
        dw[(group * outs + o) * depth + k] = total;
      }
}

// dx for a layout that direct_conv_input_gradient_fits: the direct
// convolution of dy with the kernel flipped.
template <class T>
void direct_conv_input_gradient(const conv_layout& l, const T* dy, const T* w, T* dx) {
  T* flipped = conv_buffer<T>(4, l.out_channels * l.depth());
  flip_kernel(l, w, flipped);
  direct_conv(input_gradient_layout(l), dy, flipped, static_cast<const T*>(nullptr), dx);
}

template <class T>
void direct_kernel_gradient(const conv_layout& l, const T* dy, const T* x, T* dw) {
  constexpr std::int64_t sums = many_simd_registers<T> ? 24 : 12;
  if (l.per_group() > static_cast<std::int64_t>(simd::width<T>))
    direct_kernel_gradient_in_tiles<direct_kernel_gradient_tile<T, sums / 2, 2>>(l, dy, x, dw);
  else
    direct_kernel_gradient_in_tiles<direct_kernel_gradient_tile<T, 12, 1>>(l, dy, x, dw);
}

#endif
}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
