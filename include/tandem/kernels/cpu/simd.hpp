#pragma once
// The one door to xsimd. Kernels ask this header whether a type has a SIMD
// batch on the target and use batch<T>, load, store and splat from here; a
// target without SIMD support gets width 1 and the scalar loops.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/core/reduced_float.hpp"
#include "tandem/kernels/cpu/isa.hpp"

#if !defined(__CUDA_ARCH__)
#include <xsimd/xsimd.hpp>
#endif

// Before a loop over a tile's registers (a constant count): unrolled whole,
// or GCC keeps the tile in memory.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define TANDEM_UNROLL_ALL _Pragma("GCC unroll 32")
#else
#define TANDEM_UNROLL_ALL
#endif

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {
namespace simd {

// Memory for a kernel's packed or unfolded operands, 64-byte aligned. A
// type of the build's namespace, so that a vector of it is the build's own
// (kernels/cpu/isa.hpp): std::vector<T, xsimd::aligned_allocator<T, 64>>
// would be one symbol for every build.
template <class T>
struct buffer_allocator {
  using value_type = T;
  buffer_allocator() = default;
  template <class U>
  buffer_allocator(const buffer_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{64}); }
  friend bool operator==(const buffer_allocator&, const buffer_allocator&) { return true; }
};

template <class T>
using buffer = std::vector<T, buffer_allocator<T>>;

// A buffer whose resize leaves new elements uninitialized, for scratch that
// is written before it is read: a product's packed panels, resized between
// products of different shapes (a decoding step spent a tenth of its time
// zeroing them).
template <class T>
struct scratch_allocator : buffer_allocator<T> {
  scratch_allocator() = default;
  template <class U>
  scratch_allocator(const scratch_allocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
};

template <class T>
using scratch = std::vector<T, scratch_allocator<T>>;

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE
template <class T>
inline constexpr bool supported = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                  std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

template <class T>
using batch = xsimd::batch<T>;

template <class T>
inline constexpr std::size_t width = supported<T> ? batch<T>::size : 1;

template <class T>
TANDEM_ALWAYS_INLINE batch<T> load(const T* p) {
  return batch<T>::load_unaligned(p);
}
template <class T>
TANDEM_ALWAYS_INLINE void store(T* p, const batch<T>& v) {
  v.store_unaligned(p);
}

// Whether a batch of C can be loaded from T's: the same type, or a 16-bit
// float (bfloat16, float16) widened to the float it computes in.
template <class C, class T>
inline constexpr bool loads_as = supported<C> && (std::is_same_v<T, C> || (std::is_same_v<C, float> && is_reduced_float_v<T>));

// A batch of float from bfloat16's: each widened to 32 bits and shifted
// into float's high half. (Written out: GCC's -O3 unrolls a loop of 16
// conversions into scalar code before it would vectorize it.)
TANDEM_ALWAYS_INLINE batch<float> load_widened(const bfloat16* p) {
  [[maybe_unused]] const void* at = p;
#if XSIMD_WITH_AVX512F
  static_assert(batch<float>::size == 16);
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(at)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
#elif XSIMD_WITH_AVX2
  static_assert(batch<float>::size == 8);
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(at)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
#elif XSIMD_WITH_SSE2 && !XSIMD_WITH_AVX
  static_assert(batch<float>::size == 4);
  return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64(static_cast<const __m128i*>(at))));
#else
  alignas(64) float wide[batch<float>::size];
  for (std::size_t l = 0; l < batch<float>::size; ++l) wide[l] = static_cast<float>(p[l]);
  return batch<float>::load_aligned(wide);
#endif
}

// A batch of float from float16's: F16C's conversion where the unit has it
// (every AVX2 and AVX-512 build), exact like float16's own.
TANDEM_ALWAYS_INLINE batch<float> load_widened(const float16* p) {
  [[maybe_unused]] const void* at = p;
#if XSIMD_WITH_AVX512F
  return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(at)));
#elif XSIMD_WITH_AVX2 && defined(__F16C__)
  return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(at)));
#else
  alignas(64) float wide[batch<float>::size];
  for (std::size_t l = 0; l < batch<float>::size; ++l) wide[l] = static_cast<float>(p[l]);
  return batch<float>::load_aligned(wide);
#endif
}

