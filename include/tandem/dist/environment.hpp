#pragma once
// The MPI environment of a process. A tandem::dist::environment initializes
// MPI (unless the program already did) and finalizes it when it goes out of
// scope, if it initialized it. Errors of MPI calls become tandem::error
// naming the call and the tandem op, instead of MPI's default, which aborts
// every rank.
//
// Threads: MPI is asked for MPI_THREAD_FUNNELED: collectives are called
// from the thread that created the environment. tandem's kernel threads
// never call MPI; ranks that share a machine share its cores between their
// kernel threads unless TANDEM_NUM_THREADS is set.

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "tandem/core/error.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::dist {

namespace detail {

// Throws unless `code` is MPI_SUCCESS.
inline void check(int code, const char* call, const char* op) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw error(std::string("tandem::dist::") + op + ": " + call + " failed: " + std::string(text, length));
}

inline bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace detail

class environment {
 public:
  environment() { start(nullptr, nullptr); }
  environment(int& argc, char**& argv) { start(&argc, &argv); }
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  ~environment() {
    if (owns_ && detail::mpi_running()) MPI_Finalize();
  }

 private:
  void start(int* argc, char*** argv) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) throw error("tandem::dist::environment: MPI was finalized already and cannot start again");
    if (!detail::mpi_running()) {
      // Open MPI 4.1's non-blocking all-reduce (libnbc), which all_reduce
      // runs, picks by default an algorithm that takes twice the time of
      // its blocking MPI_Allreduce on 2 ranks from 64 KB on; its ring
      // matches or beats it (docs/benchmarks/distributed.md). Other MPIs
      // ignore the variable, and a value the user set stands.
      setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
      int provided = 0;
      detail::check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", "environment");
      owns_ = true;
    }
    detail::check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
                  "environment");
    share_cores();
  }

  // Ranks on one machine each start as many kernel threads as it has
  // cores, which oversubscribes it as many times over; unless
  // TANDEM_NUM_THREADS says otherwise, each takes its share of the cores
  // (as torchrun does with OMP_NUM_THREADS).
  static void share_cores() {
    if (std::getenv("TANDEM_NUM_THREADS")) return;
    MPI_Comm node;
    detail::check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                  "MPI_Comm_split_type", "environment");
    int local_ranks = 1;
    MPI_Comm_size(node, &local_ranks);
    MPI_Comm_free(&node);
    if (local_ranks > 1)
      set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local_ranks));
  }

  bool owns_ = false;
};

}  // namespace tandem::dist
