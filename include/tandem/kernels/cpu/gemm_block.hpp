#pragma once
// What the CPU's matrix products share: their operands seen through strides,
// and the epilogue each calls with the blocks of C it has finished.

#include <cstdint>

#include "tandem/kernels/cpu/isa.hpp"

namespace tandem::detail {

// A read-only matrix seen through strides (in elements).
template <class T>
struct strided_matrix {
  const T* data;
  std::int64_t row_stride, col_stride;
  const T& operator()(std::int64_t i, std::int64_t j) const { return data[i * row_stride + j * col_stride]; }
};

// What an epilogue is called with: rows [row, row + rows) and columns
// [col, col + cols) of C are final.
struct gemm_block {
  std::int64_t row, rows, col, cols;
};

struct no_epilogue {
  void operator()(const gemm_block&) const {}
};

inline namespace TANDEM_KERNEL_ISA {

// An epilogue through one function pointer, called once per finished block:
// the blocked product is compiled once per tile shape, not once per static
// graph's epilogue (with two tile shapes, that cost the demo 11% more
// compile time). In the build's namespace, as everything a kernel build
// may leave out of line (kernels/cpu/isa.hpp).
struct epilogue_ref {
  const void* epilogue;
  void (*call)(const void* epilogue, const gemm_block& block);
  void operator()(const gemm_block& block) const { call(epilogue, block); }
};

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
