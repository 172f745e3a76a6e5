#pragma once
// What the profiler (profiler/profiler.hpp) records, and the hooks the rest
// of tandem calls to record it: a range (an op, a static graph call, a
// fused group, a backward node, an optimizer step, a task of the thread
// pool...) begins and ends on one thread; an allocation is an instant with
// the live total after it.
//
// When no profiler records, a hook costs one relaxed load of a flag and a
// branch the processor predicts; nothing else runs. When one records, each
// thread appends to a buffer of its own, under a lock that only the
// profiler's stop() (and a collective completing on another thread) also
// takes, so threads never wait for each other.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tandem/core/config.hpp"

// 0 compiles every hook out (profiling() is false at compile time): only
// for measuring what the hooks cost (bench/profiler_overhead.cpp); a
// program built so records nothing.
#ifndef TANDEM_PROFILER_HOOKS
#define TANDEM_PROFILER_HOOKS 1
#endif

namespace tandem {

// What kind of work an event is, as profiles group it.
enum class profile_category : std::uint8_t {
  op,          // an eager op
  graph,       // a static graph's call
  group,       // one fused group (one kernel) of a static graph's plan
  backward,    // an autograd node's backward, eager or a graph's
  optimizer,   // an optimizer's step
  capture,     // a captured region: recorded, replayed
  task,        // a chunk of a parallel loop, on the thread that ran it
  allocation,  // a tensor buffer taken from the allocator (an instant)
  collective,  // an MPI collective, from its start to its completion
  user,        // a profile_scope of the program's own
};

inline const char* to_string(profile_category c) {
  constexpr const char* names[] = {"op",   "graph",      "group",      "backward", "optimizer", "capture",
                                   "task", "allocation", "collective", "user"};
  return names[static_cast<int>(c)];
}

namespace detail {

// Whether a profiler records: a variable of its own, constant-initialized,
// so that a hook's check is one load (no guard of a function's static).
inline std::atomic<bool> profiler_recording{false};

// One event as a thread records it. Times are nanoseconds since the
// profiler started; an instant has end == start.
struct profile_event {
  std::string name;
  std::string shapes;  // the inputs' shapes, "[2, 3], [3]", where known
  std::string detail;  // element type and device, or a group's ops in order
  profile_category category = profile_category::user;
  bool instant = false;
  bool async = false;  // may end on another thread, overlapping others (a collective)
  std::int64_t start = 0, end = -1;  // end < 0: still open
  std::int64_t bytes = 0;            // read and written, where known
  std::int64_t flops = 0;            // floating-point operations, where known
  std::int64_t live_bytes = 0;       // allocations: the live total after it
};

struct profile_thread_buffer {
  std::mutex lock;  // taken by the owner to append, by stop() to collect
  std::vector<profile_event> events;
  std::uint64_t session = 0;  // the events are this recording's
  std::uint32_t thread = 0;   // numbered in order of first event
};

class profile_registry {
 public:
  static profile_registry& instance() {
    static profile_registry* registry = new profile_registry;  // outlives every thread's last event
    return *registry;
  }

  // The calling thread's buffer, made and registered on its first event.
  const std::shared_ptr<profile_thread_buffer>& buffer_handle() {
    thread_local std::shared_ptr<profile_thread_buffer> mine;
    if (!mine) {
      auto made = std::make_shared<profile_thread_buffer>();
      std::lock_guard hold(lock_);
      made->thread = next_thread_++;
      buffers_.push_back(made);
      mine = std::move(made);
    }
    return mine;
  }
  profile_thread_buffer& buffer() { return *buffer_handle(); }

  static std::int64_t clock() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::int64_t now() const { return clock() - epoch_.load(std::memory_order_relaxed); }
  std::uint64_t session() const noexcept { return session_.load(std::memory_order_acquire); }

  // Where an event went: the recording it belongs to and its index in its
  // thread's buffer.
  struct opened {
    std::uint64_t session;
    std::int64_t index;
  };

  // Opens an event on the calling thread (a buffer holding an earlier
  // recording's events is emptied first).
  opened open(profile_category category, std::string name, bool instant = false) {
    profile_thread_buffer& b = buffer();
    const std::int64_t at = now();
    std::lock_guard hold(b.lock);
    const std::uint64_t current = session();
    if (b.session != current) {
      b.events.clear();
      b.session = current;
    }
    profile_event& e = b.events.emplace_back();
    e.name = std::move(name);
    e.category = category;
    e.instant = instant;
    e.start = at;
    if (instant) e.end = at;
    return {current, static_cast<std::int64_t>(b.events.size()) - 1};
  }

