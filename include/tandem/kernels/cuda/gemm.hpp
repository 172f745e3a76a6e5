#pragma once
// The GPU's matrix product (compiled only by nvcc): cuBLAS, one handle per
// device bound to the device's stream. tandem's matrices are row-major with
// any strides; cuBLAS's are column-major with a unit step down a column. A
// row-major m x k matrix with a unit step along its rows is, read
// column-major, its k x m transpose, so C = A B is computed as
// C^T = B^T A^T and no operand is copied unless neither of its strides is 1.

#ifndef __CUDACC__
#error "tandem/kernels/cuda/gemm.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <cublas_v2.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/kernels/cuda/runtime.hpp"

namespace tandem::detail::cuda {

inline void check_cublas(cublasStatus_t status, const char* call, const char* op) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw device_error(std::string("tandem::") + op + ": " + call + " failed: " + cublasGetStatusName(status) + " (" +
                       cublasGetStatusString(status) + ")");
}

// Device `index`'s cuBLAS handle, made on first use, on the device's stream.
inline cublasHandle_t blas_handle(int index) {
  static std::mutex mutex;
  static auto* handles = new std::vector<cublasHandle_t>(static_cast<std::size_t>(device_count()), nullptr);
  std::lock_guard lock(mutex);
  cublasHandle_t& handle = (*handles)[static_cast<std::size_t>(index)];
  if (!handle) {
    device_scope on(index, "matmul");
    check_cublas(cublasCreate(&handle), "cublasCreate", "matmul");
    check_cublas(cublasSetStream(handle, stream(index)), "cublasSetStream", "matmul");
  }
  return handle;
}

// One operand as cuBLAS reads it: whether to transpose it and its leading
// dimension, for a row-major matrix of `rows` x `columns` with strides
// (row_step, column_step), one of which must be 1.
struct blas_operand {
  cublasOperation_t operation;
  std::int64_t leading;
};

inline blas_operand as_blas_operand(std::int64_t rows, std::int64_t columns, std::int64_t row_step,
                                    std::int64_t column_step) {
  // Row-major with unit column step: column-major it is the transpose, which
  // is what C^T = B^T A^T wants as it is. The host made every operand
  // readable one way or the other (blas_readable).
  if (blas_row_major(rows, columns, row_step, column_step))
    return {CUBLAS_OP_N, std::max<std::int64_t>(rows == 1 ? columns : row_step, 1)};
  return {CUBLAS_OP_T, std::max<std::int64_t>(columns == 1 ? rows : column_step, 1)};
}

template <class T>
void launch_gemm(int device_index, const gemm_batch<T>& work) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "cuBLAS multiplies float and double");
  cublasHandle_t handle = blas_handle(device_index);
  device_scope on(device_index, "matmul");
  // C^T (n x m, column-major with leading dimension ldc) = B^T A^T.
  const blas_operand b = as_blas_operand(work.k, work.n, work.b_row_step, work.b_column_step);
  const blas_operand a = as_blas_operand(work.m, work.k, work.a_row_step, work.a_column_step);
  const T one = 1, zero = 0;
  for (std::int64_t batch = 0; batch < static_cast<std::int64_t>(work.a_offsets.size()); ++batch) {
    const T* a_data = work.a + work.a_offsets[static_cast<std::size_t>(batch)];
    const T* b_data = work.b + work.b_offsets[static_cast<std::size_t>(batch)];
    T* c_data = work.c + batch * work.m * work.n;
    const auto n = static_cast<int>(work.n), m = static_cast<int>(work.m), k = static_cast<int>(work.k);
    const auto ldb = static_cast<int>(b.leading), lda = static_cast<int>(a.leading);
    if constexpr (std::is_same_v<T, float>)
      check_cublas(cublasSgemm(handle, b.operation, a.operation, n, m, k, &one, b_data, ldb, a_data, lda, &zero,
                               c_data, n),
                   "cublasSgemm", "matmul");
    else
      check_cublas(cublasDgemm(handle, b.operation, a.operation, n, m, k, &one, b_data, ldb, a_data, lda, &zero,
                               c_data, n),
                   "cublasDgemm", "matmul");
  }
}


}  // namespace tandem::detail::cuda
