#pragma once
// The derivative rules of the views (members of tensor<T>): each gradient
// is the inverse view of the output's gradient, or its sum over broadcast
// axes for expand, or its embedding into zeros for slice and select. A cast
// passes the gradient on; the engine converts it to the input's type.

#include <cstdint>

#include "tandem/core/shape.hpp"

namespace tandem {

struct reshape_op {
  static constexpr const char* name = "reshape";
  static constexpr bool saves_inputs = false;
  shape from;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return g.reshape(from);
  }
};

struct permute_op {
  static constexpr const char* name = "permute";
  static constexpr bool saves_inputs = false;
  detail::dims order;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    detail::dims inverse(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) inverse[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
    return g.permute(std::span<const std::int64_t>(inverse.data(), inverse.size()));
  }
};

// count elements along `axis`, from `first`, every `step`.
struct take_op {
  static constexpr const char* name = "slice";
  static constexpr bool saves_inputs = false;
  shape from;
  std::int64_t axis, first, count, step;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return embed(g, from, axis, first, step);
  }
};

// The inverse of take: g placed into zeros of shape `into`.
struct embed_op {
  static constexpr const char* name = "embed";
  static constexpr bool saves_inputs = false;
  std::int64_t axis, first, count, step;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return g.take(axis, first, count, step);
  }
};

struct expand_op {
  static constexpr const char* name = "expand";
  static constexpr bool saves_inputs = false;
  shape from;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return sum_to(g, from);
  }
};

struct cast_op {
  static constexpr const char* name = "cast";
  static constexpr bool saves_inputs = false;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return g;
  }
};

}  // namespace tandem
