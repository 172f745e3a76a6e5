#pragma once
// The derivative rule of tensor::to (a copy between devices): the gradient
// goes back to the device the input lives on.

#include <cstddef>

#include "tandem/core/device.hpp"

namespace tandem {

struct transfer_op {
  static constexpr const char* name = "to";
  static constexpr bool saves_inputs = false;
  device from;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return g.to(from);
  }
};

}  // namespace tandem
