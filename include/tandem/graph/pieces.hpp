#pragma once
// Pieces of symbolic values and joins of them: split (by a size or by
// sizes), chunk, concat and stack, the static forms of ops/shape.hpp's.
// split and chunk return a std::vector of nodes of one type; concat and
// stack take a std::tuple, since the values they join have types of their
// own. split by a size and chunk read the extent they cut from the traced
// shape (graph/trace_shape.hpp).

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "tandem/graph/ops.hpp"

namespace tandem {
namespace detail {

// The pieces of split() by sizes: each checks that the sizes add up to the
// extent it is cut from, which a trace without shapes could not.
struct split_piece {
  std::int64_t axis, first, count, total;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    const std::int64_t extent = t.shape(axis);
    if (extent != total)
      throw shape_error("tandem::split: sizes adding up to " + std::to_string(total) + " do not cut axis " +
                        std::to_string(axis) + " of shape " + to_string(t.shape()));
    return t.take(axis, first, count, 1);
  }
  shape result_shape(const shape& in) const { return with_extent(in, axis, count, "split"); }
};
struct concatenation {
  std::int64_t axis;
  template <class T, class... R>
  auto operator()(const tensor<T>& first, const tensor<R>&... rest) const {
    return concat(std::vector<tensor<T>>{first, rest...}, axis);
  }
  template <class... S>
  shape result_shape(const shape& first, const S&... rest) const {
    shape out = first;
    const std::int64_t a = normalize_axis(axis, first, "concat");
    ((out[a] += rest[a]), ...);
    return out;
  }
};

}  // namespace detail

// concat and stack of symbolic values (and tensors among them) given as a
// tuple, since their types differ: concat(std::tuple{k_cache, k}, 2).
template <class... X>
  requires(detail::any_symbolic<X...> && (detail::has_elements<X> && ...))
auto concat(const std::tuple<X...>& xs, std::int64_t axis = 0) {
  return std::apply(
      [&](const auto&... x) {
        return detail::apply_eager("concat", detail::concatenation{axis}, detail::operand_symbol(x)...);
      },
      xs);
}
template <class... X>
  requires(detail::any_symbolic<X...> && (detail::has_elements<X> && ...))
auto stack(const std::tuple<X...>& xs, std::int64_t axis = 0) {
  return std::apply([&](const auto&... x) { return concat(std::tuple{unsqueeze(detail::operand_symbol(x), axis)...}, axis); },
                    xs);
}
// Pieces of x along the axis: of `size` each (the last may be shorter),
// as many as x's extent there needs (its shape, known while tracing).
template <class N>
auto split(const sym<N>& x, std::int64_t size, std::int64_t axis = 0) {
  if (size <= 0) throw value_error("tandem::split: piece size must be positive (got " + std::to_string(size) + ")");
  const std::int64_t extent = x.shape(axis);
  std::vector<decltype(detail::apply_eager("split", detail::split_piece{}, x))> pieces;
  for (std::int64_t at = 0; at < extent; at += size)
    pieces.push_back(detail::apply_eager("split", detail::split_piece{axis, at, std::min(size, extent - at), extent}, x));
  return pieces;
}
// Pieces of the given sizes, which must add up to the extent.
template <class N>
auto split(const sym<N>& x, const std::vector<std::int64_t>& sizes, std::int64_t axis = 0) {
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0) throw value_error("tandem::split: piece sizes must not be negative (got " + std::to_string(s) + ")");
    total += s;
  }
  std::vector<decltype(detail::apply_eager("split", detail::split_piece{}, x))> pieces;
  std::int64_t at = 0;
  for (auto s : sizes) {
    pieces.push_back(detail::apply_eager("split", detail::split_piece{axis, at, s, total}, x));
    at += s;
  }
  return pieces;
}
// `chunks` pieces of equal size along the axis (the last may be shorter), as
// torch.chunk.
template <class N>
auto chunk(const sym<N>& x, std::int64_t chunks, std::int64_t axis = 0) {
  if (chunks <= 0) throw value_error("tandem::chunk: the number of chunks must be positive (got " + std::to_string(chunks) + ")");
  const std::int64_t extent = x.shape(axis);
  return split(x, std::max<std::int64_t>(1, (extent + chunks - 1) / chunks), axis);
}

}  // namespace tandem
