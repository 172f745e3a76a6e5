#pragma once
// The profiler's bodies (profiler/profiler.hpp), compiled once into
// tandem::compiled.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <tuple>

#include "tandem/core/allocator.hpp"
#include "tandem/core/error.hpp"
#include "tandem/profiler/profiler.hpp"

namespace tandem {
namespace detail {

// Events ordered by thread, then start, the longer first where two start
// together (the outer one), with depths and self times from their nesting.
inline std::vector<profile_record> nested_records(std::vector<std::pair<std::uint32_t, profile_event>> events) {
  std::vector<profile_record> records;
  records.reserve(events.size());
  for (auto& [thread, e] : events) {
    profile_record r;
    r.name = std::move(e.name);
    r.shapes = std::move(e.shapes);
    r.detail = std::move(e.detail);
    r.category = e.category;
    r.thread = thread;
    r.instant = e.instant;
    r.async = e.async;
    r.start = e.start;
    r.duration = std::max<std::int64_t>(e.end - e.start, 0);
    r.self = r.duration;
    r.bytes = e.bytes;
    r.flops = e.flops;
    r.live_bytes = e.live_bytes;
    records.push_back(std::move(r));
  }
  std::stable_sort(records.begin(), records.end(), [](const profile_record& a, const profile_record& b) {
    return std::tuple(a.thread, a.start, -a.duration, a.instant) < std::tuple(b.thread, b.start, -b.duration, b.instant);
  });
  std::vector<std::size_t> open;  // indices of the events enclosing the current one
  for (std::size_t i = 0; i < records.size(); ++i) {
    profile_record& r = records[i];
    // Instants and collectives nest by their start only: a collective may
    // outlast the range that started it.
    const bool nests = !r.instant && !r.async;
    const std::int64_t end = nests ? r.start + r.duration : r.start;
    while (!open.empty()) {
      const profile_record& outer = records[open.back()];
      if (outer.thread == r.thread && end <= outer.start + outer.duration && r.start >= outer.start) break;
      open.pop_back();
    }
    r.depth = static_cast<int>(open.size());
    if (!open.empty() && nests) records[open.back()].self -= r.duration;
    if (nests) open.push_back(i);
  }
  return records;
}

inline void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// Microseconds, as the trace format counts, to the nanosecond.
inline void append_microseconds(std::string& out, std::int64_t nanoseconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(nanoseconds / 1000),
                static_cast<long long>(nanoseconds % 1000));
  out += text;
}

inline std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

inline std::string byte_count(std::int64_t bytes) {
  if (bytes <= 0) return "";
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1000 && unit < 4) value /= 1000, ++unit;
  return fixed(value, unit == 0 ? 0 : 1) + " " + units[unit];
}

}  // namespace detail

TANDEM_LIBRARY_FUNCTION profiler::~profiler() {
  if (recording_) detail::profile_registry::instance().end();
}

TANDEM_LIBRARY_FUNCTION void profiler::start() {
  if (recording_ || !detail::profile_registry::instance().begin(detail::caching_allocator::stats().live_bytes))
    throw error("tandem::profiler::start: a profiler is already recording (one records at a time)");
  recording_ = true;
}

TANDEM_LIBRARY_FUNCTION void profiler::pause() {
  if (!recording_) throw error("tandem::profiler::pause: this profiler is not recording");
  if (!paused_) detail::profile_registry::instance().set_paused(true);
  paused_ = true;
}

TANDEM_LIBRARY_FUNCTION void profiler::resume() {
  if (!recording_) throw error("tandem::profiler::resume: this profiler is not recording");
  if (paused_) {
    // What was allocated and released while paused went unseen.
    detail::profile_registry::instance().live_bytes().store(detail::caching_allocator::stats().live_bytes,
                                                            std::memory_order_relaxed);
    detail::profile_registry::instance().set_paused(false);
  }
  paused_ = false;
}

TANDEM_LIBRARY_FUNCTION profile_trace profiler::stop() {
  if (!recording_) throw error("tandem::profiler::stop: this profiler is not recording");
  recording_ = false;
  paused_ = false;
  return profile_trace(detail::nested_records(detail::profile_registry::instance().end()));
}

TANDEM_LIBRARY_FUNCTION profile_summary profile_trace::summary(const summary_options& options) const {
  std::map<std::tuple<std::string, std::string, profile_category>, summary_row> rows;
  for (const auto& e : events_) {
    summary_row& row = rows[{e.name, options.by_shapes ? e.shapes : std::string(), e.category}];
    if (row.calls == 0) {
      row.name = e.name;
      row.shapes = options.by_shapes ? e.shapes : std::string();
      row.category = e.category;
    }
    ++row.calls;
    row.total += e.duration;
    row.self += e.self;
    row.bytes += e.bytes;
    row.flops += e.flops;
  }
  std::vector<summary_row> sorted;
  for (auto& [key, row] : rows) sorted.push_back(std::move(row));
  auto key = [&](const summary_row& r) -> double {
    switch (options.order) {
      case summary_order::self: return static_cast<double>(r.self);
      case summary_order::calls: return static_cast<double>(r.calls);
      case summary_order::mean: return r.mean();
      case summary_order::bytes: return static_cast<double>(r.bytes);
      default: return static_cast<double>(r.total);
    }
  };
  if (options.order == summary_order::name)
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  else
    std::stable_sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) { return key(a) > key(b); });
  if (options.rows && sorted.size() > options.rows) sorted.resize(options.rows);
  return profile_summary(std::move(sorted), options.by_shapes);
}

