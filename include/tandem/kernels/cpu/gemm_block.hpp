#pragma once
// What the CPU's matrix products share: their operands seen through strides,
// the epilogue each calls with the blocks of C it has finished, and the 4x4
// transpose their packers move floats with.

#include <cstdint>

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#endif

#include "tandem/core/config.hpp"
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

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
// to[c * to_stride + r] = row r's element c, for rows x0 to x3.
TANDEM_ALWAYS_INLINE void store_transposed_4x4(__m128 x0, __m128 x1, __m128 x2, __m128 x3, float* to,
                                               std::int64_t to_stride) {
  _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
  _mm_storeu_ps(to, x0);
  _mm_storeu_ps(to + to_stride, x1);
  _mm_storeu_ps(to + 2 * to_stride, x2);
  _mm_storeu_ps(to + 3 * to_stride, x3);
}

// to[c * to_stride + r] = from[r * from_stride + c] for a 4x4 block.
TANDEM_ALWAYS_INLINE void transpose_4x4(const float* from, std::int64_t from_stride, float* to,
                                        std::int64_t to_stride) {
  store_transposed_4x4(_mm_loadu_ps(from), _mm_loadu_ps(from + from_stride), _mm_loadu_ps(from + 2 * from_stride),
                       _mm_loadu_ps(from + 3 * from_stride), to, to_stride);
}
#endif

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
