#pragma once
// The elementwise loops around a row function (declared in
// kernels/cpu/elementwise.hpp): inline in header-only builds, compiled once
// into tandem::compiled (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"

namespace tandem::detail {

TANDEM_LIBRARY_FUNCTION void merge_axes_into(const shape& extent, const dims* const* strides, std::size_t count,
                                             dims& sizes, dims* merged) {
  for (std::size_t axis = 0; axis < extent.size(); ++axis) {
    if (extent[axis] == 1) continue;
    bool merges = !sizes.empty();
    for (std::size_t k = 0; k < count && merges; ++k)
      merges = merged[k].back() == (*strides[k])[axis] * extent[axis];
    if (merges) {
      sizes.back() *= extent[axis];
      for (std::size_t k = 0; k < count; ++k) merged[k].back() = (*strides[k])[axis];
    } else {
      sizes.push_back(extent[axis]);
      for (std::size_t k = 0; k < count; ++k) merged[k].push_back((*strides[k])[axis]);
    }
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    for (std::size_t k = 0; k < count; ++k) merged[k].push_back(0);
  }
}

// Offsets of the loop's operands (the output first), with their count.
using loop_offsets = small_vector<std::int64_t, 8>;

// Where linear position `pos` of a merged space (row-major over `sizes`) is:
// its index along each axis, and each operand's offset.
inline void locate(const dims& sizes, const dims* strides, std::int64_t pos, dims& index, loop_offsets& offset) {
  const std::size_t rank = sizes.size();
  index = dims(rank, 0);
  std::fill(offset.begin(), offset.end(), 0);
  for (std::size_t axis = rank; axis-- > 0;) {
    index[axis] = pos % sizes[axis];
    pos /= sizes[axis];
    for (std::size_t k = 0; k < offset.size(); ++k) offset[k] += index[axis] * strides[k][axis];
  }
}

TANDEM_LIBRARY_FUNCTION void run_flat(const row_loop& loop, std::int64_t n, const std::int64_t* in_stride) {
  parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    loop.row(loop.op, end - begin, loop.out, begin, 1, loop.in, nullptr, in_stride, loop.writes);
  });
}

TANDEM_LIBRARY_FUNCTION void run_span(const row_loop& loop, const dims& sizes, const dims* strides, std::int64_t out_at,
                                      std::int64_t begin, std::int64_t end) {
  const std::size_t operands = loop.inputs + 1;
  const std::size_t rank = sizes.size();
  const std::int64_t inner = sizes.back();
  dims index;
  loop_offsets offset(operands);
  locate(sizes, strides, begin, index, offset);
  const std::int64_t out_origin = offset[0];
  loop_offsets inner_stride(loop.inputs);
  for (std::size_t k = 0; k < loop.inputs; ++k) inner_stride[k] = strides[k + 1][rank - 1];

  for (std::int64_t pos = begin; pos < end;) {
    std::int64_t n = std::min(inner - index[rank - 1], end - pos);
    loop.row(loop.op, n, loop.out, out_at + offset[0] - out_origin, strides[0][rank - 1], loop.in, offset.data() + 1,
             inner_stride.data(), loop.writes);
    pos += n;
    for (std::size_t j = 0; j < operands; ++j) offset[j] += n * strides[j][rank - 1];
    index[rank - 1] += n;
    for (std::size_t axis = rank - 1; axis > 0 && index[axis] == sizes[axis]; --axis) {
      for (std::size_t j = 0; j < operands; ++j) offset[j] += strides[j][axis - 1] - sizes[axis] * strides[j][axis];
      index[axis] = 0;
      ++index[axis - 1];
    }
  }
}

TANDEM_LIBRARY_FUNCTION void run_block(const row_loop& loop, const dims& sizes, const dims* strides,
                                       std::int64_t row_length, std::int64_t row, std::int64_t rows, std::int64_t col,
                                       std::int64_t cols) {
  const std::size_t operands = loop.inputs + 1, rank = sizes.size();
  if (rank > 2 || (rank == 2 && sizes[1] != row_length))
    throw error("tandem internal: a GEMM epilogue's space is not rows of " + std::to_string(row_length) + " positions");
  // An operand's offset at (i, j) is i * row_step + j * column_step.
  loop_offsets row_step(operands), column_step(operands);
  for (std::size_t k = 0; k < operands; ++k) {
    column_step[k] = strides[k][rank - 1];
    row_step[k] = rank == 2 ? strides[k][0] : row_length * column_step[k];
  }
  loop_offsets in_at(loop.inputs);
  for (std::int64_t i = row; i < row + rows; ++i) {
    for (std::size_t k = 0; k < loop.inputs; ++k) in_at[k] = i * row_step[k + 1] + col * column_step[k + 1];
    loop.row(loop.op, cols, loop.out, i * row_step[0] + col * column_step[0], column_step[0], loop.in, in_at.data(),
             column_step.data() + 1, loop.writes);
  }
}

TANDEM_LIBRARY_FUNCTION void run_strided(const row_loop& loop, const shape& extent, const dims* const* strides) {
  std::int64_t total = numel(extent);
  if (total == 0) return;
  const std::size_t operands = loop.inputs + 1;
  dims sizes;
  // On the stack for the operand counts of eager ops and most groups: an
  // eager op on a strided view allocates nothing besides its output.
  std::array<dims, 8> local;
  std::vector<dims> spilled(operands > local.size() ? operands : 0);
  dims* merged = operands > local.size() ? spilled.data() : local.data();
  merge_axes_into(extent, strides, operands, sizes, merged);
  parallel_for(total, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
    dims index;
    loop_offsets offset(operands);
    locate(sizes, merged, begin, index, offset);
    run_span(loop, sizes, merged, offset[0], begin, end);
  });
}

}  // namespace tandem::detail
