#pragma once
// One pool of worker threads for every CPU kernel. Its size comes from
// TANDEM_NUM_THREADS (default: the hardware threads) or set_num_threads().
// parallel_for splits a range into chunks of at least `grain` items, so a
// small tensor runs on the calling thread without touching the pool. Kernels
// must give the same bits for any chunking: reductions fix their own block
// boundaries and never depend on the thread count.
//
// After a job, workers (and the caller, waiting for them) spin for a short
// while before they sleep: a training step runs hundreds of small kernels
// back to back, and waking a sleeping thread costs more than most of them
// (a 128x256x10 matmul took 19 us on two threads with sleeping workers and
// 12.6 us on one).

#include <algorithm>
#include <cstdint>
#include <memory>

#include "tandem/core/config.hpp"
#include "tandem/core/deferred.hpp"

namespace tandem {
namespace detail {

// A chunk of a parallel_for: the body of the loop by address, with the
// one function that knows its type (no std::function, whose type erasure
// would bring a manager and type information for every kernel's lambda).
struct chunk_job {
  const void* body;
  void (*run)(const void* body, std::int64_t chunk);
  void operator()(std::int64_t chunk) const { run(body, chunk); }
};

class thread_pool {
 public:
  explicit thread_pool(int threads);
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;
  ~thread_pool();

  int size() const { return size_; }

  // Runs body(begin, end) over [0, n) in chunks of at least `grain` items.
  template <class Body>
  void parallel_for(std::int64_t n, std::int64_t grain, const Body& body) {
    if (n <= 0) return;
    std::int64_t chunks = std::min<std::int64_t>(size_, (n + grain - 1) / std::max<std::int64_t>(grain, 1));
    if (chunks <= 1 || inside_worker()) {
      body(std::int64_t{0}, n);
      return;
    }
    std::int64_t step = (n + chunks - 1) / chunks;
    auto run_chunk = [&](std::int64_t c) {
      std::int64_t b = c * step, e = std::min(n, b + step);
      if (b < e) body(b, e);
    };
    run(chunks, {&run_chunk, [](const void* f, std::int64_t c) { (*static_cast<const decltype(run_chunk)*>(f))(c); }});
  }

  static thread_pool& instance();
  static void resize(int threads);

 private:
  // Whether the calling thread is one of the pool's workers (or a caller
  // taking chunks): a parallel_for inside a chunk runs inline.
  static bool& inside_worker();

  // Hands `chunks` calls of job to the workers; the caller takes chunks too
  // and returns when all are done, rethrowing the first exception.
  void run(std::int64_t chunks, chunk_job job);

  // The threads and what they wait on, in thread_pool-inl.hpp: kept out of
  // this header so that every translation unit that runs a kernel does not
  // parse <thread>, <mutex> and <condition_variable>.
  struct workers;

  int size_;
  std::unique_ptr<workers> workers_;
};

template <class Body>
void parallel_for(std::int64_t n, std::int64_t grain, const Body& body) {
  if (n <= grain) {
    if (n > 0) body(std::int64_t{0}, n);
    return;
  }
  // The pool's threads may read the kernel's inputs, and a pending value
  // (core/deferred.hpp) is computed on the thread that deferred it: work
  // a capture holds runs first, on its own thread.
  if (deferred_work* work = active_deferred_work()) [[unlikely]]
    work->run_pending("a multi-threaded kernel started (its threads may read pending values)");
  thread_pool::instance().parallel_for(n, grain, body);
}

}  // namespace detail

// Sets the number of threads CPU kernels use; 0 restores the default. Call it
// while no kernel is running.
inline void set_num_threads(int threads) { detail::thread_pool::resize(threads); }
inline int num_threads() { return detail::thread_pool::instance().size(); }

}  // namespace tandem

#if TANDEM_HEADER_ONLY
#include "tandem/kernels/cpu/thread_pool-inl.hpp"
#endif
