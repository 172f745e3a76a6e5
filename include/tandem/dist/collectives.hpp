#pragma once
// Collectives on tensors, over MPI: each starts at once and returns a work
// (dist/work.hpp) whose wait() gives the result. Every rank of the
// communicator calls the same collectives in the same order, with tensors
// of the same element type and shape; where they do not, all ranks throw
// one error that says which rank called what (dist/agreement.hpp).
//
//   all_reduce(x, op)        x, combined over the ranks (sum, mean, max, min), in place
//   broadcast(x, root)       x, overwritten by the root's, in place
//   all_gather(x)            the ranks' x, concatenated along axis 0 in rank order
//   reduce_scatter(x, op)    x combined over the ranks, then split along axis 0:
//                            rank r keeps the r-th part
//
// They act on values, outside autograd, as a gradient's all-reduce does:
// writing in place into a tensor that requires a gradient throws while
// recording (use tandem::no_grad).

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/agreement.hpp"
#include "tandem/dist/communicator.hpp"
#include "tandem/dist/datatype.hpp"
#include "tandem/dist/reduce_op.hpp"
#include "tandem/dist/work.hpp"

namespace tandem::dist {
namespace detail {

// An MPI count: at most INT_MAX elements per call.
inline int element_count(std::int64_t n, collective op) {
  if (n > INT_MAX)
    throw value_error(std::string("tandem::dist::") + collective_name(op) + ": " + std::to_string(n) +
                      " elements in one call (MPI counts stop at " + std::to_string(INT_MAX) + "); split the tensor");
  return static_cast<int>(n);
}

template <element T>
void require_reducible(reduce_op op, collective c) {
  static_assert(!std::is_same_v<T, bool>, "tandem::dist: bool tensors cannot be reduced, convert them to int32 first");
  static_assert(!is_reduced_float_v<T>,
                "tandem::dist: MPI cannot add 16-bit floats; reduce them as float (astype<float>()) and convert back");
  if (op == reduce_op::mean && !std::is_floating_point_v<T>)
    throw value_error(std::string("tandem::dist::") + collective_name(c) +
                      ": the mean of an integer tensor; use sum, or convert it to float");
}

template <element T>
void require_writable(const tensor<T>& x, collective c) {
  if (x.requires_grad() && is_grad_enabled())
    throw error(std::string("tandem::dist::") + collective_name(c) + ": a tensor of shape " + to_string(x.shape()) +
                " that requires a gradient cannot be written in place while recording; use tandem::no_grad");
}

template <element T>
void divide_by_ranks(tensor<T>& t, int ranks) {
  T* p = t.data();
  for (std::int64_t i = 0, n = t.numel(); i < n; ++i) p[i] /= static_cast<T>(ranks);
}

// A contiguous tensor MPI can write into for `x`: x itself, or a copy whose
// values go back into x when the work finishes.
template <element T>
tensor<T> contiguous_buffer(const tensor<T>& x) {
  no_grad plain;
  return x.is_contiguous() ? x : x.detach().clone();
}

}  // namespace detail

template <element T>
work<T> all_reduce(tensor<T> x, reduce_op op = reduce_op::sum,
                   const communicator& comm = communicator::world()) {
  using detail::collective;
  detail::require_reducible<T>(op, collective::all_reduce);
  detail::require_writable(x, collective::all_reduce);
  const int count = detail::element_count(x.numel(), collective::all_reduce);
  const int ranks = comm.size();
  detail::require_agreement(comm, detail::describe_call(collective::all_reduce, static_cast<std::int64_t>(op),
                                                        x.dtype(), x.shape()));
  tensor<T> buffer = detail::contiguous_buffer(x);
  MPI_Request request;
  detail::check(MPI_Iallreduce(MPI_IN_PLACE, buffer.data(), count, detail::datatype<T>(), detail::mpi_op(op),
                               comm.handle(), &request),
                "MPI_Iallreduce", "all_reduce");
  return work<T>(
      "all_reduce", request, x,
      [x, buffer, op, ranks]() mutable {
        if (op == reduce_op::mean) detail::divide_by_ranks(buffer, ranks);
        if (buffer.storage() != x.storage()) {
          no_grad plain;
          x.assign(buffer);
        }
      },
      ranks);
}

template <element T>
work<T> broadcast(tensor<T> x, int root = 0, const communicator& comm = communicator::world()) {
  using detail::collective;
  detail::require_writable(x, collective::broadcast);
  const int ranks = comm.size();
  if (root < 0 || root >= ranks)
    throw value_error("tandem::dist::broadcast: root " + std::to_string(root) + " is not a rank of " +
                      std::to_string(ranks));
  const int count = detail::element_count(x.numel(), collective::broadcast);
  detail::require_agreement(comm, detail::describe_call(collective::broadcast, root, x.dtype(), x.shape()));
  tensor<T> buffer = detail::contiguous_buffer(x);
  MPI_Request request;
  detail::check(MPI_Ibcast(buffer.data(), count, detail::datatype<T>(), root, comm.handle(), &request), "MPI_Ibcast",
                "broadcast");
  return work<T>(
      "broadcast", request, x,
      [x, buffer]() mutable {
        if (buffer.storage() != x.storage()) {
          no_grad plain;
          x.assign(buffer);
        }
      },
      ranks);
}

// The result has shape [ranks * x.shape(0), ...], or [ranks] for a scalar.
template <element T>
work<T> all_gather(const tensor<T>& x, const communicator& comm = communicator::world()) {
  using detail::collective;
  const int count = detail::element_count(x.numel(), collective::all_gather);
  const int ranks = comm.size();
  detail::require_agreement(comm, detail::describe_call(collective::all_gather, 0, x.dtype(), x.shape()));
  shape gathered = x.shape();
  if (gathered.empty()) gathered.push_back(ranks);
  else gathered[0] *= ranks;
  tensor<T> send = detail::contiguous_buffer(x);
  tensor<T> out(gathered);
  MPI_Request request;
  detail::check(MPI_Iallgather(send.data(), count, detail::datatype<T>(), out.data(), count, detail::datatype<T>(),
                               comm.handle(), &request),
                "MPI_Iallgather", "all_gather");
  // The send buffer lives until the transfer is done.
  return work<T>("all_gather", request, out, [send] {}, ranks);
}

// x's axis 0 must split evenly over the ranks; the result has shape
// [x.shape(0) / ranks, ...].
template <element T>
work<T> reduce_scatter(const tensor<T>& x, reduce_op op = reduce_op::sum,
                       const communicator& comm = communicator::world()) {
  using detail::collective;
  detail::require_reducible<T>(op, collective::reduce_scatter);
  const int ranks = comm.size();
  if (x.dim() == 0 || x.shape()[0] % ranks != 0)
    throw shape_error("tandem::dist::reduce_scatter: a tensor of shape " + to_string(x.shape()) +
                      " does not split along axis 0 into " + std::to_string(ranks) + " equal parts");
  detail::element_count(x.numel(), collective::reduce_scatter);
  detail::require_agreement(comm, detail::describe_call(collective::reduce_scatter, static_cast<std::int64_t>(op),
                                                        x.dtype(), x.shape()));
  shape part = x.shape();
  part[0] /= ranks;
  tensor<T> send = detail::contiguous_buffer(x);
  tensor<T> out(part);
  MPI_Request request;
  detail::check(MPI_Ireduce_scatter_block(send.data(), out.data(), static_cast<int>(out.numel()), detail::datatype<T>(),
                                          detail::mpi_op(op), comm.handle(), &request),
                "MPI_Ireduce_scatter_block", "reduce_scatter");
  return work<T>(
      "reduce_scatter", request, out,
      [send, out, op, ranks]() mutable {
        if (op == reduce_op::mean) detail::divide_by_ranks(out, ranks);
      },
      ranks);
}

}  // namespace tandem::dist
