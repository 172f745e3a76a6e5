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

namespace tandem::nn {

namespace detail {

template <class X>
auto reduced(const X& x, reduction how) {
  if constexpr (is_symbolic_v<X>) {
    // One node type whatever `how` is (sum and mean are different types).
    return tandem::detail::apply_eager("loss_reduction", [how](const auto& t) { return reduced(t, how); }, x);
  } else {
    if (how == reduction::sum) return sum(x);
    if (how == reduction::mean) return mean(x);
    return x;
  }
}

}  // namespace detail

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
  auto uniform = detail::reduced(-mean(log_softmax(logits, 1), 1), options.how);
  return hard * (1 - e) + uniform * e;
}

// Negative log-likelihood of log-probabilities [N, C] against class indices
// [N]: -log_probs[i, target[i]], reduced.
template <class L, class T>
auto nll_loss(const L& log_probs, const T& target, reduction how = reduction::mean) {
  return tandem::detail::call_or_trace(
      "nll_loss",
      [how](const auto& lp, const auto& t) {
        if (lp.dim() != 2 || t.dim() != 1 || t.shape(0) != lp.shape(0))
          throw shape_error("tandem::nn::nll_loss: expected log-probabilities [N, C] and targets [N], got " +
                            to_string(lp.shape()) + " and " + to_string(t.shape()));
        using F = typename std::decay_t<decltype(lp)>::value_type;
        return detail::reduced(-sum(lp * one_hot<F>(t, lp.shape(1)), 1), how);
      },
      log_probs, target);
}

// Mean squared error: (prediction - target)^2, reduced.
template <class P, class T>
auto mse_loss(const P& prediction, const T& target, reduction how = reduction::mean) {
  return detail::reduced(square(prediction - target), how);
}

// Binary cross-entropy of logits x against targets t in [0, 1], stable for
// any x: max(x, 0) - x t + log(1 + exp(-|x|)).
template <class X, class T>
auto bce_with_logits(const X& logits, const T& target, reduction how = reduction::mean) {
  return detail::reduced(tandem::relu(logits) - logits * target + tandem::softplus(-tandem::abs(logits)), how);
}

}  // namespace tandem::nn
