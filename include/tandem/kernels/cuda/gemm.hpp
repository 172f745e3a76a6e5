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
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
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

// The distance between consecutive batches' offsets, where it is one
// distance (a batch axis of a dense tensor, or one matrix broadcast: 0).
inline std::optional<std::int64_t> common_step(const std::vector<std::int64_t>& offsets) {
  const std::int64_t step = offsets.size() < 2 ? 0 : offsets[1] - offsets[0];
  for (std::size_t i = 2; i < offsets.size(); ++i)
    if (offsets[i] - offsets[i - 1] != step) return std::nullopt;
  return step;
}

// One cuBLAS call for the whole batch: strided where both operands step
// evenly from one batch to the next (a convolution's images against its one
// kernel), else through arrays of pointers. A call per product would cost
// a launch each, which small products (a batch of 128 images) cannot hide.
template <class T>
void launch_gemm(int device_index, const gemm_batch<T>& work) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "cuBLAS multiplies float and double");
  const std::size_t batches = work.a_offsets.size();
  if (batches == 0) return;
  if (batches > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw device_error("tandem::matmul: cuBLAS multiplies at most 2^31 - 1 matrices in one call, and this batch has " +
                       std::to_string(batches));
  cublasHandle_t handle = blas_handle(device_index);
  device_scope on(device_index, "matmul");
  // C^T (n x m, column-major with leading dimension ldc) = B^T A^T.
  const blas_operand b = as_blas_operand(work.k, work.n, work.b_row_step, work.b_column_step);
  const blas_operand a = as_blas_operand(work.m, work.k, work.a_row_step, work.a_column_step);
  const T one = 1, zero = 0;
  const auto n = static_cast<int>(work.n), m = static_cast<int>(work.m), k = static_cast<int>(work.k);
  const auto ldb = static_cast<int>(b.leading), lda = static_cast<int>(a.leading);
  const auto count = static_cast<int>(batches);
  const std::optional<std::int64_t> a_step = common_step(work.a_offsets), b_step = common_step(work.b_offsets);
  if (a_step && b_step) {
    const T* a_data = work.a + work.a_offsets[0];
    const T* b_data = work.b + work.b_offsets[0];
    const long long c_step = work.m * work.n;
    if constexpr (std::is_same_v<T, float>)
      check_cublas(cublasSgemmStridedBatched(handle, b.operation, a.operation, n, m, k, &one, b_data, ldb, *b_step,
                                             a_data, lda, *a_step, &zero, work.c, n, c_step, count),
                   "cublasSgemmStridedBatched", "matmul");
    else
      check_cublas(cublasDgemmStridedBatched(handle, b.operation, a.operation, n, m, k, &one, b_data, ldb, *b_step,
                                             a_data, lda, *a_step, &zero, work.c, n, c_step, count),
                   "cublasDgemmStridedBatched", "matmul");
    return;
  }
  // The pointer arrays go to the device on the stream, ahead of the call
  // that reads them; their scratch block is reused only after it.
  std::vector<const T*> pointers(3 * batches);
  for (std::size_t i = 0; i < batches; ++i) {
    pointers[i] = work.b + work.b_offsets[i];
    pointers[batches + i] = work.a + work.a_offsets[i];
    pointers[2 * batches + i] = work.c + static_cast<std::int64_t>(i) * work.m * work.n;
  }
  scratch on_device(device_index, pointers.size() * sizeof(T*));
  check(cudaMemcpyAsync(on_device.as<void>(), pointers.data(), pointers.size() * sizeof(T*), cudaMemcpyHostToDevice,
                        stream(device_index)),
        "cudaMemcpyAsync (host to device)", "matmul");
  const T* const* b_array = on_device.as<const T*>();
  const T* const* a_array = b_array + batches;
  T* const* c_array = on_device.as<T*>() + 2 * batches;
  if constexpr (std::is_same_v<T, float>)
    check_cublas(cublasSgemmBatched(handle, b.operation, a.operation, n, m, k, &one, b_array, ldb, a_array, lda, &zero,
                                    c_array, n, count),
                 "cublasSgemmBatched", "matmul");
  else
    check_cublas(cublasDgemmBatched(handle, b.operation, a.operation, n, m, k, &one, b_array, ldb, a_array, lda, &zero,
                                    c_array, n, count),
                 "cublasDgemmBatched", "matmul");
}

}  // namespace tandem::detail::cuda