// A batch of C from T's (loads_as).
template <class C, class T>
TANDEM_ALWAYS_INLINE batch<C> load_as(const T* p) {
  if constexpr (std::is_same_v<T, C>) return load(p);
  else return load_widened(p);
}
// to[0, count) = from[0, count) with streaming stores, which write around
// the caches: `count` whole batches, `to` aligned to a batch, `from` (a
// staging buffer) to 64 bytes. Other threads see the values once the writer
// has run store_fence(). Called, not inlined: one copy per element type
// rather than one in every op's row.
template <class T>
void stream_batches(T* to, const T* from, std::int64_t count) {
  constexpr std::size_t bytes = sizeof(batch<T>);
  for (std::int64_t i = 0; i < count; i += static_cast<std::int64_t>(batch<T>::size)) {
#if XSIMD_WITH_AVX512F
    if constexpr (bytes == 64) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(to + i), _mm512_load_si512(from + i));
      continue;
    }
#endif
#if XSIMD_WITH_AVX
    if constexpr (bytes == 32) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(to + i), _mm256_load_si256(reinterpret_cast<const __m256i*>(from + i)));
      continue;
    }
#endif
#if XSIMD_WITH_SSE2
    if constexpr (bytes == 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), _mm_load_si128(reinterpret_cast<const __m128i*>(from + i)));
      continue;
    }
#endif
    store(to + i, load(from + i));
  }
}
// Asks for the lines of `bytes` bytes from `ahead` bytes past p to be
// brought into the caches. One core streaming from memory otherwise waits
// on the hardware prefetcher: on the Xeon measured, a tanh chain over 64 MiB
// on one thread ran 1.2x as fast asking 4 KiB ahead. Only an address is
// formed, nothing read, so it may lie past the end of p's array.
template <class T>
TANDEM_ALWAYS_INLINE void prefetch_ahead(const T* p, std::int64_t ahead, std::int64_t bytes) {
#if XSIMD_WITH_SSE2
  const std::uintptr_t from = reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(ahead);
  for (std::int64_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(from + b), _MM_HINT_T0);
#else
  (void)p, (void)ahead, (void)bytes;
#endif
}
TANDEM_ALWAYS_INLINE void store_fence() {
#if XSIMD_WITH_SSE2
  _mm_sfence();
#endif
}

// p[0, n) = v's first n lanes, 0 < n <= width: the end of a row shorter
// than whole batches, with a masked store where the ISA has one (a scalar
// loop from a spilled batch was a tenth of a 14-pixel convolution's time).
template <class T>
TANDEM_ALWAYS_INLINE void store_first(T* p, const batch<T>& v, std::int64_t n) {
  if (n == static_cast<std::int64_t>(batch<T>::size)) {
    store(p, v);
    return;
  }
#if XSIMD_WITH_AVX512F
  if constexpr (sizeof(batch<T>) == 64 && std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
    return;
  } else if constexpr (sizeof(batch<T>) == 64 && std::is_same_v<T, double>) {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << n) - 1), v);
    return;
  }
#endif
#if XSIMD_WITH_AVX2
  if constexpr (sizeof(batch<T>) == 32 && std::is_same_v<T, float>) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes), v);
    return;
  } else if constexpr (sizeof(batch<T>) == 32 && std::is_same_v<T, double>) {
    _mm256_maskstore_pd(p, _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3)), v);
    return;
  }
#endif
  alignas(64) T lanes[batch<T>::size];
  v.store_aligned(lanes);
  for (std::int64_t i = 0; i < n; ++i) p[i] = lanes[i];
}

template <class T>
TANDEM_ALWAYS_INLINE batch<T> splat(T value) {
  return batch<T>(value);
}
template <class T>
TANDEM_ALWAYS_INLINE T reduce_add(const batch<T>& v) {
  return xsimd::hadd(v);
}

}  // namespace simd
}  // namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail

