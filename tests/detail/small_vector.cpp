// The inline-then-heap vector under shapes and strides: copies, moves and
// assignments between its two forms keep every element and share nothing.

#include <cstdint>
#include <numeric>
#include <utility>

#include "support/check.hpp"

using tandem::detail::small_vector;
using dims_vector = small_vector<std::int64_t, 6>;

namespace {

dims_vector ascending_vector(std::size_t n, std::int64_t from = 1) {
  dims_vector v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(from + static_cast<std::int64_t>(i));
  return v;
}

bool holds_ascending(const dims_vector& v, std::size_t n, std::int64_t from = 1) {
  if (v.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (v[i] != from + static_cast<std::int64_t>(i)) return false;
  return true;
}

}  // namespace

TEST_CASE("a copy holds the same elements in its own memory, inline or on the heap") {
  for (std::size_t n : {0ul, 1ul, 5ul, 6ul, 7ul, 13ul, 100ul}) {
    CAPTURE(n);
    const dims_vector original = ascending_vector(n);
    dims_vector copy = original;
    CHECK(holds_ascending(copy, n));
    CHECK(copy == original);
    if (n > 0) {
      CHECK(copy.data() != original.data());
      copy[0] = -1;
      CHECK(original[0] == 1);
    }
  }
}

TEST_CASE("a move leaves its source empty and usable") {
  for (std::size_t n : {0ul, 3ul, 6ul, 7ul, 40ul}) {
    CAPTURE(n);
    dims_vector source = ascending_vector(n);
    dims_vector moved = std::move(source);
    CHECK(holds_ascending(moved, n));
    if (n > 6) {
      CHECK(source.empty());
    }
    source.push_back(9);
    CHECK(source[source.size() - 1] == 9);
  }
}

TEST_CASE("assignment between the inline and the heap form keeps the assigned elements") {
  for (std::size_t to : {2ul, 6ul, 9ul}) {
    for (std::size_t from : {0ul, 4ul, 6ul, 7ul, 20ul}) {
      CAPTURE(to);
      CAPTURE(from);
      dims_vector target = ascending_vector(to, 100);
      const dims_vector source = ascending_vector(from);
      target = source;
      CHECK(holds_ascending(target, from));
      dims_vector moved_into = ascending_vector(to, 100);
      dims_vector moved_from = ascending_vector(from);
      moved_into = std::move(moved_from);
      CHECK(holds_ascending(moved_into, from));
      target.push_back(0);
      CHECK(holds_ascending(source, from));
    }
  }
}

TEST_CASE("a vector grows past its inline elements and edits in place") {
  dims_vector v = ascending_vector(6);
  v.insert(0, 0);
  CHECK(holds_ascending(v, 7, 0));
  v.erase(0);
  CHECK(holds_ascending(v, 6));
  v.resize(12, 7);
  CHECK(v.size() == 12);
  CHECK(std::accumulate(v.begin(), v.end(), std::int64_t{0}) == 21 + 6 * 7);
  CHECK(v == dims_vector(v.begin(), v.end()));
  CHECK_FALSE(v == ascending_vector(12));
  v.clear();
  CHECK(v.empty());
}
