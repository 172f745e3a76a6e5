#pragma once
// A group of processes that run collectives together: for now the world,
// every rank of the job.

#include <mpi.h>

#include "tandem/core/error.hpp"
#include "tandem/dist/environment.hpp"

namespace tandem::dist {

class communicator {
 public:
  // Every rank of the job. Needs a running MPI (a tandem::dist::environment).
  static communicator world() {
    if (!detail::mpi_running())
      throw error("tandem::dist: MPI is not running; create a tandem::dist::environment first");
    return communicator(MPI_COMM_WORLD);
  }

  int rank() const {
    int r = 0;
    detail::check(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank", "rank");
    return r;
  }
  int size() const {
    int s = 0;
    detail::check(MPI_Comm_size(comm_, &s), "MPI_Comm_size", "size");
    return s;
  }
  void barrier() const { detail::check(MPI_Barrier(comm_), "MPI_Barrier", "barrier"); }

  MPI_Comm handle() const { return comm_; }

 private:
  explicit communicator(MPI_Comm comm) : comm_(comm) {}
  MPI_Comm comm_;
};

// This process's rank in the world, and the world's size.
inline int rank() { return communicator::world().rank(); }
inline int world_size() { return communicator::world().size(); }

}  // namespace tandem::dist
