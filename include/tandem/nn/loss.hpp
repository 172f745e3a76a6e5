#pragma once
// Losses, written with tandem ops so that each works on tensors and inside a
// static graph, and takes its gradient from the ops' own derivative rules:
// cross-entropy from logits (with optional label smoothing), NLL of
// log-probabilities, MSE, and binary cross-entropy from logits. Each takes
// reduction::mean (the default), sum or none.

#include <cstdint>
#include <string>

#include "tandem/core/error.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/shape.hpp"
#include "tandem/ops/softmax.hpp"

namespace tandem::detail {

// Function objects with names for the graph's nodes (graph/ops.hpp says
// why), in tandem::detail as the graph's own are (layer_call says why).
struct loss_reduction {
  reduction how;
  template <class T>
  tensor<T> operator()(const tensor<T>& x) const {
    if (how == reduction::sum) return sum(x);
    if (how == reduction::mean) return mean(x);
    return x;
  }
};

template <class X>
auto loss_reduced(const X& x, reduction how) {
  // One node type whatever `how` is (sum and mean are different types).
  if constexpr (is_symbolic_v<X>) return apply_eager("loss_reduction", loss_reduction{how}, x);
  else return loss_reduction{how}(x);
}

struct negative_log_likelihood {
  reduction how;
  template <class F, class I>
  tensor<F> operator()(const tensor<F>& log_probs, const tensor<I>& target) const {
    if (log_probs.dim() != 2 || target.dim() != 1 || target.shape(0) != log_probs.shape(0))
      throw shape_error("tandem::nn::nll_loss: expected log-probabilities [N, C] and targets [N], got " +
                        to_string(log_probs.shape()) + " and " + to_string(target.shape()));
    return loss_reduced(-sum(log_probs * one_hot<F>(target, log_probs.shape(1)), 1), how);
  }
};

}  // namespace tandem::detail

namespace tandem::nn {

struct cross_entropy_options {
  double label_smoothing = 0;
  reduction how = reduction::mean;
};

// Cross-entropy of logits [N, C] against class indices [N]. With label
// smoothing e, the target is (1 - e) on the true class plus e / C on every
// class: (1 - e) * CE - e * mean over classes of log_softmax.
template <class L, class T>
auto cross_entropy(const L& logits, const T& target, const cross_entropy_options& options = {}) {
  double e = options.label_smoothing;
  if (!(e >= 0 && e <= 1))
    throw value_error("tandem::nn::cross_entropy: label smoothing must lie in [0, 1] (got " + std::to_string(e) + ")");
  auto hard = tandem::cross_entropy(logits, target, options.how);
  if constexpr (!tandem::detail::any_symbolic<L, T>)
    if (e == 0) return hard;
  auto uniform = tandem::detail::loss_reduced(-mean(log_softmax(logits, 1), 1), options.how);
  return hard * (1 - e) + uniform * e;
}

// Negative log-likelihood of log-probabilities [N, C] against class indices
// [N]: -log_probs[i, target[i]], reduced.
template <class L, class T>
auto nll_loss(const L& log_probs, const T& target, reduction how = reduction::mean) {
  return tandem::detail::call_or_trace("nll_loss", tandem::detail::negative_log_likelihood{how}, log_probs, target);
}

// Mean squared error: (prediction - target)^2, reduced.
template <class P, class T>
auto mse_loss(const P& prediction, const T& target, reduction how = reduction::mean) {
  return tandem::detail::loss_reduced(square(prediction - target), how);
}

// Binary cross-entropy of logits x against targets t in [0, 1], stable for
// any x: max(x, 0) - x t + log(1 + exp(-|x|)).
template <class X, class T>
auto bce_with_logits(const X& logits, const T& target, reduction how = reduction::mean) {
  return tandem::detail::loss_reduced(tandem::relu(logits) - logits * target + tandem::softplus(-tandem::abs(logits)), how);
}

}  // namespace tandem::nn
