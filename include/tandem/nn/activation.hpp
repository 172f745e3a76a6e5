#pragma once
// The activations and flatten as modules, for nn::sequential. Each forwards
// to the tandem op of the same name, so it works on tensors and inside a
// static graph alike.

#include <cstdint>

#include "tandem/graph/ops.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem::nn {

// A module without state whose forward is Op.
template <class Op>
struct op_layer : module<op_layer<Op>> {
  op_layer() = default;
  template <class X>
  auto forward(const X& x) const {
    return Op{}(x);
  }
};

namespace detail {
struct relu_of {
  auto operator()(const auto& x) const { return tandem::relu(x); }
};
struct gelu_of {
  auto operator()(const auto& x) const { return tandem::gelu(x); }
};
struct tanh_of {
  auto operator()(const auto& x) const { return tandem::tanh(x); }
};
struct sigmoid_of {
  auto operator()(const auto& x) const { return tandem::sigmoid(x); }
};
// [N, d1, d2, ...] to [N, d1 * d2 * ...].
struct flatten_of {
  auto operator()(const auto& x) const { return tandem::flatten(x, 1); }
};
}  // namespace detail

using relu = op_layer<detail::relu_of>;
using gelu = op_layer<detail::gelu_of>;
using tanh = op_layer<detail::tanh_of>;
using sigmoid = op_layer<detail::sigmoid_of>;
using flatten = op_layer<detail::flatten_of>;

}  // namespace tandem::nn
