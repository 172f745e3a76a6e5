#pragma once
// The optimizers' non-template members (declared in nn/optimizer.hpp):
// inline in header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <cmath>
#include <limits>

#include "tandem/nn/optimizer.hpp"

namespace tandem::nn {

TANDEM_LIBRARY_FUNCTION optimizer::optimizer(const std::vector<named_tensor>& parameters, double lr,
                                             std::vector<std::string> state_names)
    : state_names_(std::move(state_names)), scalars_(zeros<double>({2})) {
  set_learning_rate(lr);
  for (const auto& p : parameters)
    std::visit(
        [&](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          detail::slot_state<T> s{p.name, t, {}};
          for (std::size_t k = 0; k < state_names_.size(); ++k) s.state.push_back(zeros_like(t));
          if constexpr (std::is_same_v<T, float>) floats_.push_back(std::move(s));
          else doubles_.push_back(std::move(s));
        },
        p.value);
}

TANDEM_LIBRARY_FUNCTION void optimizer::step() {
  step_with([](const auto& parameter) {
    return parameter.has_grad() ? std::optional{parameter.grad()} : std::nullopt;
  });
}

TANDEM_LIBRARY_FUNCTION void optimizer::zero_grad() {
  for (auto& p : floats_) p.value.zero_grad();
  for (auto& p : doubles_) p.value.zero_grad();
}

TANDEM_LIBRARY_FUNCTION std::vector<std::pair<std::string, std::variant<tensor<float>, tensor<double>>>>
optimizer::state() const {
  std::vector<std::pair<std::string, std::variant<tensor<float>, tensor<double>>>> out;
  auto add = [&](const auto& slots) {
    for (const auto& p : slots)
      for (std::size_t k = 0; k < p.state.size(); ++k) out.emplace_back(p.name + "." + state_names_[k], p.state[k]);
  };
  add(floats_);
  add(doubles_);
  scalars_.data()[0] = static_cast<double>(steps_);
  scalars_.data()[1] = learning_rate_;
  out.emplace_back("steps_and_learning_rate", scalars_);
  return out;
}

TANDEM_LIBRARY_FUNCTION void optimizer::check_restored_scalars(double steps, double lr) {
  if (!(steps >= 0 && steps <= 9007199254740992.0 && steps == std::floor(steps)))
    throw value_error("tandem::nn::optimizer: a restored step count must be a whole number from 0 to 2^53");
  if (!(lr >= 0 && lr <= std::numeric_limits<double>::max()))
    throw value_error("tandem::nn::optimizer: a restored learning rate must be finite and not negative");
}

TANDEM_LIBRARY_FUNCTION void optimizer::restored_from_state() {
  check_restored_scalars(scalars_.data()[0], scalars_.data()[1]);
  steps_ = static_cast<std::int64_t>(scalars_.data()[0]);
  set_learning_rate(scalars_.data()[1]);
}

TANDEM_LIBRARY_FUNCTION sgd::sgd(const std::vector<named_tensor>& parameters, const sgd_options& options)
    : optimizer(parameters, options.lr,
                options.momentum != 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{}),
      options_(options) {
  if (options.momentum < 0 || options.weight_decay < 0)
    throw value_error("tandem::nn::sgd: momentum and weight decay must not be negative");
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
    throw value_error("tandem::nn::sgd: Nesterov momentum needs a positive momentum and no dampening");
}

TANDEM_LIBRARY_FUNCTION void sgd::update(detail::slot_state<float>& p, const tensor<float>& grad) {
  update_slot(p, grad);
}
TANDEM_LIBRARY_FUNCTION void sgd::update(detail::slot_state<double>& p, const tensor<double>& grad) {
  update_slot(p, grad);
}

TANDEM_LIBRARY_FUNCTION adam::adam(const std::vector<named_tensor>& parameters, const adam_options& options,
                                   bool decoupled)
    : optimizer(parameters, options.lr, {"exp_avg", "exp_avg_sq"}), options_(options), decoupled_(decoupled) {
  if (options.beta1 < 0 || options.beta1 >= 1 || options.beta2 < 0 || options.beta2 >= 1)
    throw value_error("tandem::nn::adam: beta1 and beta2 must lie in [0, 1)");
  if (!(options.eps > 0) || options.weight_decay < 0)
    throw value_error("tandem::nn::adam: eps must be positive and weight decay not negative");
}

TANDEM_LIBRARY_FUNCTION void adam::update(detail::slot_state<float>& p, const tensor<float>& grad) {
  update_slot(p, grad);
}
TANDEM_LIBRARY_FUNCTION void adam::update(detail::slot_state<double>& p, const tensor<double>& grad) {
  update_slot(p, grad);
}

}  // namespace tandem::nn
