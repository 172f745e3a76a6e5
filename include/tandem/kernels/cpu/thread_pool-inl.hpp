#pragma once
// The thread pool's functions (declared in kernels/cpu/thread_pool.hpp):
// inline in header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

TANDEM_LIBRARY_FUNCTION thread_pool::thread_pool(int threads) : size_(std::max(threads, 1)) {
  for (int i = 1; i < size_; ++i) workers_.emplace_back([this] { work(); });
}

TANDEM_LIBRARY_FUNCTION thread_pool::~thread_pool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

TANDEM_LIBRARY_FUNCTION thread_pool& thread_pool::instance() {
  if (thread_pool* pool = current().load(std::memory_order_acquire)) return *pool;
  std::lock_guard lock(instance_mutex());
  if (!instance_slot()) replace(default_threads());
  return *instance_slot();
}

TANDEM_LIBRARY_FUNCTION void thread_pool::resize(int threads) {
  std::lock_guard lock(instance_mutex());
  replace(threads > 0 ? threads : default_threads());
}

TANDEM_LIBRARY_FUNCTION int thread_pool::default_threads() {
  if (const char* env = std::getenv("TANDEM_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

TANDEM_LIBRARY_FUNCTION std::mutex& thread_pool::instance_mutex() {
  static std::mutex m;
  return m;
}

TANDEM_LIBRARY_FUNCTION std::unique_ptr<thread_pool>& thread_pool::instance_slot() {
  static std::unique_ptr<thread_pool> pool;
  return pool;
}

TANDEM_LIBRARY_FUNCTION std::atomic<thread_pool*>& thread_pool::current() {
  static std::atomic<thread_pool*> pool{nullptr};
  return pool;
}

TANDEM_LIBRARY_FUNCTION void thread_pool::replace(int threads) {
  current().store(nullptr, std::memory_order_release);
  instance_slot() = std::make_unique<thread_pool>(threads);
  current().store(instance_slot().get(), std::memory_order_release);
}

TANDEM_LIBRARY_FUNCTION bool& thread_pool::inside_worker() {
  thread_local bool flag = false;
  return flag;
}

TANDEM_LIBRARY_FUNCTION void thread_pool::run(std::int64_t chunks, chunk_job job) {
  std::lock_guard submit(submit_mutex_);
  auto state = std::make_shared<job_state>(job, chunks);
  {
    std::lock_guard lock(mutex_);
    current_ = state;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  take_chunks(*state);
  auto finished = [&] { return state->pending.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished, spin_budget)) {
    std::unique_lock lock(state->mutex);
    state->done.wait(lock, finished);
  }
  if (state->failure) std::rethrow_exception(state->failure);
}

TANDEM_LIBRARY_FUNCTION void thread_pool::take_chunks(job_state& state) {
  bool was_inside = inside_worker();
  inside_worker() = true;
  for (std::int64_t c; (c = state.next.fetch_add(1)) < state.total;) {
    try {
      state.job(c);
    } catch (...) {
      std::lock_guard lock(state.mutex);
      if (!state.failure) state.failure = std::current_exception();
    }
    if (state.pending.fetch_sub(1) == 1) {
      std::lock_guard lock(state.mutex);
      state.done.notify_all();
    }
  }
  inside_worker() = was_inside;
}

TANDEM_LIBRARY_FUNCTION void thread_pool::work() {
  std::uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<job_state> state;
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, spin_budget);
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_.load() != seen; });
      if (stopping_) return;
      seen = generation_.load();
      state = current_;
    }
    take_chunks(*state);
  }
}

}  // namespace tandem::detail
