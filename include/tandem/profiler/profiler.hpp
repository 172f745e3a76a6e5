#pragma once
// tandem::profiler: which op, static graph, fused group, backward node,
// optimizer step or thread-pool task took the time, per thread, for eager
// code and static graphs alike. A recording is a profile_trace: events in
// order on each thread, nested as they ran; written as Chrome Trace Event
// JSON (Perfetto and chrome://tracing open it), or summed by name into a
// table like PyTorch's key_averages().
//
//   profile_trace trace = profile([&] { step(x, y); });
//   std::cout << trace.summary();
//   trace.save("step.json");
//
// One profiler records at a time, across the program's threads. Off, every
// hook in tandem is one load and one predicted branch
// (docs/benchmarks/profiler.md has the cost, on and off).

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/core/profiling.hpp"

namespace tandem {

// One event of a trace. Times are nanoseconds from the start of the
// recording; `self` is the duration less that of the events nested in it
// on its thread.
struct profile_record {
  std::string name;
  std::string shapes;  // the inputs' shapes, where known
  std::string detail;  // element type and device, or a group's ops
  profile_category category = profile_category::user;
  std::uint32_t thread = 0;
  bool instant = false;  // allocations
  bool async = false;    // collectives: may end on another thread, outside the nesting
  std::int64_t start = 0, duration = 0, self = 0;
  std::int64_t bytes = 0, flops = 0;
  std::int64_t live_bytes = 0;  // allocations: bytes live after it
  int depth = 0;                // how many events it is nested in
};

// The summary's order: by total time (the default), self time, calls, mean
// time, bytes, or name.
enum class summary_order { total, self, calls, mean, bytes, name };

struct summary_options {
  summary_order order = summary_order::total;
  bool by_shapes = false;  // a row per name and input shapes
  std::size_t rows = 0;    // the first rows only (0: all)
};

struct summary_row {
  std::string name;
  std::string shapes;  // with by_shapes
  profile_category category = profile_category::user;
  std::int64_t calls = 0;
  std::int64_t total = 0, self = 0;  // nanoseconds
  std::int64_t bytes = 0, flops = 0;

  double mean() const { return calls ? static_cast<double>(total) / static_cast<double>(calls) : 0.0; }
  // Achieved rates over the rows' total time (0 where nothing is known).
  double gigabytes_per_second() const { return total ? static_cast<double>(bytes) / static_cast<double>(total) : 0.0; }
  double gigaflops() const { return total ? static_cast<double>(flops) / static_cast<double>(total) : 0.0; }
};

class profile_summary {
 public:
  explicit profile_summary(std::vector<summary_row> rows, bool by_shapes = false)
      : rows_(std::move(rows)), by_shapes_(by_shapes) {}
  const std::vector<summary_row>& rows() const { return rows_; }
  // The rows as an aligned text table.
  std::string table() const;

 private:
  std::vector<summary_row> rows_;
  bool by_shapes_;
};

std::ostream& operator<<(std::ostream& out, const profile_summary& summary);

class profile_trace {
 public:
  profile_trace() = default;
  explicit profile_trace(std::vector<profile_record> events) : events_(std::move(events)) {}

  // Sorted by thread, then start; an event comes before those nested in it.
  const std::vector<profile_record>& events() const { return events_; }
  profile_summary summary(const summary_options& options = {}) const;
  // Chrome Trace Event JSON: complete events ("X") per thread, allocations
  // as instants with a counter of the live bytes, collectives as async
  // begin/end pairs.
  std::string chrome_trace() const;
  // Writes chrome_trace() to `path`; throws io_error where it cannot.
  void save(const std::string& path) const;

 private:
  std::vector<profile_record> events_;
};

// Records while it is started. Starting a second one while another records
// throws. A profiler destroyed while recording stops, discarding its events.
class profiler {
 public:
  profiler() = default;
  ~profiler();
  profiler(const profiler&) = delete;
  profiler& operator=(const profiler&) = delete;

  void start();
  profile_trace stop();
  // Between pause() and resume() nothing is recorded; the recording goes
  // on (PyTorch's schedule: only some steps of a long run).
  void pause();
  void resume();
  bool recording() const { return recording_; }

 private:
  bool recording_ = false;
  bool paused_ = false;
};

// Runs f while a profiler records, and returns what it recorded.
template <class F>
profile_trace profile(F&& f) {
  profiler p;
  p.start();
  std::forward<F>(f)();
  return p.stop();
}

// A range of the program's own in the trace ("data loading", "epoch 3"),
// from construction to destruction, nesting like tandem's own events.
class profile_scope {
 public:
  explicit profile_scope(const char* name) : range_(profile_category::user, name) {}
  explicit profile_scope(const std::string& name) : range_(profile_category::user, name) {}

 private:
  detail::profile_range range_;
};

}  // namespace tandem

#if TANDEM_HEADER_ONLY
#include "tandem/profiler/profiler-inl.hpp"
#endif
