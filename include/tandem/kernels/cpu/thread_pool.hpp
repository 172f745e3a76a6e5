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
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem {
namespace detail {

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

class thread_pool {
 public:
  explicit thread_pool(int threads) : size_(std::max(threads, 1)) {
    for (int i = 1; i < size_; ++i) workers_.emplace_back([this] { work(); });
  }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;
  ~thread_pool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

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
    std::function<void(std::int64_t)> run_chunk = [&](std::int64_t c) {
      std::int64_t b = c * step, e = std::min(n, b + step);
      if (b < e) body(b, e);
    };
    run(chunks, run_chunk);
  }

  static thread_pool& instance() {
    if (thread_pool* pool = current().load(std::memory_order_acquire)) return *pool;
    std::lock_guard lock(instance_mutex());
    if (!instance_slot()) replace(default_threads());
    return *instance_slot();
  }

  static void resize(int threads) {
    std::lock_guard lock(instance_mutex());
    replace(threads > 0 ? threads : default_threads());
  }

 private:
  static int default_threads() {
    if (const char* env = std::getenv("TANDEM_NUM_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    return std::max(1u, std::thread::hardware_concurrency());
  }
  static std::mutex& instance_mutex() {
    static std::mutex m;
    return m;
  }
  static std::unique_ptr<thread_pool>& instance_slot() {
    static std::unique_ptr<thread_pool> pool;
    return pool;
  }
  // The pool in use, read without the lock on every kernel call.
  static std::atomic<thread_pool*>& current() {
    static std::atomic<thread_pool*> pool{nullptr};
    return pool;
  }
  static void replace(int threads) {
    current().store(nullptr, std::memory_order_release);
    instance_slot() = std::make_unique<thread_pool>(threads);
    current().store(instance_slot().get(), std::memory_order_release);
  }
  static bool& inside_worker() {
    thread_local bool flag = false;
    return flag;
  }

  // One call of parallel_for: workers that wake late hold their own
  // reference and find every chunk already taken.
  struct job_state {
    const std::function<void(std::int64_t)>* job;
    std::int64_t total;
    std::atomic<std::int64_t> next{0};
    std::atomic<std::int64_t> pending;
    std::mutex mutex;
    std::condition_variable done;
    std::exception_ptr failure;
    job_state(const std::function<void(std::int64_t)>* j, std::int64_t n) : job(j), total(n), pending(n) {}
  };

  // Hands `chunks` calls of job to the workers; the caller takes chunks too
  // and returns when all are done, rethrowing the first exception.
  void run(std::int64_t chunks, const std::function<void(std::int64_t)>& job) {
    std::lock_guard submit(submit_mutex_);
    auto state = std::make_shared<job_state>(&job, chunks);
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

  static void take_chunks(job_state& state) {
    bool was_inside = inside_worker();
    inside_worker() = true;
    for (std::int64_t c; (c = state.next.fetch_add(1)) < state.total;) {
      try {
        (*state.job)(c);
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

  void work() {
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

  int size_;
  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<job_state> current_;
  std::atomic<std::uint64_t> generation_{0};
  bool stopping_ = false;
};

template <class Body>
void parallel_for(std::int64_t n, std::int64_t grain, const Body& body) {
  if (n <= grain) {
    if (n > 0) body(std::int64_t{0}, n);
    return;
  }
  thread_pool::instance().parallel_for(n, grain, body);
}

}  // namespace detail

// Sets the number of threads CPU kernels use; 0 restores the default. Call it
// while no kernel is running.
inline void set_num_threads(int threads) { detail::thread_pool::resize(threads); }
inline int num_threads() { return detail::thread_pool::instance().size(); }

}  // namespace tandem
