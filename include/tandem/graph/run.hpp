#pragma once
// What a run of a static graph shows outside the executor: how values are
// keyed, the counters tests and plan statistics read, and graph_run, the
// interface through which the eager graph runs a graph's backward without
// naming the graph's type.

#include <cstdint>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/core/tensor.hpp"
#include "tandem/graph/symbol.hpp"

namespace tandem::detail {

using any_tensor =
    std::variant<tensor<float>, tensor<double>, tensor<std::int32_t>, tensor<std::int64_t>, tensor<bool>>;

template <class N>
inline constexpr char class_tag = 0;

// How a value is found again: by type for pure classes, by address else.
template <class N>
const void* key_of(const sym<N>& s) {
  if constexpr (is_pure<N>) return &class_tag<N>;
  else return s.identity();
}

// Counts kept for tests and the plan statistics: fused loops and eager
// kernels run, and buffers made for values that are not outputs.
struct run_counters {
  std::int64_t fused_loops = 0;
  std::int64_t eager_kernels = 0;
  // Fused reductions that ran their group's backward in the forward pass.
  std::int64_t forward_backward_passes = 0;
  // Groups run inside a GEMM, on each block of the product it finished.
  std::int64_t matmul_epilogues = 0;
};

// What the eager graph keeps of a run that recorded for backward: its
// backward and the gradients it leaves. The eager graph's nodes see only
// this, never the executor's type, which names the whole graph type.
class graph_run {
 public:
  virtual ~graph_run() = default;
  virtual void backward(std::vector<std::pair<const void*, any_tensor>> seeds) = 0;
  virtual const any_tensor* gradient(const void* key) const = 0;
};

}  // namespace tandem::detail
