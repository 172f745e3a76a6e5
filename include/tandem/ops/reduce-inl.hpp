#pragma once
// plan_reduction (declared in ops/reduce.hpp): inline in header-only
// builds, compiled once into tandem::compiled (TANDEM_LIBRARY_FUNCTION,
// core/config.hpp).

#include <string>
#include <vector>

#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

TANDEM_LIBRARY_FUNCTION reduction_shape plan_reduction(const shape& in, const axes& ax, bool keepdims, const char* op) {
  std::int64_t rank = static_cast<std::int64_t>(in.size());
  std::vector<bool> reduced(static_cast<std::size_t>(rank), ax.is_all());
  for (std::int64_t a : ax) {
    std::int64_t axis = normalize_axis(a, in, op);
    if (reduced[axis])
      throw index_error(std::string("tandem::") + op + ": axis " + std::to_string(a) + " is given twice for shape " +
                        to_string(in));
    reduced[axis] = true;
  }
  reduction_shape plan;
  for (std::int64_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      plan.reduced_order.push_back(i);
      plan.length *= in[i];
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      plan.kept_order.push_back(i);
      plan.kept *= in[i];
      plan.out_shape.push_back(in[i]);
    }
  }
  return plan;
}

}  // namespace tandem::detail
