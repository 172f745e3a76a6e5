#pragma once
// Max pooling's kernels: the winner of a window (strictly greater wins, the
// first stays on ties, a NaN wins over a number), and the 2x2, stride-2,
// unpadded pooling of CNNs in SIMD batches. A 2x2 window's winner is kept
// as one byte (0 and 1 on its top row, 2 and 3 below) where a flat
// position would take eight, and its gradient writes each input pixel once
// instead of zeroing the image and scattering into it. The 2x2 kernels are
// dispatched per plane (kernels/cpu/dispatch.hpp).

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "tandem/kernels/cpu/dispatch_slot.hpp"
#include "tandem/kernels/cpu/simd.hpp"

namespace tandem::detail {

// Which pixel of a 2x2 window holds its maximum.
using window_winner = std::uint8_t;

inline namespace TANDEM_KERNEL_ISA {

// Whether the second of two candidates wins.
template <class T>
inline bool second_wins(T first, T second) {
  return (second > first) | ((second != second) & (first == first));
}

// `take ? x : y` by masks: GCC turns a conditional expression on a coin toss
// back into a branch that mispredicts half the time.
template <class T>
inline T select_bits(bool take, T x, T y) {
  using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  bits mask = bits(0) - static_cast<bits>(take);
  return std::bit_cast<T>((std::bit_cast<bits>(x) & mask) | (std::bit_cast<bits>(y) & ~mask));
}

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
namespace pooling {

template <class T>
using lane_index = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

// Lane permutations: the even lanes of a batch then its odd ones, and the
// reverse.
struct evens_then_odds {
  static constexpr unsigned get(unsigned i, unsigned n) { return i < n / 2 ? 2 * i : 2 * (i - n / 2) + 1; }
};
struct odds_then_evens {
  static constexpr unsigned get(unsigned i, unsigned n) { return i < n / 2 ? 2 * i + 1 : 2 * (i - n / 2); }
};
struct lower_half {
  static constexpr bool get(unsigned i, unsigned n) { return i < n / 2; }
};
// Each lane of the lower (upper) half twice: [v0 v0 v1 v1 ...].
struct lower_half_doubled {
  static constexpr unsigned get(unsigned i, unsigned) { return i / 2; }
};
struct upper_half_doubled {
  static constexpr unsigned get(unsigned i, unsigned n) { return n / 2 + i / 2; }
};
struct even_lanes {
  static constexpr bool get(unsigned i, unsigned) { return i % 2 == 0; }
};

template <class T, class Arch>
struct pairs {
  xsimd::batch<T, Arch> first, second;
};

// 2 * lanes consecutive values, split into the first and the second of
// each pair: [v0 v2 v4 ...] and [v1 v3 v5 ...].
template <class T, class Arch>
TANDEM_ALWAYS_INLINE pairs<T, Arch> split_pairs(const T* p) {
  using batch = xsimd::batch<T, Arch>;
  using index = xsimd::batch<lane_index<T>, Arch>;
  constexpr auto evens_first = xsimd::make_batch_constant<index, evens_then_odds>();
  constexpr auto odds_first = xsimd::make_batch_constant<index, odds_then_evens>();
  constexpr auto low = xsimd::make_batch_bool_constant<batch, lower_half>();
  batch head = batch::load_unaligned(p), tail = batch::load_unaligned(p + batch::size);
  return {xsimd::select(low, xsimd::swizzle(head, evens_first), xsimd::swizzle(tail, odds_first)),
          xsimd::select(low, xsimd::swizzle(head, odds_first), xsimd::swizzle(tail, evens_first))};
}

// The inverse of split_pairs: [f0 s0 f1 s1 ...] stored at p and p + lanes.
// (xsimd 8.1's zip_lo and zip_hi interleave within each 128-bit lane on
// AVX and AVX-512, not across the batch.)
template <class T, class Arch>
TANDEM_ALWAYS_INLINE void store_pairs(T* p, const xsimd::batch<T, Arch>& first, const xsimd::batch<T, Arch>& second) {
  using batch = xsimd::batch<T, Arch>;
  using index = xsimd::batch<lane_index<T>, Arch>;
  constexpr auto low = xsimd::make_batch_constant<index, lower_half_doubled>();
  constexpr auto high = xsimd::make_batch_constant<index, upper_half_doubled>();
  constexpr auto even = xsimd::make_batch_bool_constant<batch, even_lanes>();
  xsimd::select(even, xsimd::swizzle(first, low), xsimd::swizzle(second, low)).store_unaligned(p);
  xsimd::select(even, xsimd::swizzle(first, high), xsimd::swizzle(second, high)).store_unaligned(p + batch::size);
}

// xsimd's != is an ordered comparison (false for NaN), so a NaN is found
// by isnan.
template <class T, class Arch>
TANDEM_ALWAYS_INLINE auto second_wins(const xsimd::batch<T, Arch>& first, const xsimd::batch<T, Arch>& second) {
  return (second > first) | (xsimd::isnan(second) & (first == first));
}

template <class T, class Arch>
void max_pool_2x2_batches(const T* top, const T* bottom, std::int64_t out_w, T* out, window_winner* winners) {
  using batch = xsimd::batch<T, Arch>;
  constexpr std::int64_t lanes = batch::size;
  const batch one(T(1)), zero(T(0)), two(T(2));
  simd::overlapping_steps<lanes>(out_w, [&](std::int64_t x) {
    auto [a, b] = split_pairs<T, Arch>(top + 2 * x);
    auto [c, d] = split_pairs<T, Arch>(bottom + 2 * x);
    auto right_above = second_wins(a, b), right_below = second_wins(c, d);
    batch upper = xsimd::select(right_above, b, a), lower = xsimd::select(right_below, d, c);
    auto below = second_wins(upper, lower);
    xsimd::select(below, lower, upper).store_unaligned(out + x);
    batch winner = xsimd::select(below, two + xsimd::select(right_below, one, zero), xsimd::select(right_above, one, zero));
    simd::store_codes(winners + x, winner);
  });
}

template <class T, class Arch>
void max_pool_2x2_batches_backward(const T* grad, const window_winner* winners, std::int64_t out_w, T* top,
                                   T* bottom) {
  using batch = xsimd::batch<T, Arch>;
  constexpr std::int64_t lanes = batch::size;
  const batch zero(T(0));
  simd::overlapping_steps<lanes>(out_w, [&](std::int64_t x) {
    batch g = batch::load_unaligned(grad + x), winner = simd::load_codes<T, Arch>(winners + x);
    batch a = xsimd::select(winner == batch(T(0)), g, zero), b = xsimd::select(winner == batch(T(1)), g, zero);
    batch c = xsimd::select(winner == batch(T(2)), g, zero), d = xsimd::select(winner == batch(T(3)), g, zero);
    store_pairs(top + 2 * x, a, b);
    store_pairs(bottom + 2 * x, c, d);
  });
}

}  // namespace pooling
#endif

// One output row of 2x2, stride-2 max pooling from input rows `top` and
// `bottom`: out_w maxima and their winners.
template <class T>
void max_pool_2x2_row(const T* top, const T* bottom, std::int64_t out_w, T* out, window_winner* winners) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if (simd::with_widest_batch_within<T>(out_w, [&]<class Arch>() {
        pooling::max_pool_2x2_batches<T, Arch>(top, bottom, out_w, out, winners);
      }))
    return;
#endif
  for (std::int64_t x = 0; x < out_w; ++x) {
    T a = top[2 * x], b = top[2 * x + 1], c = bottom[2 * x], d = bottom[2 * x + 1];
    bool right_above = second_wins(a, b), right_below = second_wins(c, d);
    T upper = select_bits(right_above, b, a), lower = select_bits(right_below, d, c);
    bool below = second_wins(upper, lower);
    out[x] = select_bits(below, lower, upper);
    winners[x] = static_cast<window_winner>(below ? 2 + int(right_below) : int(right_above));
  }
}

// The gradient of one output row: input rows `top` and `bottom` (2 * out_w
// pixels each) get each output's gradient at its winner and 0 elsewhere.
template <class T>
void max_pool_2x2_row_backward(const T* grad, const window_winner* winners, std::int64_t out_w, T* top, T* bottom) {
#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
  if (simd::with_widest_batch_within<T>(out_w, [&]<class Arch>() {
        pooling::max_pool_2x2_batches_backward<T, Arch>(grad, winners, out_w, top, bottom);
      }))
    return;
#endif
  for (std::int64_t x = 0; x < out_w; ++x) {
    T g = grad[x];
    window_winner w = winners[x];
    top[2 * x] = w == 0 ? g : T(0);
    top[2 * x + 1] = w == 1 ? g : T(0);
    bottom[2 * x] = w == 2 ? g : T(0);
    bottom[2 * x + 1] = w == 3 ? g : T(0);
  }
}

// One plane (an image's channel) of height x width pixels: out_h x out_w
// maxima (out_h = height / 2, out_w = width / 2) and their winners.
template <class T>
void native_max_pool_2x2(const T* in, std::int64_t height, std::int64_t width, T* out, window_winner* winners) {
  const std::int64_t out_w = width / 2;
  for (std::int64_t y = 0; y < height / 2; ++y)
    max_pool_2x2_row(in + 2 * y * width, in + (2 * y + 1) * width, out_w, out + y * out_w, winners + y * out_w);
}

// The plane's gradient: each pixel written once, with its window's gradient
// at the winner, 0 elsewhere and in the last row or column that no window
// covers.
template <class T>
void native_max_pool_2x2_backward(const T* grad, const window_winner* winners, std::int64_t height, std::int64_t width,
                                  T* dx) {
  const std::int64_t out_w = width / 2;
  for (std::int64_t y = 0; y < height / 2; ++y) {
    T* top = dx + 2 * y * width;
    max_pool_2x2_row_backward(grad + y * out_w, winners + y * out_w, out_w, top, top + width);
    if (width % 2) top[width - 1] = top[2 * width - 1] = T(0);
  }
  if (height % 2) std::fill(dx + (height - 1) * width, dx + height * width, T(0));
}

}  // inline namespace TANDEM_KERNEL_ISA

template <class T>
using max_pool_2x2_function = void (*)(const T*, std::int64_t, std::int64_t, T*, window_winner*);
template <class T>
using max_pool_2x2_backward_function = void (*)(const T*, const window_winner*, std::int64_t, std::int64_t, T*);
template <class T>
inline constinit std::atomic<max_pool_2x2_function<T>> dispatched_max_pool_2x2{nullptr};
template <class T>
inline constinit std::atomic<max_pool_2x2_backward_function<T>> dispatched_max_pool_2x2_backward{nullptr};

inline namespace TANDEM_KERNEL_ISA {

template <class T>
void max_pool_2x2(const T* in, std::int64_t height, std::int64_t width, T* out, window_winner* winners) {
  call_dispatched<&native_max_pool_2x2<T>>(dispatched_max_pool_2x2<T>, in, height, width, out, winners);
}

template <class T>
void max_pool_2x2_backward(const T* grad, const window_winner* winners, std::int64_t height, std::int64_t width, T* dx) {
  call_dispatched<&native_max_pool_2x2_backward<T>>(dispatched_max_pool_2x2_backward<T>, grad, winners, height, width,
                                                    dx);
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
