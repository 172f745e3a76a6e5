#pragma once
// What an elementwise op's eager driver (ops/elementwise/map.hpp) hands to
// the deferred work of a capture (core/deferred.hpp, capture/session.hpp):
// the op, and each operand as memory or a scalar.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tandem/core/shape.hpp"
#include "tandem/core/storage.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"

namespace tandem::detail {

// What the eager driver says of an op it defers.
struct deferred_op {
  const char* name;
  row_function row;
  // The op object (its parameters), kept until the region runs.
  std::shared_ptr<const void> op;
  std::uint8_t result_size;
};

// An operand of a deferred op: a tensor (its storage, where it starts, its
// element size, whether it is contiguous, its strides over the op's shape
// with 0 along broadcast axes, and the row function that copies its
// elements), or a scalar (its bits).
struct deferred_operand {
  std::shared_ptr<storage> memory;
  std::int64_t offset = 0;
  std::int64_t numel = 0;
  std::uint8_t element_size = 0;
  bool contiguous = false;
  dims strides;
  row_function copy = nullptr;
  std::uint64_t scalar_bits = 0;
};

// A reduction over the rows of a value laid out [rows, length] (the reduced
// axes innermost), as the eager reduction driver (ops/reduce.hpp) hands it
// over: `run` reduces `input` into `out` (rows results) with the reducer and
// finishing function kept in `state`, in the eager kernel's order.
struct deferred_reduction {
  const char* name;
  void (*run)(const void* state, const value_spans& input, std::int64_t rows, std::int64_t length, void* out);
  std::shared_ptr<const void> state;
  std::int64_t rows = 0, length = 0;
  std::uint8_t result_size = 0;
};

}  // namespace tandem::detail
