#pragma once
// Optimizers: SGD (momentum, Nesterov, weight decay), Adam and AdamW, with
// PyTorch's update rules. Each step updates every parameter in one fused
// loop that reads the parameter, its gradient and its state once and writes
// the parameter and its state once (the elementwise kernel with several
// outputs, in place). Parameters without a gradient are skipped.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/profiling.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/nn/module.hpp"

namespace tandem::nn {

namespace detail {

// One parameter being optimized and its state (moments, momentum), all of
// the parameter's shape and type.
template <class T>
struct slot_state {
  std::string name;
  tensor<T> value;
  std::vector<tensor<T>> state;
};

// The updates: elementwise ops with several outputs (the parameter, then
// its state), run on SIMD batches on the host and per element on a GPU. On
// the host they flush subnormal numbers to zero (kernels/cpu/subnormals.hpp):
// state that decays step after step would otherwise spend thousands of
// steps in the range where each instruction takes a microcode assist.
template <class T>
struct sgd_plain_op {
  static constexpr const char* name = "sgd";
  static constexpr bool flushes_subnormals = true;
  T lr, decay;
  template <class V>
  TANDEM_HOST_DEVICE std::array<V, 1> operator()(const V& p, const V& g) const {
    return {p - V(lr) * (g + V(decay) * p)};
  }
};
template <class T>
struct sgd_momentum_op {
  static constexpr const char* name = "sgd";
  static constexpr bool flushes_subnormals = true;
  T lr, decay, momentum, fresh;
  bool first, nesterov;
  template <class V>
  TANDEM_HOST_DEVICE std::array<V, 2> operator()(const V& p, const V& g, const V& b) const {
    V d = g + V(decay) * p;
    V next = first ? d : V(momentum) * b + V(fresh) * d;
    V direction = nesterov ? d + V(momentum) * next : next;
    return {p - V(lr) * direction, next};
  }
};
template <class T>
struct adam_op {
  static constexpr const char* name = "adam";
  static constexpr bool flushes_subnormals = true;
  T step_size, root_correction, beta1, beta2, eps, decay, shrink;
  bool decoupled;
  template <class V>
  TANDEM_HOST_DEVICE std::array<V, 3> operator()(const V& p, const V& g, const V& m, const V& v) const {
    V d = decoupled ? g : g + V(decay) * p;
    V m1 = V(beta1) * m + V(T(1) - beta1) * d;
    V v1 = V(beta2) * v + V(T(1) - beta2) * d * d;
    V denominator = tandem::detail::math::sqrt(v1) * V(root_correction) + V(eps);
    V base = decoupled ? p * V(shrink) : p;
    return {base - V(step_size) * m1 / denominator, m1, v1};
  }
};

// The update on the GPU that holds the parameter (kernels/cuda/update.hpp).
template <class T, std::size_t S, class Op>
void update_on_device(const Op& op, slot_state<T>& p, const tensor<T>& g) {
  const device where = p.value.device();
  tandem::detail::runtime_for(where, Op::name);
  auto kernel = tandem::detail::cuda_update_slot<T, S, Op>.load(std::memory_order_acquire);
  if (!kernel) tandem::detail::throw_missing_kernel(Op::name, "this optimizer's update");
  std::array<T*, 1 + S> out{};
  std::array<const T*, S> state{};
  out[0] = p.value.device_data();
  // `k != S`: nvcc warns that `k < S` is a pointless comparison where S is 0.
  for (std::size_t k = 0; k != S; ++k) {
    if (p.state[k].device() != where)
      throw device_error("tandem::nn::optimizer: the state of '" + p.name + "' is on " +
                         to_string(p.state[k].device()) + ", the parameter on " + to_string(where) +
                         "; build the optimizer after moving the model");
    out[k + 1] = p.state[k].device_data();
    state[k] = p.state[k].device_data();
  }
  kernel(op, where.index(), p.value.numel(), out, p.value.device_data(), g.device_data(), state);
  p.value.storage()->bump_version();
}

// Runs `op` over a parameter, its gradient and its state; op returns the new
// parameter and the new state.
template <class T, std::size_t S, class Op>
void update_in_place(const Op& op, slot_state<T>& p, const tensor<T>& grad) {
  if (!p.value.is_contiguous())
    throw value_error("tandem::nn::optimizer: parameter '" + p.name + "' is not contiguous");
  if (grad.shape() != p.value.shape())
    throw shape_error("tandem::nn::optimizer: the gradient of '" + p.name + "' has shape " + to_string(grad.shape()) +
                      ", the parameter " + to_string(p.value.shape()));
  if (grad.device() != p.value.device())
    throw device_error("tandem::nn::optimizer: the gradient of '" + p.name + "' is on " + to_string(grad.device()) +
                       ", the parameter on " + to_string(p.value.device()));
  tensor<T> g = grad.contiguous();
  if (!p.value.device().is_cpu()) {
    update_on_device<T, S>(op, p, g);
    return;
  }
  tandem::detail::output_set<T, 1 + S> out;
  out.data[0] = p.value.data();
  for (std::size_t k = 0; k != S; ++k) out.data[k + 1] = p.state[k].data();
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    tandem::detail::elementwise_flat<T, T>(op, p.value.numel(), out, tandem::detail::flat_operand<T>{p.value.data(), 1},
                                           tandem::detail::flat_operand<T>{g.data(), 1},
                                           tandem::detail::flat_operand<T>{p.state[K].data(), 1}...);
  }(std::make_index_sequence<S>{});
  p.value.storage()->bump_version();
}

}  // namespace detail

