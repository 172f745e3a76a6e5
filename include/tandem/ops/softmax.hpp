#pragma once
// softmax, log_softmax and cross-entropy from logits, numerically stable at
// +-80, +-1e4 and +-inf (see kernels/cpu/softmax.hpp for the limits taken).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/softmax.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
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

// On a GPU, softmax and cross-entropy are compositions of ops with device
// kernels (ops/composed/softmax.hpp), values only, that <tandem/cuda.hpp>
// installs here: host-only units do not instantiate them.
template <class F, bool Log>
inline std::atomic<tensor<F> (*)(const tensor<F>& x, std::int64_t axis)> cuda_softmax_slot{nullptr};
// The loss of each row of logits [N, C] against targets [N] in [0, C).
template <class F, class I>
inline std::atomic<tensor<F> (*)(const tensor<F>& logits, const tensor<I>& target)> cuda_cross_entropy_slot{nullptr};

// x itself where it is floating already (no copy), else converted.
template <class T>
tensor<floating_t<T>> as_floating(const tensor<T>& x) {
  if constexpr (std::is_same_v<floating_t<T>, T>) return x;
  else return x.template astype<floating_t<T>>();
}

template <bool Log, class T>
tensor<floating_t<T>> softmax_along(const tensor<T>& x, std::int64_t axis, const char* op) {
  profile_range range(profile_category::op, op);
  if (range.recording()) describe_inputs(range, x);
  using F = floating_t<T>;
  if (x.dim() == 0) return softmax_along<Log>(x.reshape({1}), 0, op).reshape({});
  axis = normalize_axis(axis, x.shape(), op);
  tensor<F> input = as_floating(x);
  if (!x.device().is_cpu()) {
    auto kernel = cuda_softmax_slot<F, Log>.load(std::memory_order_acquire);
    if (!kernel) throw_missing_kernel(op, "softmax of these elements");
    tensor<F> out = kernel(input.detach(), axis);
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

// Cross-entropy of logits [N, C] against class indices [N]: the mean (or sum,
// or each) of -log_softmax(logits)[i, target[i]].
template <element T, element I>
tensor<floating_t<T>> cross_entropy(const tensor<T>& logits, const tensor<I>& target,
                                    reduction how = reduction::mean) {
  detail::profile_range range(profile_category::op, "cross_entropy");
  if (range.recording()) detail::describe_inputs(range, logits, target);
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>,
                "tandem::cross_entropy: targets must be an integer tensor of class indices");
  using F = floating_t<T>;
  if (logits.dim() != 2 || target.dim() != 1 || target.shape(0) != logits.shape(0))
    throw shape_error("tandem::cross_entropy: expected logits [N, C] and targets [N], got " +
                      to_string(logits.shape()) + " and " + to_string(target.shape()));
  std::int64_t n = logits.shape(0), classes = logits.shape(1);
  if (logits.device() != target.device())
    throw device_error("tandem::cross_entropy: logits " + to_string(logits.shape()) + " on " +
                       to_string(logits.device()) + " and targets " + to_string(target.shape()) + " on " +
                       to_string(target.device()) + " are on different devices; move them to one with to()");
  tensor<F> input = detail::as_floating(logits);
  tensor<I> labels = target.detach().contiguous();
  std::vector<I> host_labels;
  if (!labels.device().is_cpu()) host_labels = labels.to_vector();
  const I* label_data = labels.device().is_cpu() ? labels.data() : host_labels.data();
  for (std::int64_t i = 0; i < n; ++i)
    if (label_data[i] < 0 || label_data[i] >= classes)
      throw index_error("tandem::cross_entropy: target " + std::to_string(label_data[i]) + " at position " +
                        std::to_string(i) + " is outside [0, " + std::to_string(classes) + ") for logits of shape " +
                        to_string(logits.shape()));
  if (!logits.device().is_cpu()) {
    auto kernel = detail::cuda_cross_entropy_slot<F, I>.load(std::memory_order_acquire);
    if (!kernel) detail::throw_missing_kernel("cross_entropy", "cross-entropy of these elements");
    tensor<F> losses = kernel(input.detach(), labels);
    tensor<F> result;
    {
      no_grad values_only;
      result = how == reduction::none ? losses : how == reduction::sum ? sum(losses) : mean(losses);
    }
    detail::record(cross_entropy_op{how}, result, input, labels);
    return result;
  }
  tensor<F> rows = input.detach().contiguous();
  tensor<F> losses(shape{n});
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
