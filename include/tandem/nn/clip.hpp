#pragma once
// Gradient clipping by the global norm (PyTorch's clip_grad_norm_): when the
// L2 norm of all gradients together exceeds max_norm, every gradient is
// scaled by max_norm / (norm + 1e-6). Either on the parameters' `.grad`
// after an eager backward, or on a training step's gradients before its
// update, as its gradient hook (train_step.hpp):
//
//   auto step = jit(nn::train_step(loss_of, optimizer, nn::clip_grad_norm(1.0)));
//
// Both return or record the norm before clipping.

#include <cmath>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/nn/optimizer.hpp"
#include "tandem/nn/train_step.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::nn {
namespace detail {

inline void check_max_norm(double max_norm) {
  if (!(max_norm > 0)) throw value_error("tandem::nn::clip_grad_norm: max_norm must be positive, got " + std::to_string(max_norm));
}

template <class T>
double squared_norm(const tensor<T>& g) {
  return static_cast<double>(sum(square(g.detach())).item());
}

// Scales the gradients in place if their norm exceeds max_norm; returns the norm.
template <class Each>
double clip_by_norm(double max_norm, const Each& each) {
  check_max_norm(max_norm);
  no_grad plain;
  double total = 0;
  each([&](auto& g) { total += squared_norm(g); });
  const double norm = std::sqrt(total);
  if (norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    each([&](auto& g) {
      using T = typename std::decay_t<decltype(g)>::value_type;
      auto scaled = g.detach() * static_cast<T>(scale);
      g.assign(scaled);
    });
  }
  return norm;
}

}  // namespace detail

// The parameters' gradients (`.grad`, where they have one), clipped.
inline double clip_grad_norm(const std::vector<named_tensor>& parameters, double max_norm) {
  return detail::clip_by_norm(max_norm, [&](const auto& visit) {
    for (const auto& p : parameters)
      std::visit(
          [&](const auto& t) {
            if (!t.has_grad()) return;
            auto g = t.grad();
            visit(g);
          },
          p.value);
  });
}

// A training step's gradients, clipped in place.
inline double clip_grad_norm(step_gradients& gradients, double max_norm) {
  return detail::clip_by_norm(max_norm, [&](const auto& visit) {
    for (auto& g : gradients.floats) visit(g);
    for (auto& g : gradients.doubles) visit(g);
  });
}

// A gradient hook that clips each step's gradients; `norm`, if given,
// receives the norm each step had before clipping.
inline gradient_hook clip_grad_norm(double max_norm, std::shared_ptr<double> norm = nullptr) {
  detail::check_max_norm(max_norm);
  return [max_norm, norm](step_gradients& gradients) {
    const double before = clip_grad_norm(gradients, max_norm);
    if (norm) *norm = before;
  };
}

}  // namespace tandem::nn
