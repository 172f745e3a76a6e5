#pragma once
// A training step, MindSpore's TrainOneStepCell: a batch's loss, its
// gradients and the optimizer's update, in one call.
//
//   auto loss_of = [&](const auto& x, const auto& y) { return nn::cross_entropy(model(x), y); };
//   auto step = jit(nn::train_step(loss_of, optimizer));
//   tensor<float> loss = step(images, labels);
//
// Eagerly (mode::eager, not wrapped in jit) a step is zero_grad, forward,
// backward, update: the parameters' gradients are left in `.grad`. Wrapped
// in jit, or in mode::graph, the loss function is traced into a static
// graph (its plan built once) and each step is one call of it: the fused
// forward, then the backward the graph's type derives, run by the same
// executor without the eager tape, then the optimizer's fused update of
// each parameter from the gradient the backward left at it. Only gradients
// that pass through eager code inside the graph (a layer's closure that
// reads a parameter itself, a value computed eagerly from parameters while
// tracing) go through `.grad`; the rest never reach it. Both follow the
// same loss curve.
//
// A gradient hook, if given, sees every parameter's gradient after the
// backward and before the update, and may rewrite them in place (a
// parameter the backward did not reach gets zeros): data-parallel training
// averages them over the ranks there (dist::gradient_averaging), in either
// mode.
//
// With a grad_scaler (nn/grad_scaler.hpp), the loss is multiplied by the
// scale inside the step (a runtime scalar of the static graph), the
// gradients divided by it after the hook, and a step whose gradients hold
// an Inf or NaN skipped; the scale is then adjusted. The step returns the
// loss unscaled.

#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/graph/mode.hpp"
#include "tandem/graph/static_graph.hpp"
#include "tandem/nn/grad_scaler.hpp"
#include "tandem/nn/optimizer.hpp"

namespace tandem::nn {

using gradient_hook = std::function<void(step_gradients&)>;

// A loss function times a grad_scaler's scale, read at each call.
template <class Loss>
struct scaled_loss {
  Loss loss;
  const grad_scaler* scaler;
  auto operator()(const auto&... a) const { return loss(a...) * scaler->scale_factor(); }
};

template <class Loss>
class train_step {
 public:
  // The loss function is kept by value (a lambda that captures the model by
  // reference is the usual form); the optimizer by reference.
  train_step(Loss loss, optimizer& opt, gradient_hook hook = {})
      : graph_(std::move(loss)), optimizer_(&opt), hook_(std::move(hook)) {}
  // The same with dynamic loss scaling; the scaler is kept by reference.
  template <class Unscaled>
    requires std::is_same_v<Loss, scaled_loss<Unscaled>>
  train_step(Unscaled loss, optimizer& opt, grad_scaler& scaler, gradient_hook hook = {})
      : graph_(Loss{std::move(loss), &scaler}), optimizer_(&opt), hook_(std::move(hook)), scaler_(&scaler) {}

  // The batch's loss, detached, after the update.
  template <class... A>
  auto operator()(const A&... a) {
    static_assert(!(is_symbolic_v<A> || ...),
                  "tandem::nn::train_step: a training step cannot be traced into another static graph; call it "
                  "with tensors");
    using loss_type = decltype(std::declval<const Loss&>()(a...));
    static_assert(is_tensor_v<loss_type> && std::is_floating_point_v<typename loss_type::value_type>,
                  "tandem::nn::train_step: the loss function must return a float or double tensor");
    if (jit_enabled() && (compiled_ || get_mode() == mode::graph)) {
      optimizer_->zero_grad();
      if (scaler_) scale_of_step_ = scaler_->scale_factor();
      // Not a structured binding: clang 14 cannot capture one in a lambda.
      auto result = graph_.value_and_captured_gradients(a...);
      auto& loss = result.first;
      auto& gradients = result.second;
      require_scalar(loss);
      gradients.continue_through_eager_graph();
      update([&](const auto& parameter) {
        auto g = gradients.of(parameter);
        if (parameter.has_grad()) g = g ? *g + parameter.grad() : parameter.grad();
        return g;
      });
      return unscaled(loss);
    }
    optimizer_->zero_grad();
    if (scaler_) scale_of_step_ = scaler_->scale_factor();
    auto loss = graph_.function()(a...);
    require_scalar(loss);
    loss.backward();
    update([](const auto& parameter) {
      return parameter.has_grad() ? std::optional{parameter.grad()} : std::nullopt;
    });
    return unscaled(loss.detach());
  }

  // This step, run as one static graph whatever the mode.
  train_step compiled() const {
    train_step copy = *this;
    copy.compiled_ = true;
    return copy;
  }

  // The plans of the step's static graph.
  plan_statistics graph_statistics() const { return graph_.statistics(); }
  // The static graph of the loss and its backward (tandem::cuda::compile
  // compiles its kernels for the GPU).
  const static_graph<Loss>& graph() const { return graph_; }

 private:
  template <class Gradients>
  void update(const Gradients& gradient_of) {
    if (!hook_ && !scaler_) return optimizer_->step_with(gradient_of);
    step_gradients all = optimizer_->gradients_of(gradient_of);
    if (hook_) hook_(all);
    if (!scaler_) return optimizer_->step_with(all);
    // After the hook: ranks that average their gradients there all see
    // the same Inf and skip the same steps.
    scaler_->step_with(*optimizer_, std::move(all));
    scaler_->update();
  }

  // The loss as the function computed it, before the scale of this step
  // (which update() may have changed since).
  template <class T>
  tensor<T> unscaled(const tensor<T>& loss) const {
    if (!scaler_) return loss;
    return loss * (1.0 / scale_of_step_);
  }

  template <class T>
  static void require_scalar(const tensor<T>& loss) {
    if (loss.numel() != 1)
      throw shape_error("tandem::nn::train_step: the loss must be a single number, not of shape " +
                        to_string(loss.shape()));
  }

  static_graph<Loss> graph_;
  optimizer* optimizer_;
  gradient_hook hook_;
  grad_scaler* scaler_ = nullptr;
  double scale_of_step_ = 1;
  bool compiled_ = false;
};

template <class Loss>
train_step(Loss, optimizer&, grad_scaler&, gradient_hook = {}) -> train_step<scaled_loss<Loss>>;

}  // namespace tandem::nn

namespace tandem {

// jit(nn::train_step(...)): the whole step as one static graph.
template <class Loss>
nn::train_step<Loss> jit(const nn::train_step<Loss>& step) {
  return step.compiled();
}

}  // namespace tandem