// Every parameter's gradient for one step, in the optimizer's order of
// parameters (floats, then doubles): what a training step's gradient hook
// reads and rewrites in place before the update (train_step.hpp), beside
// the parameters they are for.
struct step_gradients {
  std::vector<tensor<float>> floats;
  std::vector<tensor<double>> doubles;
  std::vector<tensor<float>> float_parameters;
  std::vector<tensor<double>> double_parameters;
};

// What all optimizers share: the parameters (by name), the learning rate a
// schedule may change, and the count of steps taken.
class optimizer {
 public:
  virtual ~optimizer() = default;

  // Updates every parameter that has a gradient (in `.grad`).
  void step();
  // Updates every parameter from gradients kept elsewhere:
  // `gradient_of(parameter)` returns its gradient as a std::optional, empty
  // where there is none. A fused training step hands over its graph's
  // gradients so, without writing them to `.grad`.
  template <class Gradients>
  void step_with(const Gradients& gradient_of) {
    tandem::detail::profile_range range(profile_category::optimizer, "optimizer step");
    describe_step(range);
    ++steps_;
    for (auto& p : floats_)
      if (auto g = gradient_of(p.value)) update(p, *g);
    for (auto& p : doubles_)
      if (auto g = gradient_of(p.value)) update(p, *g);
  }

  // Every parameter's gradient from `gradient_of` (as step_with takes it),
  // zeros where it has none, in the order step_with(step_gradients) reads.
  template <class Gradients>
  step_gradients gradients_of(const Gradients& gradient_of) const {
    step_gradients all;
    for (const auto& p : floats_) {
      all.floats.push_back(gradient_or_zeros(p.value, gradient_of));
      all.float_parameters.push_back(p.value);
    }
    for (const auto& p : doubles_) {
      all.doubles.push_back(gradient_or_zeros(p.value, gradient_of));
      all.double_parameters.push_back(p.value);
    }
    return all;
  }
  // Updates each parameter from the gradient at its position.
  void step_with(const step_gradients& all) {
    if (all.floats.size() != floats_.size() || all.doubles.size() != doubles_.size())
      throw value_error("tandem::nn::optimizer: " + std::to_string(all.floats.size() + all.doubles.size()) +
                        " gradients for " + std::to_string(floats_.size() + doubles_.size()) + " parameters");
    tandem::detail::profile_range range(profile_category::optimizer, "optimizer step");
    describe_step(range);
    ++steps_;
    for (std::size_t k = 0; k < floats_.size(); ++k) update(floats_[k], all.floats[k]);
    for (std::size_t k = 0; k < doubles_.size(); ++k) update(doubles_[k], all.doubles[k]);
  }

  void zero_grad();
  double learning_rate() const { return learning_rate_; }
  void set_learning_rate(double lr) {
    if (!(lr >= 0)) throw value_error("tandem::nn::optimizer: the learning rate must not be negative");
    learning_rate_ = lr;
  }
  std::int64_t steps() const { return steps_; }

