#pragma once
// The shape functions declared in core/shape.hpp that build error messages
// or allocate: inline in header-only builds, compiled once into
// tandem::compiled (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <algorithm>
#include <string>
#include <utility>

#include "tandem/core/shape.hpp"

namespace tandem {

TANDEM_LIBRARY_FUNCTION std::string to_string(std::span<const std::int64_t> s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

namespace detail {

TANDEM_LIBRARY_FUNCTION void throw_too_many_elements(const shape& s) {
  throw shape_error("tandem: a tensor of shape " + to_string(s) +
                    " would have more elements than a 64-bit index can count");
}

TANDEM_LIBRARY_FUNCTION std::int64_t normalize_axis(std::int64_t axis, const shape& s, const char* op, std::int64_t added) {
  std::int64_t rank = s.rank() + added;
  std::int64_t fixed = axis < 0 ? axis + rank : axis;
  if (fixed < 0 || fixed >= rank)
    throw index_error(std::string("tandem::") + op + ": axis " + std::to_string(axis) + " is out of range [" +
                      std::to_string(-rank) + ", " + std::to_string(rank) + ") for a tensor of shape " +
                      to_string(s));
  return fixed;
}

TANDEM_LIBRARY_FUNCTION std::int64_t checked_index(std::int64_t i, const shape& s, std::int64_t axis, const char* op) {
  std::int64_t extent = s[axis];
  std::int64_t fixed = i < 0 ? i + extent : i;
  if (fixed < 0 || fixed >= extent)
    throw index_error(std::string("tandem::") + op + ": index " + std::to_string(i) + " is out of range for axis " +
                      std::to_string(axis) + " of a tensor of shape " + to_string(s));
  return fixed;
}

TANDEM_LIBRARY_FUNCTION bool try_broadcast(shape& into, const shape& other) {
  // Equal shapes, the common case, without building a new one.
  if (into == other) return true;
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

TANDEM_LIBRARY_FUNCTION shape broadcast_shapes(shape a, const shape& b, const char* op) {
  shape joined = a;
  if (!try_broadcast(joined, b))
    throw shape_error(std::string("tandem::") + op + ": shapes " + to_string(a) + " and " + to_string(b) +
                      " cannot be broadcast together");
  return joined;
}

}  // namespace detail
}  // namespace tandem
