#pragma once
// Work recorded but not run yet. A captured call (capture/capture.hpp)
// defers elementwise ops and runs them together, fused, when a value is
// needed. Core sits below capture, so a storage knows that work only
// through this interface: reading a pending storage runs it, and writing a
// tensor in place runs first any pending work that reads it.

namespace tandem::detail {

class storage;

class deferred_work {
 public:
  // Computes every pending value; `why` says what needed one.
  virtual void run_pending(const char* why) = 0;
  // Called before `written` is written in place.
  virtual void before_write(const storage& written) = 0;

 protected:
  ~deferred_work() = default;
};

// The deferred work of the capture this thread is running, if any.
inline deferred_work*& active_deferred_work() {
  thread_local deferred_work* active = nullptr;
  return active;
}

inline void before_write(const storage& written) {
  if (deferred_work* work = active_deferred_work()) [[unlikely]]
    work->before_write(written);
}

}  // namespace tandem::detail
