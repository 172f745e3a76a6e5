#pragma once
// softmax, log_softmax and cross-entropy from logits, numerically stable at
// +-80, +-1e4 and +-inf (see kernels/cpu/softmax.hpp for the limits taken).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/softmax.hpp"
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem {

enum class reduction { mean, sum, none };

struct softmax_op {
  static constexpr const char* name = "softmax";
  static constexpr bool saves_inputs = false, saves_output = true;
  std::int64_t axis;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y& y, const X&) const { return y * (g - sum(g * y, axis, true)); }
};
struct log_softmax_op {
  static constexpr const char* name = "log_softmax";
  static constexpr bool saves_inputs = false, saves_output = true;
  std::int64_t axis;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y& y, const X&) const { return g - exp(y) * sum(g, axis, true); }
};
// d loss / d logits = (softmax(logits) - one_hot(target)) times the output's
// gradient per row (divided by N for the mean).
struct cross_entropy_op {
  static constexpr const char* name = "cross_entropy";
  reduction how;
  template <std::size_t I, class G, class Y, class L, class T>
  auto derivative(const G& g, const Y&, const L& logits, const T& target) const {
    using F = typename L::value_type;
    auto scale = how == reduction::none ? g.unsqueeze(1)
                                        : g.reshape({1, 1}) / (how == reduction::mean ? logits.shape(0) : 1);
    return (softmax(logits, 1) - one_hot<F>(target, logits.shape(1))) * scale;
  }
};

namespace detail {

// softmax or log_softmax of the rows along `axis` on a GPU, from the ops
// that have GPU kernels, with the host kernel's limits: x - max(x) shifted
// so that the largest term is 1 (no shift along a row whose max is not
// finite); a row holding +inf shares its mass among its +inf entries.
template <bool Log, class F>
tensor<F> device_softmax_values(const tensor<F>& x, std::int64_t axis) {
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

template <bool Log, class T>
tensor<floating_t<T>> softmax_along(const tensor<T>& x, std::int64_t axis, const char* op) {
  using F = floating_t<T>;
  if (x.dim() == 0) return softmax_along<Log>(x.reshape({1}), 0, op).reshape({});
  axis = normalize_axis(axis, x.shape(), op);
  tensor<F> input = x.template astype<F>();
  if (!x.device().is_cpu()) {
    tensor<F> out = device_softmax_values<Log>(input.detach(), axis);
    if constexpr (Log) record(log_softmax_op{axis}, out, input);
    else record(softmax_op{axis}, out, input);
    return out;
  }
  tensor<F> rows = input.detach().transpose(axis, -1).contiguous();
  tensor<F> out(rows.shape());
  std::int64_t n = rows.shape(-1);
  softmax_rows<Log>(rows.data(), n ? rows.numel() / n : 0, n, out.data());
  out = out.transpose(axis, -1).contiguous();
  if constexpr (Log) record(log_softmax_op{axis}, out, input);
  else record(softmax_op{axis}, out, input);
  return out;
}

}  // namespace detail

template <element T>
tensor<floating_t<T>> softmax(const tensor<T>& x, std::int64_t axis = -1) {
  return detail::softmax_along<false>(x, axis, "softmax");
}

template <element T>
tensor<floating_t<T>> log_softmax(const tensor<T>& x, std::int64_t axis = -1) {
  return detail::softmax_along<true>(x, axis, "log_softmax");
}

namespace detail {

// Cross-entropy on the GPU that holds both operands: the picked entries of
// log_softmax summed per row (where(), so a -inf elsewhere in a row is not
// multiplied by 0). The targets are checked on the host: one copy of N
// indices.
template <class T, class I>
tensor<floating_t<T>> device_cross_entropy(const tensor<T>& logits, const tensor<I>& target, reduction how) {
  using F = floating_t<T>;
  if (logits.device() != target.device())
    throw device_error("tandem::cross_entropy: logits " + to_string(logits.shape()) + " on " +
                       to_string(logits.device()) + " and targets " + to_string(target.shape()) + " on " +
                       to_string(target.device()) + " are on different devices; move them to one with to()");
  std::int64_t classes = logits.shape(1);
  std::vector<I> labels = target.to_vector();
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      throw index_error("tandem::cross_entropy: target " + std::to_string(labels[i]) + " at position " +
                        std::to_string(i) + " is outside [0, " + std::to_string(classes) + ") for logits of shape " +
                        to_string(logits.shape()));
  tensor<F> input = logits.template astype<F>();
  tensor<F> result;
  {
    no_grad values_only;
    tensor<bool> picked = target.unsqueeze(1) == arange<I>(0, static_cast<double>(classes), 1, logits.device());
    tensor<F> losses = -sum(where(picked, device_softmax_values<true>(input.detach(), 1), F(0)), 1);
    result = how == reduction::none ? losses : how == reduction::sum ? sum(losses) : mean(losses);
  }
  record(cross_entropy_op{how}, result, input, target.detach());
  return result;
}

}  // namespace detail

// Cross-entropy of logits [N, C] against class indices [N]: the mean (or sum,
// or each) of -log_softmax(logits)[i, target[i]].
template <element T, element I>
tensor<floating_t<T>> cross_entropy(const tensor<T>& logits, const tensor<I>& target,
                                    reduction how = reduction::mean) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>,
                "tandem::cross_entropy: targets must be an integer tensor of class indices");
  using F = floating_t<T>;
  if (logits.dim() != 2 || target.dim() != 1 || target.shape(0) != logits.shape(0))
    throw shape_error("tandem::cross_entropy: expected logits [N, C] and targets [N], got " +
                      to_string(logits.shape()) + " and " + to_string(target.shape()));
  std::int64_t n = logits.shape(0), classes = logits.shape(1);
  if (!logits.device().is_cpu() || !target.device().is_cpu()) return detail::device_cross_entropy(logits, target, how);
  tensor<F> input = logits.template astype<F>();
  tensor<F> rows = input.detach().contiguous();
  tensor<I> labels = target.contiguous();
  tensor<F> losses(shape{n});
  for (std::int64_t i = 0; i < n; ++i) {
    I label = labels.data()[i];
    if (label < 0 || label >= classes)
      throw index_error("tandem::cross_entropy: target " + std::to_string(label) + " at position " +
                        std::to_string(i) + " is outside [0, " + std::to_string(classes) + ") for logits of shape " +
                        to_string(logits.shape()));
  }
  detail::parallel_for(n, std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(classes, 1)),
                       [&](std::int64_t b, std::int64_t e) {
                         constexpr F inf = std::numeric_limits<F>::infinity();
                         for (std::int64_t i = b; i < e; ++i) {
                           const F* x = rows.data() + i * classes;
                           F picked = x[labels.data()[i]];
                           auto norm = detail::normalise_row(x, classes);
                           if (!norm.defined || picked != picked) losses.data()[i] = std::numeric_limits<F>::quiet_NaN();
                           else if (norm.peak == inf) losses.data()[i] = picked == inf ? norm.log_total : inf;
                           else losses.data()[i] = norm.peak + norm.log_total - picked;
                         }
                       });
  tensor<F> result = losses;
  if (how != reduction::none) {
    F total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += losses.data()[i];
    result = tensor<F>(shape{});
    *result.data() = how == reduction::sum ? total : total / static_cast<F>(n);
  }
  detail::record(cross_entropy_op{how}, result, input, labels);
  return result;
}

}  // namespace tandem
