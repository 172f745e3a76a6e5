#pragma once
// The one door to xsimd. Kernels ask this header whether a type has a SIMD
// batch on the target and use batch<T>, load, store and splat from here; a
// target without SIMD support gets width 1 and the scalar loops.

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/kernels/cpu/isa.hpp"

#if !defined(__CUDA_ARCH__)
#include <xsimd/xsimd.hpp>
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
template <class T>
TANDEM_ALWAYS_INLINE batch<T> splat(T value) {
  return batch<T>(value);
}
template <class T>
TANDEM_ALWAYS_INLINE T reduce_add(const batch<T>& v) {
  return xsimd::hadd(v);
}
#else
template <class T>
inline constexpr bool supported = false;
template <class T>
inline constexpr std::size_t width = 1;
#endif

}  // namespace simd
}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
