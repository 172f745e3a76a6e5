#pragma once
// nn::dropout: in training, zeroes each element with probability p and
// scales the rest by 1 / (1 - p); in evaluation, the identity. The mask is
// drawn from the module's own seeded generator on x's device, so a run is
// reproducible, and the same on a GPU as on the host.
// In a static graph it is one node that draws a new mask on every call.

#include <cstdint>
#include <memory>
#include <string>

#include "tandem/core/random.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/nn/module.hpp"

namespace tandem::nn {

class dropout : public module<dropout> {
 public:
  explicit dropout(double p = 0.5, std::uint64_t seed = 0) : p_(p), gen_(std::make_shared<generator>(seed)) {
    if (!(p >= 0 && p < 1)) throw value_error("tandem::nn::dropout: p must lie in [0, 1) (got " + std::to_string(p) + ")");
  }
  double probability() const { return p_; }

  template <class X>
  auto forward(const X& x) const {
    using T = typename X::value_type;
    return tandem::detail::call_or_trace("dropout", tandem::detail::layer_call<T>{this, &applied<T>}, x);
  }

 private:
  template <class T>
  static tensor<T> applied(const void* self, const tensor<T>& x) {
    return static_cast<const dropout*>(self)->apply(x);
  }

  template <class T>
  tensor<T> apply(const tensor<T>& x) const {
    if (!this->is_training() || p_ == 0) return x * T(1);
    tensor<T> keep = (uniform<T>(x.shape(), 0, 1, *gen_, x.device()) >= static_cast<T>(p_)).template astype<T>();
    return x * keep * static_cast<T>(1 / (1 - p_));
  }

  double p_;
  std::shared_ptr<generator> gen_;
};

}  // namespace tandem::nn
