#pragma once
// How all_reduce and reduce_scatter combine the ranks' tensors.

#include <mpi.h>

#include <cstdint>

namespace tandem::dist {

enum class reduce_op : std::int64_t { sum, mean, max, min };

inline const char* reduce_op_name(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::mean: return "mean";
    case reduce_op::max: return "max";
    default: return "min";
  }
}

namespace detail {

// mean is a sum, divided by the number of ranks when it arrives.
inline MPI_Op mpi_op(reduce_op op) {
  switch (op) {
    case reduce_op::max: return MPI_MAX;
    case reduce_op::min: return MPI_MIN;
    default: return MPI_SUM;
  }
}

}  // namespace detail
}  // namespace tandem::dist
