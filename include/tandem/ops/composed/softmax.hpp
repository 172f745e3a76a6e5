#pragma once
// softmax, log_softmax, cross-entropy and one_hot composed of ops that have
// device kernels, with the host kernels' limits. <tandem/cuda.hpp> compiles
// them into a program's nvcc unit and installs them in the slots that
// ops/softmax.hpp and ops/shape.hpp reach for GPU tensors; host-only units
// never instantiate them. They are generic, so the tests run them on the
// host beside the host kernels.

#include <cstdint>
#include <limits>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

// softmax or log_softmax of the rows along `axis`: x - max(x) shifted so
// that the largest term is 1 (no shift along a row whose max is not
// finite); a row holding +inf shares its mass among its +inf entries.
template <bool Log, class F>
tensor<F> composed_softmax(const tensor<F>& x, std::int64_t axis) {
  no_grad values_only;
  constexpr F inf = std::numeric_limits<F>::infinity();
  tensor<F> peak = max(x, axis, true);
  tensor<F> shifted = x - where(isfinite(peak), peak, F(0));
  tensor<F> total = sum(exp(shifted), axis, true);
  tensor<bool> top = x == inf;
  tensor<F> tops = sum(top.template astype<F>(), axis, true);
  tensor<bool> infinite_row = peak == inf;
  if constexpr (Log) return where(infinite_row, where(top, -log(tops), -inf), shifted - log(total));
  else return where(infinite_row, top.template astype<F>() / tops, exp(shifted) / total);
}

// The loss of each row of logits [N, C] against checked targets [N]: the
// picked entry of log_softmax (where(), so a -inf elsewhere in a row is not
// multiplied by 0).
template <class F, class I>
tensor<F> composed_cross_entropy_losses(const tensor<F>& logits, const tensor<I>& target) {
  no_grad values_only;
  tensor<bool> picked = target.unsqueeze(1) == arange<I>(0, static_cast<double>(logits.shape(1)), 1, logits.device());
  return -sum(where(picked, composed_softmax<true>(logits, 1), F(0)), 1);
}

// indices [...] (checked) -> [..., classes] with a 1 at each index.
template <class T, class I>
tensor<T> composed_one_hot(const tensor<I>& indices, std::int64_t classes) {
  no_grad constant;
  return (indices.unsqueeze(-1) == arange<I>(0, static_cast<double>(classes), 1, indices.device())).template astype<T>();
}

}  // namespace tandem::detail