  // What a checkpoint saves: each parameter's state tensors, named
  // "<parameter>.<state>" (momentum, exp_avg, exp_avg_sq), and
  // "steps_and_learning_rate". The tensors are handles: loading writes
  // into them, then restored_from_state() reads the scalars back.
  std::vector<std::pair<std::string, std::variant<tensor<float>, tensor<double>>>> state() const;
  void restored_from_state();
  // Throws unless `steps` is a whole count an int64 holds and `lr` a
  // learning rate: a checkpoint's scalars, checked before anything is
  // written (nn::load).
  static void check_restored_scalars(double steps, double lr);

 protected:
  optimizer(const std::vector<named_tensor>& parameters, double lr, std::vector<std::string> state_names);

  // One parameter's update in a step (steps() already counts the step).
  virtual void update(detail::slot_state<float>& p, const tensor<float>& grad) = 0;
  virtual void update(detail::slot_state<double>& p, const tensor<double>& grad) = 0;

  std::vector<detail::slot_state<float>> floats_;
  std::vector<detail::slot_state<double>> doubles_;
  double learning_rate_ = 0;
  std::int64_t steps_ = 0;

 private:
  // A step's profile event: how many parameters, and the bytes of their
  // values and states.
  void describe_step(tandem::detail::profile_range& range) const {
    if (!range.recording()) return;
    range.describe([&](tandem::detail::profile_event& e) {
      e.detail = std::to_string(floats_.size() + doubles_.size()) + " parameters";
      auto add = [&](const auto& p, std::int64_t size) {
        e.bytes += p.value.numel() * size;
        for (const auto& s : p.state) e.bytes += s.numel() * size;
      };
      for (const auto& p : floats_) add(p, sizeof(float));
      for (const auto& p : doubles_) add(p, sizeof(double));
    });
  }

  template <class T, class Gradients>
  static tensor<T> gradient_or_zeros(const tensor<T>& parameter, const Gradients& gradient_of) {
    if (auto g = gradient_of(parameter)) return *g;
    return zeros_like(parameter);
  }

  std::vector<std::string> state_names_;
  mutable tensor<double> scalars_;
};

struct sgd_options {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

// g += weight_decay * p; b = momentum * b + (1 - dampening) * g (b = g on
// the first step); g = nesterov ? g + momentum * b : b; p -= lr * g.
class sgd : public optimizer {
 public:
  sgd(const std::vector<named_tensor>& parameters, const sgd_options& options);

 protected:
  TANDEM_LIBRARY_VIRTUAL void update(detail::slot_state<float>& p, const tensor<float>& grad) override;
  TANDEM_LIBRARY_VIRTUAL void update(detail::slot_state<double>& p, const tensor<double>& grad) override;

 private:
  template <class T>
  void update_slot(detail::slot_state<T>& p, const tensor<T>& grad) {
    bool first = steps() == 1;
    if (options_.momentum == 0)
      detail::update_in_place<T, 0>(detail::sgd_plain_op<T>{T(learning_rate_), T(options_.weight_decay)}, p, grad);
    else
      detail::update_in_place<T, 1>(detail::sgd_momentum_op<T>{T(learning_rate_), T(options_.weight_decay), T(options_.momentum),
                                                   T(first ? 1 : 1 - options_.dampening), first, options_.nesterov},
                                    p, grad);
  }

  sgd_options options_;
};

struct adam_options {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
};

// Adam (Kingma and Ba) with bias correction; AdamW (Loshchilov and Hutter)
// decays the parameter itself (p -= lr * weight_decay * p) instead of
// adding weight_decay * p to the gradient.
class adam : public optimizer {
 public:
  adam(const std::vector<named_tensor>& parameters, const adam_options& options) : adam(parameters, options, false) {}


 protected:
  TANDEM_LIBRARY_VIRTUAL void update(detail::slot_state<float>& p, const tensor<float>& grad) override;
  TANDEM_LIBRARY_VIRTUAL void update(detail::slot_state<double>& p, const tensor<double>& grad) override;

  adam(const std::vector<named_tensor>& parameters, const adam_options& options, bool decoupled);

