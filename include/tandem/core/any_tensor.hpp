#pragma once
// A tensor of any of tandem's element types, for what knows its type only
// at run time: a graph's values and gradients by node (graph/run.hpp), the
// operands of control flow, a file's arrays (io/any_tensor.hpp).

#include <cstdint>
#include <variant>

#include "tandem/core/tensor.hpp"

namespace tandem {

using any_tensor = std::variant<tensor<float>, tensor<double>, tensor<std::int32_t>, tensor<std::int64_t>,
                                tensor<bool>, tensor<bfloat16>, tensor<float16>>;

}  // namespace tandem
