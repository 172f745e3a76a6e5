#pragma once
// The MPI datatype of each element type a tensor can hold.

#include <mpi.h>

#include <cstdint>
#include <type_traits>

#include "tandem/core/dtype.hpp"

namespace tandem::dist::detail {

template <element T>
MPI_Datatype datatype() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return MPI_INT32_T;
  else if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
  // Moved as their bits (broadcast, gather); reductions refuse them.
  else if constexpr (is_reduced_float_v<T>) return MPI_UINT16_T;
  else return MPI_C_BOOL;
}

}  // namespace tandem::dist::detail