  // Fills in an event of the calling thread (or of buffer `b`). `fill` runs
  // under the buffer's lock, so it only copies what the caller computed:
  // it must not call into tandem (an op, an allocation would record).
  template <class Fill>
  void update(std::uint64_t session, std::int64_t index, Fill&& fill) {
    update_in(buffer(), session, index, std::forward<Fill>(fill));
  }
  template <class Fill>
  static void update_in(profile_thread_buffer& b, std::uint64_t session, std::int64_t index, Fill&& fill) {
    std::lock_guard hold(b.lock);
    if (b.session == session && index < static_cast<std::int64_t>(b.events.size())) fill(b.events[index]);
  }

  void close(std::uint64_t session, std::int64_t index) {
    const std::int64_t at = now();
    update(session, index, [at](profile_event& e) { e.end = at; });
  }

  std::atomic<std::int64_t>& live_bytes() noexcept { return live_bytes_; }

  // For the profiler: begins a recording (false if one is under way).
  bool begin(std::int64_t live_bytes) {
    std::lock_guard hold(lock_);
    if (active_) return false;
    active_ = true;
    epoch_.store(clock(), std::memory_order_relaxed);
    live_bytes_.store(live_bytes, std::memory_order_relaxed);
    session_.fetch_add(1, std::memory_order_acq_rel);
    profiler_recording.store(true, std::memory_order_release);
    return true;
  }

  // Stops and restarts the hooks within one recording (profiler::pause).
  void set_paused(bool paused) {
    std::lock_guard hold(lock_);
    profiler_recording.store(!paused, std::memory_order_release);
  }

  // Ends the recording and takes every thread's events, as (thread, event).
  // Events still open end now.
  std::vector<std::pair<std::uint32_t, profile_event>> end() {
    std::lock_guard hold(lock_);
    active_ = false;
    profiler_recording.store(false, std::memory_order_release);
    const std::uint64_t current = session();
    const std::int64_t at = now();
    std::vector<std::pair<std::uint32_t, profile_event>> all;
    for (const auto& b : buffers_) {
      std::lock_guard hold_buffer(b->lock);
      if (b->session != current) continue;
      for (auto& e : b->events) {
        if (e.end < 0) e.end = at;
        all.emplace_back(b->thread, std::move(e));
      }
      b->events.clear();
      // A range still open from this recording finds no event to close.
      b->session = 0;
    }
    // Buffers of threads that have ended go (their events are taken).
    std::erase_if(buffers_, [](const auto& b) { return b.use_count() == 1; });
    session_.fetch_add(1, std::memory_order_acq_rel);  // late closes find nothing to write
    return all;
  }

 private:
  profile_registry() = default;

