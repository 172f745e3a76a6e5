#pragma once
// The runtime shape of a tensor, and the rules every op shares: element
// counts, row-major strides, axis normalisation and NumPy broadcasting.

#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

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

inline std::string to_string(std::span<const std::int64_t> s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}
inline std::string to_string(const shape& s) { return to_string(std::span<const std::int64_t>(s.data(), s.size())); }

namespace detail {

inline dims contiguous_strides(const shape& s) {
  dims strides(s.size(), 1);
  std::int64_t step = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    strides[i] = step;
    step *= s[i];
  }
  return strides;
}

// Maps a possibly negative axis of a tensor of shape `s` (with `added` new
// axes, for unsqueeze and stack) into [0, rank); `op` names the caller.
inline std::int64_t normalize_axis(std::int64_t axis, const shape& s, const char* op, std::int64_t added = 0) {
  std::int64_t rank = s.rank() + added;
  std::int64_t fixed = axis < 0 ? axis + rank : axis;
  if (fixed < 0 || fixed >= rank)
    throw index_error(std::string("tandem::") + op + ": axis " + std::to_string(axis) + " is out of range [" +
                      std::to_string(-rank) + ", " + std::to_string(rank) + ") for a tensor of shape " +
                      to_string(s));
  return fixed;
}

// Maps a possibly negative index along `axis` of shape `s` into [0, extent).
inline std::int64_t checked_index(std::int64_t i, const shape& s, std::int64_t axis, const char* op) {
  std::int64_t extent = s[axis];
  std::int64_t fixed = i < 0 ? i + extent : i;
  if (fixed < 0 || fixed >= extent)
    throw index_error(std::string("tandem::") + op + ": index " + std::to_string(i) + " is out of range for axis " +
                      std::to_string(axis) + " of a tensor of shape " + to_string(s));
  return fixed;
}

// Broadcasts `into` with `other` as NumPy does; false if they do not fit.
inline bool try_broadcast(shape& into, const shape& other) {
  std::size_t rank = std::max(into.size(), other.size());
  shape out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    std::int64_t da = i < rank - into.size() ? 1 : into[i - (rank - into.size())];
    std::int64_t db = i < rank - other.size() ? 1 : other[i - (rank - other.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  into = std::move(out);
  return true;
}

// The NumPy broadcast of two shapes; `op` names the caller in the error.
inline shape broadcast_shapes(shape a, const shape& b, const char* op) {
  shape joined = a;
  if (!try_broadcast(joined, b))
    throw shape_error(std::string("tandem::") + op + ": shapes " + to_string(a) + " and " + to_string(b) +
                      " cannot be broadcast together");
  return joined;
}

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
