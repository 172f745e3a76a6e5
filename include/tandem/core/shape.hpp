#pragma once
// The runtime shape of a tensor, and the rules every op shares: element
// counts, row-major strides, axis normalisation and NumPy broadcasting.

#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/core/error.hpp"
#include "tandem/detail/small_vector.hpp"

namespace tandem {

namespace detail {
using dims = small_vector<std::int64_t, 6>;
}

class shape : public detail::dims {
 public:
  using detail::dims::dims;
  shape() = default;
  shape(const detail::dims& d) : detail::dims(d) {}
  shape(const std::vector<std::int64_t>& d) : detail::dims(d.begin(), d.end()) {}
  shape(std::span<const std::int64_t> d) : detail::dims(d.begin(), d.end()) {}

  std::int64_t rank() const { return static_cast<std::int64_t>(size()); }
};

inline std::int64_t numel(std::span<const std::int64_t> s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>{});
}
inline std::int64_t numel(const shape& s) { return numel(std::span<const std::int64_t>(s.data(), s.size())); }

std::string to_string(std::span<const std::int64_t> s);
inline std::string to_string(const shape& s) { return to_string(std::span<const std::int64_t>(s.data(), s.size())); }

namespace detail {

[[noreturn]] void throw_too_many_elements(const shape& s);

// The number of elements of a new tensor of shape `s`, each `element_size`
// bytes: refused where the nonzero extents, or the bytes they take, pass
// what int64 counts (a wrapped size would allocate a small buffer for a
// large tensor).
inline std::int64_t checked_numel(const shape& s, std::int64_t element_size) {
  std::int64_t nonzero = 1, bytes = 0;
  bool empty = false;
  for (std::int64_t extent : s) {
    if (extent == 0) empty = true;
    else if (__builtin_mul_overflow(nonzero, extent, &nonzero)) throw_too_many_elements(s);
  }
  if (__builtin_mul_overflow(nonzero, element_size, &bytes)) throw_too_many_elements(s);
  return empty ? 0 : nonzero;
}

// Row-major strides. A shape whose extents multiply past what int64 counts
// (zeros aside: [0, 2^40, 2^40] has no elements, but its strides would
// overflow) is refused here, where every tensor's layout is made.
inline dims contiguous_strides(const shape& s) {
  dims strides(s.size(), 1);
  std::int64_t step = 1, nonzero = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    strides[i] = step;
    if (s[i] != 0 && __builtin_mul_overflow(nonzero, s[i], &nonzero)) throw_too_many_elements(s);
    step *= s[i];
  }
  return strides;
}

// Maps a possibly negative axis of a tensor of shape `s` (with `added` new
// axes, for unsqueeze and stack) into [0, rank); `op` names the caller.
std::int64_t normalize_axis(std::int64_t axis, const shape& s, const char* op, std::int64_t added = 0);

// Maps a possibly negative index along `axis` of shape `s` into [0, extent).
std::int64_t checked_index(std::int64_t i, const shape& s, std::int64_t axis, const char* op);

// Broadcasts `into` with `other` as NumPy does; false if they do not fit.
bool try_broadcast(shape& into, const shape& other);

// The NumPy broadcast of two shapes; `op` names the caller in the error.
shape broadcast_shapes(shape a, const shape& b, const char* op);

// Whether `from` broadcasts to exactly `to` (as numpy.broadcast_to allows).
inline bool broadcasts_to(const shape& from, const shape& to) {
  if (from.size() > to.size()) return false;
  std::size_t lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

}  // namespace detail
}  // namespace tandem

#if TANDEM_HEADER_ONLY
#include "tandem/core/shape-inl.hpp"
#endif
