#pragma once
// captured_gradients::continue_through_eager_graph and accumulate (declared
// in graph/run.hpp): inline in header-only builds, compiled once into
// tandem::compiled (TANDEM_LIBRARY_FUNCTION, core/config.hpp). It runs the
// eager backward for float and double, whose nodes call the ops of their
// derivative rules: being a non-template function, it instantiated that
// whole closure in every translation unit that saw its body.

#include <type_traits>
#include <variant>

#include "tandem/graph/run.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem::detail {

template <class T>
void accumulate_gradient(tensor<T>& sum, const tensor<T>& g) {
  if (sum.device().is_cpu() && g.device().is_cpu() && sum.storage().use_count() == 1 && sum.is_contiguous() &&
      !sum.requires_grad() && sum.shape() == g.shape() && g.is_contiguous())
    elementwise_flat<T, T>(add_op{}, sum.numel(), sum.data(), flat_operand<T>{sum.data(), 1},
                           flat_operand<T>{g.data(), 1});
  else
    sum = sum + g;
}

TANDEM_LIBRARY_FUNCTION void accumulate(tensor<float>& sum, const tensor<float>& g) { accumulate_gradient(sum, g); }
TANDEM_LIBRARY_FUNCTION void accumulate(tensor<double>& sum, const tensor<double>& g) { accumulate_gradient(sum, g); }

TANDEM_LIBRARY_FUNCTION void captured_gradients::continue_through_eager_graph() const {
  for (const auto& [key, value] : captured_)
    std::visit(
        [&, key = key](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          if constexpr (std::is_floating_point_v<T>) {
            if (t.is_leaf() || !t.requires_grad()) return;
            if (const any_tensor* g = run_->gradient(key)) t.backward(std::get<tensor<T>>(*g));
          }
        },
        value);
}

}  // namespace tandem::detail