// Batches narrower than the build's own (AVX2 or SSE lanes in an AVX-512
// build) run on arch types of the build's namespace, which xsimd treats as
// the arch they derive from. On xsimd::avx2 itself, the xsimd functions a
// compiler does not inline (a select with a constant mask under -O1, say)
// would be one symbol with the AVX2 build's copy, of which the linker keeps
// either: AVX-512 code on an AVX2 machine (tests/kernels/build_symbols.cmake).
#if XSIMD_WITH_AVX512F && XSIMD_WITH_AVX2
#define TANDEM_SIMD_AVX2_LANES 1
#else
#define TANDEM_SIMD_AVX2_LANES 0
#endif
#if (XSIMD_WITH_AVX512F || XSIMD_WITH_AVX) && XSIMD_WITH_SSE4_2
#define TANDEM_SIMD_SSE4_2_LANES 1
#else
#define TANDEM_SIMD_SSE4_2_LANES 0
#endif

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {
namespace simd {
#if TANDEM_SIMD_AVX2_LANES
struct avx2_lanes : xsimd::avx2 {};
#endif
#if TANDEM_SIMD_SSE4_2_LANES
struct sse4_2_lanes : xsimd::sse4_2 {};
#endif
}  // namespace simd
}  // namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail

namespace xsimd::types {
#if TANDEM_SIMD_AVX2_LANES
XSIMD_DECLARE_SIMD_REGISTER_ALIAS(tandem::detail::simd::avx2_lanes, avx2);
#endif
#if TANDEM_SIMD_SSE4_2_LANES
XSIMD_DECLARE_SIMD_REGISTER_ALIAS(tandem::detail::simd::sse4_2_lanes, sse4_2);
#endif
}  // namespace xsimd::types

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {
namespace simd {

// Calls `step.template operator()<Arch>()` with the widest batch of the
// target no wider than n elements of T, and returns false where none is:
// rows of CNNs (28, 14 and 7 pixels) are shorter than one AVX-512 batch of
// floats, and a narrower batch still beats a scalar loop.
template <class T, class Step>
TANDEM_ALWAYS_INLINE bool with_widest_batch_within(std::int64_t n, Step&& step) {
  if constexpr (supported<T>) {
    if (n >= static_cast<std::int64_t>(batch<T>::size)) {
      step.template operator()<xsimd::default_arch>();
      return true;
    }
#if TANDEM_SIMD_AVX2_LANES
    if (n >= static_cast<std::int64_t>(xsimd::batch<T, avx2_lanes>::size)) {
      step.template operator()<avx2_lanes>();
      return true;
    }
#endif
#if TANDEM_SIMD_SSE4_2_LANES
    if (n >= static_cast<std::int64_t>(xsimd::batch<T, sse4_2_lanes>::size)) {
      step.template operator()<sse4_2_lanes>();
      return true;
    }
#endif
  }
  return false;
}

// Runs `step(x)` over [0, n) in steps of `lanes`, the last step moved back
// to end at n (n >= lanes): a short row's tail is a batch overlapping the
// one before, for steps that may write the same values twice.
template <std::int64_t lanes, class Step>
TANDEM_ALWAYS_INLINE void overlapping_steps(std::int64_t n, Step step) {
  for (std::int64_t x = 0;; x += lanes) {
    if (x + lanes > n) x = n - lanes;
    step(x);
    if (x + lanes == n) return;
  }
}

// Small unsigned codes (0 to 255) kept one per byte, such as a pooling
// window's winner, to and from a batch's lanes: `lanes` bytes at p. By
// widening and narrowing conversions where the ISA has them; a loop of
// scalar conversions through the stack was most of max pooling's gradient.
template <class T, class Arch>
TANDEM_ALWAYS_INLINE xsimd::batch<T, Arch> load_codes(const std::uint8_t* p) {
  using lanes = xsimd::batch<T, Arch>;
  [[maybe_unused]] constexpr std::size_t bytes = sizeof(lanes);
  [[maybe_unused]] constexpr bool is_float = std::is_same_v<T, float>, is_double = std::is_same_v<T, double>;
#if XSIMD_WITH_SSE4_1
  // The first `count` bytes at p, as four 32-bit integers (zeros past count).
  [[maybe_unused]] auto words = [p](std::size_t count) {
    std::uint32_t four = 0;
    std::memcpy(&four, p, count);
    return _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(four)));
  };
  [[maybe_unused]] const auto* eight = reinterpret_cast<const __m128i*>(p);
#endif
#if XSIMD_WITH_AVX512F
  if constexpr (bytes == 64 && is_float) return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(eight)));
  if constexpr (bytes == 64 && is_double) return _mm512_cvtepi32_pd(_mm256_cvtepu8_epi32(_mm_loadl_epi64(eight)));
#endif
#if XSIMD_WITH_AVX2
  if constexpr (bytes == 32 && is_float) return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(eight)));
  if constexpr (bytes == 32 && is_double) return _mm256_cvtepi32_pd(words(4));
