#pragma once
// What the op headers need to know of static graphs: that symbolic values
// exist, and the one entry point through which every elementwise op builds a
// graph node when one of its operands is symbolic. The definitions live in
// the rest of graph/.

#include <cstdint>
#include <type_traits>
#include <vector>

#include "tandem/core/shape.hpp"

namespace tandem {

// A symbolic value of a static graph: what a jitted function receives in
// place of each tensor and what tandem ops return when given one.
template <class Node>
class sym;

template <class X>
inline constexpr bool is_symbolic_v = false;
template <class Node>
inline constexpr bool is_symbolic_v<sym<Node>> = true;

// The view ops on symbolic values (graph/ops.hpp), for sym's members.
template <class N>
auto reshape(const sym<N>& x, const shape& s);
template <class N>
auto transpose(const sym<N>& x, std::int64_t a, std::int64_t b);
template <class N>
auto unsqueeze(const sym<N>& x, std::int64_t axis);
template <class N>
auto squeeze(const sym<N>& x, std::int64_t axis);
template <class N>
auto permute(const sym<N>& x, std::vector<std::int64_t> order);
template <class N>
auto take(const sym<N>& x, std::int64_t axis, std::int64_t first, std::int64_t count, std::int64_t step = 1);

namespace detail {

template <class... X>
inline constexpr bool any_symbolic = (is_symbolic_v<X> || ...);

template <class Op, class... X>
auto symbolic_map(const Op& op, const X&... x);

}  // namespace detail
}  // namespace tandem
