#pragma once
// parameter<T>: a named tensor that requires a gradient, the unit that modules
// register and optimizers update. It is a tensor (a handle like any other):
// copies share its values, gradient and name.

#include <string>
#include <utility>

#include "tandem/core/tensor.hpp"

namespace tandem {

template <floating_element T>
class parameter : public tensor<T> {
 public:
  // Takes `value`'s storage (a handle, not a copy), as a leaf.
  explicit parameter(const tensor<T>& value, std::string name = "") : tensor<T>(value.detach()) {
    this->set_requires_grad(true);
    this->autograd()->name = std::move(name);
  }
};

}  // namespace tandem
