#pragma once
// Work recorded but not run yet. A captured call (capture/capture.hpp)
// defers elementwise ops, and the reductions they feed, and runs them
// together, fused, when a value is needed. Core sits below capture, so a storage knows that work only
// through this interface: reading a pending storage runs it, and writing a
// tensor in place runs first any pending work that reads it.

#include <cstdint>
#include <memory>
#include <span>

#include "tandem/core/shape.hpp"

namespace tandem::detail {

class storage;
// What an elementwise op hands over to be deferred (capture/deferred_op.hpp).
struct deferred_op;
struct deferred_operand;
struct deferred_reduction;

// Elements of a value computed span by span for the reduction that reads
// it: `span(self, first, n, tile)` gives elements [first, first + n),
// computed into `tile` (room for n) or read where they already are. Called
// from any thread of the pool, for disjoint spans.
struct value_spans {
  const void* (*span)(const void* self, std::int64_t first, std::int64_t n, void* tile);
  const void* self;
};

class deferred_work {
 public:
  // Appends an elementwise op over `out_shape` to the work and returns the
  // storage its result will have; null when the op must run now. Virtual,
  // so that an op's eager driver names no capture code: a translation unit
  // that never captures compiles none.
  virtual std::shared_ptr<storage> defer(const deferred_op& op, std::span<deferred_operand> operands,
                                         const shape& out_shape) = 0;
  // Appends a reduction of `input`, a pending value of this work, and
  // returns the storage of its result; null when it must run now (on the
  // value in memory).
  virtual std::shared_ptr<storage> defer_reduction(const deferred_reduction& reduction,
                                                   const std::shared_ptr<storage>& input) = 0;
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