  std::mutex lock_;
  std::vector<std::shared_ptr<profile_thread_buffer>> buffers_;
  std::atomic<std::uint64_t> session_{0};
  std::atomic<std::int64_t> live_bytes_{0};
  std::atomic<std::int64_t> epoch_{0};
  bool active_ = false;  // a recording is under way, maybe paused
  std::uint32_t next_thread_ = 0;
};

// The one check every hook makes first.
TANDEM_ALWAYS_INLINE bool profiling() noexcept {
#if TANDEM_PROFILER_HOOKS
  return profiler_recording.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

// The name of the op whose range is open on this thread, for the thread
// pool to give the chunks it hands out (profile_category::task).
inline constinit thread_local const char* profiled_op_name = nullptr;

// Names as tandem's messages spell them lose the namespace ("tandem::sum"
// is "sum").
inline std::string profile_name(std::string name) {
  if (name.rfind("tandem::", 0) == 0) name.erase(0, 8);
  return name;
}

// Asks a range to compute its name only when it records.
struct named_by_t {};
inline constexpr named_by_t named_by{};

// A range of work on the calling thread, from construction to destruction.
// Off, it is a few words and a predicted branch at each end.
class profile_range {
 public:
  TANDEM_ALWAYS_INLINE profile_range(profile_category category, const char* name) {
    if (profiling()) [[unlikely]]
      open_static(category, name);
  }
  profile_range(profile_category category, const std::string& name) {
    if (profiling()) [[unlikely]]
      open(category, profile_name(name));
  }
  template <class MakeName>
  TANDEM_ALWAYS_INLINE profile_range(profile_category category, named_by_t, MakeName&& make_name) {
    if (profiling()) [[unlikely]]
      open_named(category, make_name);
  }
  // Named `prefix name suffix`, joined only when it records: one function
  // for every caller (a fused group's range is one per graph type, and a
  // lambda naming it would compile a function for each).
  TANDEM_ALWAYS_INLINE profile_range(profile_category category, const char* prefix, const char* name,
                                     const char* suffix = "") {
    if (profiling()) [[unlikely]]
      open_joined(category, prefix, name, suffix);
  }
  TANDEM_ALWAYS_INLINE ~profile_range() {
    if (index_ >= 0) [[unlikely]]
      close();
  }
  profile_range(const profile_range&) = delete;
  profile_range& operator=(const profile_range&) = delete;

  // Whether this range records: the arguments below cost something to
  // compute, so callers compute them only then.
  bool recording() const noexcept { return index_ >= 0; }

  // Names the chunks the thread pool runs for this range ("add chunk"):
  // `name` must outlive the range (an op's static name).
  void names_tasks(const char* name) noexcept {
    if (index_ < 0 || names_op_) return;
    outer_op_ = profiled_op_name;
    profiled_op_name = name;
    names_op_ = true;
  }

  template <class Fill>
  void describe(Fill&& fill) {
    if (index_ >= 0) profile_registry::instance().update(session_, index_, std::forward<Fill>(fill));
  }

 private:
  // Out of line and cold: what runs only while a profiler records stays
  // out of the ops' hot code.
  TANDEM_COLD void open(profile_category category, std::string name) {
    const auto where = profile_registry::instance().open(category, std::move(name));
    session_ = where.session;
    index_ = where.index;
    outer_op_ = nullptr;
    names_op_ = false;
  }
  // `name` lives as long as the program (an op's name): an op's range names
  // the pool's chunks after it.
  TANDEM_COLD void open_static(profile_category category, const char* name) {
    open(category, profile_name(name));
    if (category == profile_category::op) names_tasks(name);
  }
  template <class MakeName>
  TANDEM_COLD void open_named(profile_category category, const MakeName& make_name) {
    open(category, profile_name(make_name()));
  }
  TANDEM_COLD void open_joined(profile_category category, const char* prefix, const char* name, const char* suffix) {
    open(category, std::string(prefix) + profile_name(name) + suffix);
  }
  TANDEM_COLD void close() {
    profile_registry::instance().close(session_, index_);
    if (names_op_) profiled_op_name = outer_op_;
  }

  // Off, only index_ is written (the cached call of jit(x + y) runs
  // several ranges); the others are set where a range opens.
  std::int64_t index_ = -1;
  std::uint64_t session_;
  const char* outer_op_;
  bool names_op_;
};

// Work that starts on one thread and completes later, maybe on another (an
// MPI collective): an event of the starting thread's buffer, kept out of
// its nesting. Movable with the work it times.
class profile_async {
 public:
  template <class Describe>
  profile_async(profile_category category, const char* name, Describe&& describe) {
    if (!profiling()) [[likely]]
      return;
    auto& registry = profile_registry::instance();
    const auto where = registry.open(category, profile_name(name));
    session_ = where.session;
    index_ = where.index;
    buffer_ = registry.buffer_handle();
    profile_registry::update_in(*buffer_, session_, index_, [&](profile_event& e) {
      e.async = true;
      describe(e);
    });
  }
  profile_async(profile_async&& other) noexcept
      : buffer_(std::move(other.buffer_)), index_(other.index_), session_(other.session_) {}
  profile_async& operator=(profile_async&&) = delete;
  ~profile_async() { finish(); }

  void finish() {
    if (!buffer_) [[likely]]
      return;
    const std::int64_t at = profile_registry::instance().now();
    profile_registry::update_in(*buffer_, session_, index_, [at](profile_event& e) { e.end = at; });
    buffer_.reset();
  }

 private:
  std::shared_ptr<profile_thread_buffer> buffer_;
  std::int64_t index_ = -1;
  std::uint64_t session_ = 0;
};

TANDEM_COLD void record_allocation(std::int64_t bytes) {
  auto& registry = profile_registry::instance();
  const std::int64_t live = registry.live_bytes().fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (bytes < 0) return;  // releases move the live total; allocations are the events
  const auto where = registry.open(profile_category::allocation, "allocate", true);
  registry.update(where.session, where.index, [&](profile_event& e) {
    e.bytes = bytes;
    e.live_bytes = live;
  });
}

// An allocation (bytes > 0) or a release (bytes < 0) of a tensor buffer.
TANDEM_ALWAYS_INLINE void profile_allocation(std::int64_t bytes) {
  if (profiling()) [[unlikely]]
    record_allocation(bytes);
}

}  // namespace detail
}  // namespace tandem
