#pragma once
// The thread pool's functions (declared in kernels/cpu/thread_pool.hpp):
// inline in header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tandem/core/profiling.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

// Spins until ready() or `budget` has passed; returns ready().
template <class Ready>
bool spin_until(const Ready& ready, std::chrono::microseconds budget) {
  auto deadline = std::chrono::steady_clock::now() + budget;
  for (int i = 1;; ++i) {
    if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return ready();
  }
}

inline constexpr std::chrono::microseconds spin_budget{100};

// One call of parallel_for: workers that wake late hold their own
// reference and find every chunk already taken.
struct pool_job {
  chunk_job job;
  std::int64_t total;
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> pending;
  std::mutex mutex;
  std::condition_variable done;
  std::exception_ptr failure;
  // The op whose range was open where the job was handed out, for the
  // chunks' profile events (nullptr when no profiler records).
  const char* op_name = profiling() ? profiled_op_name : nullptr;
  pool_job(chunk_job j, std::int64_t n) : job(j), total(n), pending(n) {}
};

struct thread_pool::workers {
  std::vector<std::thread> threads;
  std::mutex submit_mutex;
  std::mutex mutex;
  std::condition_variable wake;
  std::shared_ptr<pool_job> current;
  std::atomic<std::uint64_t> generation{0};
  bool stopping = false;

  static void take_chunks(pool_job& job) {
    bool was_inside = inside_worker();
    inside_worker() = true;
    for (std::int64_t c; (c = job.next.fetch_add(1)) < job.total;) {
      try {
        profile_range range(profile_category::task, named_by,
                            [&] { return std::string(job.op_name ? job.op_name : "parallel_for") + " chunk"; });
        job.job(c);
      } catch (...) {
        std::lock_guard lock(job.mutex);
        if (!job.failure) job.failure = std::current_exception();
      }
      if (job.pending.fetch_sub(1) == 1) {
        std::lock_guard lock(job.mutex);
        job.done.notify_all();
      }
    }
    inside_worker() = was_inside;
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<pool_job> job;
      spin_until([&] { return generation.load(std::memory_order_acquire) != seen; }, spin_budget);
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || generation.load() != seen; });
        if (stopping) return;
        seen = generation.load();
        job = current;
      }
      take_chunks(*job);
    }
  }
};

// The process's pool: created on first use, replaced by resize().
struct thread_pool_registry {
  std::mutex mutex;
  std::unique_ptr<thread_pool> pool;
  // The pool in use, read without the lock on every kernel call.
  std::atomic<thread_pool*> current{nullptr};

  static int default_threads() {
    if (const char* env = std::getenv("TANDEM_NUM_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    return std::max(1u, std::thread::hardware_concurrency());
  }

  void replace(int threads) {
    current.store(nullptr, std::memory_order_release);
    pool = std::make_unique<thread_pool>(threads);
    current.store(pool.get(), std::memory_order_release);
  }
};

TANDEM_LIBRARY_FUNCTION thread_pool_registry& the_thread_pool_registry() {
  static thread_pool_registry registry;
  return registry;
}

TANDEM_LIBRARY_FUNCTION thread_pool::thread_pool(int threads)
    : size_(std::max(threads, 1)), workers_(std::make_unique<workers>()) {
  for (int i = 1; i < size_; ++i) workers_->threads.emplace_back([w = workers_.get()] { w->work(); });
}

TANDEM_LIBRARY_FUNCTION thread_pool::~thread_pool() {
  {
    std::lock_guard lock(workers_->mutex);
    workers_->stopping = true;
  }
  workers_->wake.notify_all();
  for (auto& t : workers_->threads) t.join();
}

TANDEM_LIBRARY_FUNCTION thread_pool& thread_pool::instance() {
  thread_pool_registry& registry = the_thread_pool_registry();
  if (thread_pool* pool = registry.current.load(std::memory_order_acquire)) return *pool;
  std::lock_guard lock(registry.mutex);
  if (!registry.pool) registry.replace(thread_pool_registry::default_threads());
  return *registry.pool;
}

TANDEM_LIBRARY_FUNCTION void thread_pool::resize(int threads) {
  thread_pool_registry& registry = the_thread_pool_registry();
  std::lock_guard lock(registry.mutex);
  registry.replace(threads > 0 ? threads : thread_pool_registry::default_threads());
}

TANDEM_LIBRARY_FUNCTION bool& thread_pool::inside_worker() {
  thread_local bool flag = false;
  return flag;
}

TANDEM_LIBRARY_FUNCTION void thread_pool::run(std::int64_t chunks, chunk_job job) {
  workers& w = *workers_;
  std::lock_guard submit(w.submit_mutex);
  auto state = std::make_shared<pool_job>(job, chunks);
  {
    std::lock_guard lock(w.mutex);
    w.current = state;
    w.generation.fetch_add(1, std::memory_order_release);
  }
  w.wake.notify_all();
  workers::take_chunks(*state);
  auto finished = [&] { return state->pending.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished, spin_budget)) {
    std::unique_lock lock(state->mutex);
    state->done.wait(lock, finished);
  }
  if (state->failure) std::rethrow_exception(state->failure);
}

}  // namespace tandem::detail