 private:
  template <class T>
  void update_slot(detail::slot_state<T>& p, const tensor<T>& grad) {
    double t = static_cast<double>(steps());
    double correction1 = 1 - std::pow(options_.beta1, t), correction2 = 1 - std::pow(options_.beta2, t);
    detail::update_in_place<T, 2>(detail::adam_op<T>{T(learning_rate_ / correction1), T(1 / std::sqrt(correction2)),
                                             T(options_.beta1), T(options_.beta2), T(options_.eps),
                                             T(options_.weight_decay),
                                             T(decoupled_ ? 1 - learning_rate_ * options_.weight_decay : 1), decoupled_},
                                  p, grad);
  }

  adam_options options_;
  bool decoupled_;
};

class adamw : public adam {
 public:
  adamw(const std::vector<named_tensor>& parameters, const adam_options& options) : adam(parameters, options, true) {}
};

// Learning-rate schedules: call step() once per epoch (or per step, as
// counted by `period`); they set the optimizer's learning rate.
class step_schedule {
 public:
  step_schedule(optimizer& opt, std::int64_t period, double gamma)
      : opt_(opt), base_(opt.learning_rate()), period_(period), gamma_(gamma) {
    if (period <= 0) throw value_error("tandem::nn::step_schedule: the period must be positive");
  }
  void step() {
    ++count_;
    opt_.set_learning_rate(base_ * std::pow(gamma_, static_cast<double>(count_ / period_)));
  }

 private:
  optimizer& opt_;
  double base_;
  std::int64_t period_;
  double gamma_;
  std::int64_t count_ = 0;
};

// From the optimizer's rate down to `minimum` along half a cosine over
// `total` steps, then held there.
class cosine_schedule {
 public:
  cosine_schedule(optimizer& opt, std::int64_t total, double minimum = 0)
      : opt_(opt), base_(opt.learning_rate()), total_(total), minimum_(minimum) {
    if (total <= 0) throw value_error("tandem::nn::cosine_schedule: the number of steps must be positive");
  }
  void step() {
    count_ = std::min(count_ + 1, total_);
    double progress = static_cast<double>(count_) / static_cast<double>(total_);
    opt_.set_learning_rate(minimum_ + (base_ - minimum_) * 0.5 * (1 + std::cos(progress * 3.14159265358979323846)));
  }

 private:
  optimizer& opt_;
  double base_;
  std::int64_t total_;
  double minimum_;
  std::int64_t count_ = 0;
};

// A linear warmup over `warmup` steps into a half cosine from the
// optimizer's rate down to `minimum` at step `total`, then held there: the
// rate of step s is min(1, (s + 1) / warmup) * (minimum + (base - minimum) *
// (1 + cos(pi * min(1, s / total))) / 2). Made at step 0, it sets step 0's
// rate; step() after each training step sets the next one's.
class warmup_cosine_schedule {
 public:
  warmup_cosine_schedule(optimizer& opt, std::int64_t warmup, std::int64_t total, double minimum = 0)
      : opt_(opt), base_(opt.learning_rate()), warmup_(warmup), total_(total), minimum_(minimum) {
    if (warmup < 0 || total <= 0)
      throw value_error("tandem::nn::warmup_cosine_schedule: needs warmup >= 0 and total > 0 steps (got " +
                        std::to_string(warmup) + " and " + std::to_string(total) + ")");
    apply();
  }
  void step() {
    ++count_;
    apply();
  }
  // The rate step s runs with.
  double rate(std::int64_t s) const {
    const double ramp = warmup_ > 0 ? std::min(1.0, static_cast<double>(s + 1) / static_cast<double>(warmup_)) : 1.0;
    const double progress = std::min(1.0, static_cast<double>(s) / static_cast<double>(total_));
    return ramp * (minimum_ + (base_ - minimum_) * 0.5 * (1 + std::cos(progress * 3.14159265358979323846)));
  }

 private:
  void apply() { opt_.set_learning_rate(rate(count_)); }

  optimizer& opt_;
  double base_;
  std::int64_t warmup_, total_;
  double minimum_;
  std::int64_t count_ = 0;
};

}  // namespace tandem::nn

#if TANDEM_HEADER_ONLY
#include "tandem/nn/optimizer-inl.hpp"
#endif
