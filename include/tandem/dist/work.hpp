#pragma once
// A collective in flight. The call that starts it returns at once; wait()
// blocks until this rank's part is done and returns the result (for the
// in-place ones, the tensor given). Until then the tensors given to the
// collective must not be read or written: MPI reads and writes them in the
// background. A work dropped before wait() waits in its destructor, so the
// buffers it uses outlive the transfer.

#include <mpi.h>

#include <utility>

#include "tandem/core/profiling.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/detail/unique_function.hpp"
#include "tandem/dist/environment.hpp"

namespace tandem::dist {

template <element T>
class work {
 public:
  // `finish` runs once the transfer is done: it turns what MPI wrote into
  // the result (a mean's division, a copy back into a strided view).
  // `ranks` (the communicator's size) is for the profile.
  work(const char* op, MPI_Request request, tensor<T> result, tandem::detail::unique_function<void()> finish,
       int ranks)
      : op_(op),
        request_(request),
        result_(std::move(result)),
        finish_(std::move(finish)),
        profile_(profile_category::collective, op, [this, ranks](tandem::detail::profile_event& e) {
          e.shapes = to_string(result_.shape());
          e.bytes = result_.numel() * static_cast<std::int64_t>(sizeof(T));
          e.detail = std::string(dtype_name(dtype_of<T>)) + ", " + std::to_string(ranks) + " ranks";
        }) {}
  work(work&& other) noexcept
      : op_(other.op_),
        request_(std::exchange(other.request_, MPI_REQUEST_NULL)),
        result_(std::move(other.result_)),
        finish_(std::move(other.finish_)),
        done_(std::exchange(other.done_, true)),
        profile_(std::move(other.profile_)) {}
  work(const work&) = delete;
  work& operator=(const work&) = delete;
  work& operator=(work&&) = delete;
  ~work() {
    if (done_) return;
    if (request_ != MPI_REQUEST_NULL && detail::mpi_running()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

  // Blocks until done; the result.
  tensor<T> wait() {
    if (!done_) {
      detail::check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait", op_);
      complete();
    }
    return result_;
  }

  // Whether it is done, without blocking (after which wait() returns at once).
  bool ready() {
    if (done_) return true;
    int flag = 0;
    detail::check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test", op_);
    if (flag) complete();
    return done_;
  }

 private:
  void complete() {
    done_ = true;
    finish_();
    result_.storage()->bump_version();
    profile_.finish();
  }

  const char* op_;
  MPI_Request request_;
  tensor<T> result_;
  tandem::detail::unique_function<void()> finish_;
  bool done_ = false;
  tandem::detail::profile_async profile_;
};

}  // namespace tandem::dist