#endif
#if XSIMD_WITH_SSE4_1
  if constexpr (bytes == 16 && is_float) return _mm_cvtepi32_ps(words(4));
  if constexpr (bytes == 16 && is_double) return _mm_cvtepi32_pd(words(2));
#endif
  alignas(64) T values[lanes::size];
  for (std::size_t i = 0; i < lanes::size; ++i) values[i] = static_cast<T>(p[i]);
  return lanes::load_aligned(values);
}

// p[0, lanes) = codes, each lane a whole number from 0 to 255.
template <class T, class Arch>
TANDEM_ALWAYS_INLINE void store_codes(std::uint8_t* p, const xsimd::batch<T, Arch>& codes) {
  using lanes = xsimd::batch<T, Arch>;
  [[maybe_unused]] constexpr std::size_t bytes = sizeof(lanes);
  [[maybe_unused]] constexpr bool is_float = std::is_same_v<T, float>, is_double = std::is_same_v<T, double>;
#if XSIMD_WITH_SSE4_1
  // The low bytes of eight 32-bit integers, the first `count` of them.
  [[maybe_unused]] auto store_bytes = [p](__m128i low, __m128i high, std::size_t count) {
    const __m128i packed = _mm_packus_epi16(_mm_packus_epi32(low, high), _mm_setzero_si128());
    alignas(16) std::uint8_t sixteen[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(sixteen), packed);
    std::memcpy(p, sixteen, count);
  };
  [[maybe_unused]] const __m128i none = _mm_setzero_si128();
#endif
#if XSIMD_WITH_AVX512F
  if constexpr (bytes == 64 && is_float) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(codes)));
    return;
  }
  if constexpr (bytes == 64 && is_double) {
    const __m256i words = _mm512_cvttpd_epi32(codes);
    return store_bytes(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1), 8);
  }
#endif
#if XSIMD_WITH_AVX2
  if constexpr (bytes == 32 && is_float) {
    const __m256i words = _mm256_cvttps_epi32(codes);
    return store_bytes(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1), 8);
  }
  if constexpr (bytes == 32 && is_double) return store_bytes(_mm256_cvttpd_epi32(codes), none, 4);
#endif
#if XSIMD_WITH_SSE4_1
  if constexpr (bytes == 16 && is_float) return store_bytes(_mm_cvttps_epi32(codes), none, 4);
  if constexpr (bytes == 16 && is_double) return store_bytes(_mm_cvttpd_epi32(codes), none, 2);
#endif
  alignas(64) T values[lanes::size];
  codes.store_aligned(values);
  for (std::size_t i = 0; i < lanes::size; ++i) p[i] = static_cast<std::uint8_t>(values[i]);
}

// to[0, n) = from[0, n) for short rows, without a call to memmove per row.
template <class T>
inline void copy_row(const T* from, std::int64_t n, T* to) {
  if (with_widest_batch_within<T>(n, [&]<class Arch>() {
        using lanes = xsimd::batch<T, Arch>;
        overlapping_steps<lanes::size>(n, [&](std::int64_t x) { lanes::load_unaligned(from + x).store_unaligned(to + x); });
      }))
    return;
  for (std::int64_t x = 0; x < n; ++x) to[x] = from[x];
}

// to[0, n) += from[0, n) for short rows: the widest batches that fit, then
// narrower ones.
template <class T>
inline void add_row(const T* from, std::int64_t n, T* to) {
  std::int64_t done = 0;
  while (done < n && with_widest_batch_within<T>(n - done, [&]<class Arch>() {
           using lanes = xsimd::batch<T, Arch>;
           constexpr std::int64_t step = lanes::size;
           for (; done + step <= n; done += step)
             (lanes::load_unaligned(to + done) + lanes::load_unaligned(from + done)).store_unaligned(to + done);
         })) {
  }
  for (; done < n; ++done) to[done] += from[done];
}
#else
template <class T>
inline constexpr bool supported = false;
template <class T>
inline constexpr std::size_t width = 1;

inline void copy_row(const auto* from, std::int64_t n, auto* to) {
  for (std::int64_t x = 0; x < n; ++x) to[x] = from[x];
}
inline void add_row(const auto* from, std::int64_t n, auto* to) {
  for (std::int64_t x = 0; x < n; ++x) to[x] += from[x];
}
#endif

}  // namespace simd
}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
