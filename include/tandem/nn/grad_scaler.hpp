#pragma once
// Dynamic loss scaling, for float16 products (autocast(dtype::float16),
// core/autocast.hpp): a gradient below float16's least subnormal (6e-8)
// rounds to zero as an operand of a product, so the loss is multiplied by a
// large scale before the backward and the gradients divided by it before
// the update. A step whose gradients hold an Inf or NaN (the scale was too
// large: a product overflowed float16's 65504) is skipped and the scale
// halved; after `growth_interval` steps in a row without one, it doubles.
// As PyTorch's GradScaler:
//
//   nn::grad_scaler scaler;
//   scaler.scale(loss).backward();
//   scaler.step(optimizer);   // unscales .grad, updates unless not finite
//   scaler.update();
//
// or nn::train_step(loss, optimizer, scaler), which does all three, eagerly
// or in one static graph per step (the scale is a runtime scalar there:
// changing it never recompiles).

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/nn/optimizer.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::nn {

struct grad_scaler_options {
  double init_scale = 65536;
  double growth_factor = 2;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class grad_scaler {
 public:
  explicit grad_scaler(grad_scaler_options options = {}) : options_(options), scale_(options.init_scale) {
    if (!(options.init_scale > 0) || !std::isfinite(options.init_scale) || !(options.growth_factor > 1) ||
        !(options.backoff_factor > 0 && options.backoff_factor < 1) || options.growth_interval < 1)
      throw value_error("tandem::nn::grad_scaler: needs a finite init_scale > 0, growth_factor > 1, backoff_factor in "
                        "(0, 1) and growth_interval >= 1");
  }

  // The factor the loss is multiplied by now.
  double scale_factor() const { return scale_; }
  // The loss times the scale: what backward() starts from.
  template <floating_element T>
  tensor<T> scale(const tensor<T>& loss) const {
    return loss * scale_;
  }

  // Divides the gradient in each parameter's .grad by the scale, once per
  // step (so that it may be clipped after), and says whether every one is
  // finite.
  bool unscale(optimizer& opt) {
    if (unscaled_) return !found_non_finite_;
    unscaled_ = true;
    const step_gradients all = opt.gradients_of(
        [](const auto& p) { return p.has_grad() ? std::optional{p.grad()} : std::nullopt; });
    auto unscale_one = [&](const auto& parameter) {
      if (parameter.has_grad()) parameter.grad().assign(unscaled(parameter.grad()));
    };
    for (const auto& p : all.float_parameters) unscale_one(p);
    for (const auto& p : all.double_parameters) unscale_one(p);
    return !found_non_finite_;
  }

  // Unscales (unless done) and updates the parameters unless a gradient is
  // Inf or NaN; says whether it updated.
  bool step(optimizer& opt) {
    if (unscale(opt)) opt.step();
    return finish_step();
  }

  // The same from gradients kept elsewhere (optimizer::gradients_of, zeros
  // where a parameter has none): a fused training step's, which never
  // reach .grad.
  bool step_with(optimizer& opt, step_gradients all) {
    for (auto& g : all.floats) g = unscaled(g);
    for (auto& g : all.doubles) g = unscaled(g);
    if (!found_non_finite_) opt.step_with(all);
    return finish_step();
  }

  // Adjusts the scale after a step: halved (backoff_factor) when the step
  // was skipped, doubled (growth_factor) after growth_interval steps in a
  // row that were not.
  void update() {
    if (!stepped_) throw error("tandem::nn::grad_scaler::update: call step() (or a train_step) before update()");
    if (found_non_finite_) {
      scale_ *= options_.backoff_factor;
      good_steps_ = 0;
    } else if (++good_steps_ == options_.growth_interval) {
      scale_ *= options_.growth_factor;
      good_steps_ = 0;
    }
    found_non_finite_ = unscaled_ = stepped_ = false;
  }

  // How many steps were skipped for an Inf or NaN gradient.
  std::int64_t skipped_steps() const { return skipped_; }

 private:
  // g divided by the scale, noting whether it holds an Inf or NaN: 0 * x
  // is 0 for every finite x and NaN for Inf or NaN, so one fused sum says
  // (and no sum of large finite values can overflow).
  template <class T>
  tensor<T> unscaled(const tensor<T>& g) {
    tensor<T> u = g * (1.0 / scale_);
    found_non_finite_ = found_non_finite_ || std::isnan(static_cast<double>(sum(u * T(0)).item()));
    return u;
  }

  bool finish_step() {
    stepped_ = true;
    if (found_non_finite_) ++skipped_;
    return !found_non_finite_;
  }

  grad_scaler_options options_;
  double scale_;
  std::int64_t good_steps_ = 0;
  std::int64_t skipped_ = 0;
  bool found_non_finite_ = false;
  bool unscaled_ = false;
  bool stepped_ = false;
};

}  // namespace tandem::nn
