#pragma once
// Ranks that call mismatched collectives (another op, another element type
// or shape, another root or reduction) would hang or read garbage in MPI.
// Before each collective the ranks exchange what they are about to do, a
// few integers each, and all of them throw the same error when any two
// disagree: the error names the op, the ranks and what each called.

#include <mpi.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/core/dtype.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/dist/communicator.hpp"
#include "tandem/dist/reduce_op.hpp"

namespace tandem::dist::detail {

enum class collective : std::int64_t { all_reduce, broadcast, all_gather, reduce_scatter };

inline const char* collective_name(collective c) {
  switch (c) {
    case collective::all_reduce: return "all_reduce";
    case collective::broadcast: return "broadcast";
    case collective::all_gather: return "all_gather";
    default: return "reduce_scatter";
  }
}

inline constexpr std::size_t max_checked_rank = 16;
using call_words = std::array<std::int64_t, 4 + max_checked_rank>;

// What one rank is about to call: the collective, its argument (a
// reduction, a root, or 0), and the tensor's element type and shape.
inline call_words describe_call(collective op, std::int64_t argument, dtype element, const shape& extents) {
  if (extents.size() > max_checked_rank)
    throw shape_error(std::string("tandem::dist::") + collective_name(op) + ": a tensor of rank " +
                      std::to_string(extents.size()) + " (at most " + std::to_string(max_checked_rank) +
                      " are supported)");
  call_words w{};
  w[0] = static_cast<std::int64_t>(op);
  w[1] = argument;
  w[2] = static_cast<std::int64_t>(element);
  w[3] = static_cast<std::int64_t>(extents.size());
  for (std::size_t i = 0; i < extents.size(); ++i) w[4 + i] = extents[i];
  return w;
}

// "all_reduce(float32[3], sum)"
inline std::string call_text(const std::int64_t* w) {
  const auto op = static_cast<collective>(w[0]);
  std::string text = std::string(collective_name(op)) + "(" + std::string(dtype_name(static_cast<dtype>(w[2]))) + "[";
  for (std::int64_t i = 0; i < w[3]; ++i) text += (i ? ", " : "") + std::to_string(w[4 + i]);
  text += "]";
  if (op == collective::broadcast) text += ", root " + std::to_string(w[1]);
  else if (op != collective::all_gather) text += std::string(", ") + reduce_op_name(static_cast<reduce_op>(w[1]));
  return text + ")";
}

// Throws on every rank if any rank's call differs from rank 0's.
inline void require_agreement(const communicator& comm, const call_words& mine) {
  const char* op = collective_name(static_cast<collective>(mine[0]));
  const int size = comm.size();
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(size));
  check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(),
                      static_cast<int>(mine.size()), MPI_INT64_T, comm.handle()),
        "MPI_Allgather", op);
  const std::int64_t* first = all.data();
  for (int r = 1; r < size; ++r) {
    const std::int64_t* other = first + mine.size() * static_cast<std::size_t>(r);
    bool same = true;
    for (std::size_t i = 0; i < mine.size(); ++i) same = same && other[i] == first[i];
    if (!same)
      throw shape_error(std::string("tandem::dist::") + op + ": the ranks disagree: rank 0 calls " + call_text(first) +
                        ", rank " + std::to_string(r) + " calls " + call_text(other));
  }
}

}  // namespace tandem::dist::detail
