#pragma once
// Mixed precision for float programs, per thread: within an autocast scope,
// the matrix products of float tensors (matmul and nn::linear, eager and in
// static graphs, conv2d, and the same products in their gradients) round
// their operands to bfloat16 or float16 and sum the exact products in float,
// as tensor cores and AVX512-BF16's vdpbf16ps do; everything else runs in
// float as before, and every tensor keeps its type. So parameters stay float
// (the master weights) and optimizers update them in float, and the ops
// PyTorch's autocast keeps in float (reductions, softmax, norms, losses)
// stay float without a list to consult. Double tensors are never rounded;
// the fused attention kernel keeps float; products on a GPU refuse a scope
// (tandem::device_error) rather than ignore it.
//
// Where the CPU has AVX512-BF16, bfloat16 products run on it (about twice
// the float kernel's speed); elsewhere, and for float16, the rounded
// operands are multiplied by the float kernel: the same values, no faster.
//
// A recorded op's backward runs under the autocast its forward ran under,
// wherever backward() is called (autograd/engine-inl.hpp).

#include <string>

#include "tandem/core/dtype.hpp"
#include "tandem/core/error.hpp"

namespace tandem {
namespace detail {
inline dtype& autocast_flag() {
  thread_local dtype products = dtype::float32;
  return products;
}
}  // namespace detail

// The type float products round their operands to on this thread:
// dtype::float32 outside any autocast scope.
inline dtype autocast_dtype() { return detail::autocast_flag(); }

// { tandem::autocast scope(tandem::dtype::bfloat16); ... }: float products
// in the scope round their operands to bfloat16. dtype::float32 turns
// autocast off for a nested scope.
class autocast {
 public:
  explicit autocast(dtype products = dtype::bfloat16) : previous_(detail::autocast_flag()) {
    if (products != dtype::bfloat16 && products != dtype::float16 && products != dtype::float32)
      throw value_error("tandem::autocast: products round to bfloat16 or float16 (or float32, which is off), not " +
                        std::string(dtype_name(products)));
    detail::autocast_flag() = products;
  }
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;
  ~autocast() { detail::autocast_flag() = previous_; }

 private:
  dtype previous_;
};

}  // namespace tandem
