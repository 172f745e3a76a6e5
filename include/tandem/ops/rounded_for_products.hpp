#pragma once
// An operand of a product as autocast sees it (core/autocast.hpp): a float
// tensor's values rounded to the scope's 16-bit type and widened back, so
// that a kernel summing in float multiplies exactly the rounded values.
// Anything else, and anything outside a scope, is the operand itself.

#include <string>

#include "tandem/core/autocast.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::detail {

template <class T>
tensor<T> rounded_for_products(const tensor<T>& x) {
  if constexpr (std::is_same_v<T, float>) {
    // Detached: the caller records the op on the operand itself.
    if (autocast_dtype() == dtype::bfloat16) return x.detach().template astype<bfloat16>().template astype<float>();
    if (autocast_dtype() == dtype::float16) return x.detach().template astype<float16>().template astype<float>();
  }
  return x;
}

// Products on the GPU multiply their own type: where autocast asks for
// rounded float operands there, the op says so instead of ignoring it.
template <class T>
void refuse_autocast_on_device(const std::string& op) {
  if (std::is_same_v<T, float> && autocast_dtype() != dtype::float32)
    throw device_error("tandem::" + op + ": autocast rounds the operands of products on the CPU only; end the " +
                       "autocast scope around products on the GPU");
}

}  // namespace tandem::detail