TANDEM_LIBRARY_FUNCTION std::string profile_summary::table() const {
  std::vector<std::string> headings{"name", "category", "calls", "total ms", "self ms", "mean us", "bytes", "GB/s",
                                    "GFLOP/s"};
  if (by_shapes_) headings.insert(headings.begin() + 1, "input shapes");
  std::vector<std::vector<std::string>> cells{headings};
  for (const auto& r : rows_) {
    std::vector<std::string> line{r.name,
                                  to_string(r.category),
                                  std::to_string(r.calls),
                                  detail::fixed(static_cast<double>(r.total) / 1e6, 3),
                                  detail::fixed(static_cast<double>(r.self) / 1e6, 3),
                                  detail::fixed(r.mean() / 1e3, 2),
                                  detail::byte_count(r.bytes),
                                  r.bytes && r.total ? detail::fixed(r.gigabytes_per_second(), 2) : "",
                                  r.flops && r.total ? detail::fixed(r.gigaflops(), 2) : ""};
    if (by_shapes_) line.insert(line.begin() + 1, r.shapes);
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(headings.size(), 0);
  for (const auto& line : cells)
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  std::string out;
  const std::size_t text_columns = by_shapes_ ? 3 : 2;  // left-aligned; the numbers are right-aligned
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      const std::string pad(width[c] - line[c].size(), ' ');
      out += c < text_columns ? line[c] + pad : pad + line[c];
      out += c + 1 < line.size() ? "  " : "\n";
    }
  }
  return out;
}

TANDEM_LIBRARY_FUNCTION std::ostream& operator<<(std::ostream& out, const profile_summary& summary) {
  return out << summary.table();
}

TANDEM_LIBRARY_FUNCTION std::string profile_trace::chrome_trace() const {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  auto next = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  std::vector<std::uint32_t> threads;
  for (const auto& e : events_)
    if (threads.empty() || threads.back() != e.thread) threads.push_back(e.thread);
  for (std::uint32_t t : threads) {
    next();
    out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(t) +
           ",\"args\":{\"name\":\"thread " + std::to_string(t) + "\"}}";
  }
  std::int64_t async_id = 0;
  for (const auto& e : events_) {
    next();
    if (e.async) {
      // A begin and an end of one id, on a track of their own.
      for (const char* phase : {"b", "e"}) {
        if (*phase == 'e') next();
        out += "{\"name\":";
        detail::append_json_string(out, e.name);
        out += std::string(",\"cat\":\"") + to_string(e.category) + "\",\"ph\":\"" + phase +
               "\",\"id\":" + std::to_string(async_id) + ",\"ts\":";
        detail::append_microseconds(out, *phase == 'b' ? e.start : e.start + e.duration);
        out += ",\"pid\":0,\"tid\":" + std::to_string(e.thread) + ",\"args\":{\"bytes\":" +
               std::to_string(e.bytes) + "}}";
      }
      ++async_id;
      continue;
    }
    out += "{\"name\":";
    detail::append_json_string(out, e.name);
    out += ",\"cat\":\"";
    out += to_string(e.category);
    out += e.instant ? "\",\"ph\":\"i\",\"s\":\"t\",\"ts\":" : "\",\"ph\":\"X\",\"ts\":";
    detail::append_microseconds(out, e.start);
    if (!e.instant) {
      out += ",\"dur\":";
      detail::append_microseconds(out, e.duration);
    }
    out += ",\"pid\":0,\"tid\":" + std::to_string(e.thread) + ",\"args\":{";
    bool first_argument = true;
    auto argument = [&](const char* key) {
      if (!first_argument) out += ',';
      first_argument = false;
      out += '"';
      out += key;
      out += "\":";
    };
    if (!e.shapes.empty()) argument("shapes"), detail::append_json_string(out, e.shapes);
    if (!e.detail.empty()) argument("detail"), detail::append_json_string(out, e.detail);
    if (e.bytes) argument("bytes"), out += std::to_string(e.bytes);
    if (e.flops) argument("flops"), out += std::to_string(e.flops);
    out += "}}";
    if (e.category == profile_category::allocation) {
      next();
      out += "{\"name\":\"live bytes\",\"ph\":\"C\",\"ts\":";
      detail::append_microseconds(out, e.start);
      out += ",\"pid\":0,\"args\":{\"bytes\":" + std::to_string(e.live_bytes) + "}}";
    }
  }
  out += "]}\n";
  return out;
}

TANDEM_LIBRARY_FUNCTION void profile_trace::save(const std::string& path) const {
  std::ofstream file(path, std::ios::binary);
  const std::string text = chrome_trace();
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  file.close();
  if (!file) throw io_error("tandem::profile_trace::save: cannot write '" + path + "'");
}

}  // namespace tandem
