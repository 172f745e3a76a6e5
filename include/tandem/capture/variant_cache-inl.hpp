#pragma once
// The variant cache's definitions (declared in capture/variant_cache.hpp):
// inline in header-only builds, compiled once into tandem::compiled.

#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tandem/capture/variant_cache.hpp"

namespace tandem::detail {

struct variant_cache::impl {
  struct entry {
    std::shared_ptr<const region_key> key;
    std::size_t hash = 0;
    std::shared_ptr<const region_plan> plan;
    std::int64_t runs = 0;
    std::uint64_t last_run = 0;
    std::int64_t op_by_op_ns = 0;
    std::int64_t fused_ns = 0;
    std::int64_t fused_runs = 0;
    std::int64_t saved_ns() const { return fused_runs * op_by_op_ns - fused_ns; }
  };
  // Guard failures kept for explain(): the latest ones.
  static constexpr std::size_t failures_kept = 16;
  // Positions within a call whose last region is remembered, for the
  // guard-failure text.
  static constexpr std::size_t positions_kept = 64;

  mutable std::mutex mutex;
  std::size_t limit;
  std::vector<entry> entries;
  std::vector<std::shared_ptr<const region_key>> last_at_position;
  std::map<std::string, std::int64_t> boundaries;
  std::deque<std::string> failures;
  capture_statistics counts;
  std::uint64_t clock = 0;
  // What evicted variants saved.
  std::int64_t evicted_saved_ns = 0;

  void evict_beyond_limit() {
    while (entries.size() > limit) {
      auto oldest = entries.begin();
      for (auto it = entries.begin(); it != entries.end(); ++it)
        if (it->last_run < oldest->last_run) oldest = it;
      evicted_saved_ns += oldest->saved_ns();
      entries.erase(oldest);
      ++counts.variants_evicted;
    }
  }
};

TANDEM_LIBRARY_FUNCTION variant_cache::variant_cache(std::size_t limit) : impl_(std::make_unique<impl>()) {
  impl_->limit = limit == 0 ? 1 : limit;
}
TANDEM_LIBRARY_FUNCTION variant_cache::~variant_cache() = default;

TANDEM_LIBRARY_FUNCTION planned_region variant_cache::plan_for(const region_key& key, std::size_t position,
                                                              const char* why) {
  const std::size_t hash = hash_of(key);
  std::lock_guard lock(impl_->mutex);
  impl& state = *impl_;
  ++state.counts.regions_run;
  ++state.boundaries[why];
  impl::entry* found = nullptr;
  bool first = false;
  for (impl::entry& e : state.entries)
    if (e.hash == hash && *e.key == key) {
      found = &e;
      break;
    }
  if (!found) {
    ++state.counts.variants_recorded;
    if (position < state.last_at_position.size() && state.last_at_position[position]) {
      state.failures.push_back("call " + std::to_string(state.counts.calls) + ", region " +
                               std::to_string(position + 1) + ": " +
                               difference(key, *state.last_at_position[position]));
      if (state.failures.size() > impl::failures_kept) state.failures.pop_front();
    }
    state.entries.push_back({std::make_shared<const region_key>(key), hash,
                             std::make_shared<const region_plan>(plan_region(key)), 0, 0});
    found = &state.entries.back();
    first = true;
  }
  ++found->runs;
  found->last_run = ++state.clock;
  planned_region planned{found->plan, found->key, first};
  if (position < impl::positions_kept) {
    if (state.last_at_position.size() <= position) state.last_at_position.resize(position + 1);
    state.last_at_position[position] = found->key;
  }
  state.evict_beyond_limit();
  return planned;
}

TANDEM_LIBRARY_FUNCTION void variant_cache::count_time(const region_key& key, std::int64_t nanoseconds, bool first) {
  std::lock_guard lock(impl_->mutex);
  for (impl::entry& e : impl_->entries) {
    if (e.key.get() != &key) continue;
    if (first) {
      e.op_by_op_ns = nanoseconds;
    } else {
      e.fused_ns += nanoseconds;
      ++e.fused_runs;
    }
    return;
  }
}

TANDEM_LIBRARY_FUNCTION void variant_cache::count_call() {
  std::lock_guard lock(impl_->mutex);
  ++impl_->counts.calls;
}

TANDEM_LIBRARY_FUNCTION void variant_cache::count_run(std::int64_t ops, std::int64_t dropped, std::int64_t chained,
                                                      std::int64_t bytes_kept_in_tiles) {
  std::lock_guard lock(impl_->mutex);
  impl_->counts.ops_captured += ops;
  impl_->counts.ops_dropped += dropped;
  impl_->counts.ops_chained += chained;
  impl_->counts.bytes_kept_in_tiles += bytes_kept_in_tiles;
}

TANDEM_LIBRARY_FUNCTION void variant_cache::set_limit(std::size_t limit) {
  std::lock_guard lock(impl_->mutex);
  impl_->limit = limit == 0 ? 1 : limit;
  impl_->evict_beyond_limit();
}

TANDEM_LIBRARY_FUNCTION capture_statistics variant_cache::statistics() const {
  std::lock_guard lock(impl_->mutex);
  capture_statistics s = impl_->counts;
  s.variants_cached = impl_->entries.size();
  s.cache_limit = impl_->limit;
  std::int64_t saved = impl_->evicted_saved_ns;
  for (const impl::entry& e : impl_->entries) saved += e.saved_ns();
  s.seconds_saved = static_cast<double>(saved) * 1e-9;
  return s;
}

TANDEM_LIBRARY_FUNCTION std::string variant_cache::explain() const {
  std::lock_guard lock(impl_->mutex);
  const impl& state = *impl_;
  const capture_statistics& c = state.counts;
  std::string text = "tandem::capture: " + std::to_string(c.calls) + " calls, " + std::to_string(c.regions_run) +
                     " regions run; " + std::to_string(c.variants_recorded) + " variants recorded, " +
                     std::to_string(state.entries.size()) + " cached (limit " + std::to_string(state.limit) + "), " +
                     std::to_string(c.variants_evicted) + " evicted\n";
  text += "variants (most recent last):\n";
  std::size_t n = 0;
  auto microseconds = [](double ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g us", ns * 1e-3);
    return std::string(text);
  };
  std::int64_t saved = state.evicted_saved_ns;
  for (const impl::entry& e : state.entries) {
    text += "  " + std::to_string(++n) + ". " + describe(*e.key) + ": run " + std::to_string(e.runs) +
            " times; first run op by op " + microseconds(static_cast<double>(e.op_by_op_ns));
    if (e.fused_runs > 0)
      text += ", fused " + microseconds(static_cast<double>(e.fused_ns) / static_cast<double>(e.fused_runs)) +
              " on average";
    text += "\n";
    saved += e.saved_ns();
  }
  text += "regions ended (graph breaks and boundaries):\n";
  for (const auto& [why, count] : state.boundaries) text += "  " + why + ": " + std::to_string(count) + "\n";
  if (!state.failures.empty()) {
    text += "guard failures (a region differed from the last one run at its place in the call):\n";
    for (const std::string& f : state.failures) text += "  " + f + "\n";
  }
  char bytes[32];
  std::snprintf(bytes, sizeof bytes, "%.3g", static_cast<double>(c.bytes_kept_in_tiles) / 1e6);
  text += "ops captured: " + std::to_string(c.ops_captured) + ", of which " + std::to_string(c.ops_dropped) +
          " dropped (nothing read their results), " + std::to_string(c.ops_chained) +
          " run in register chains; intermediate results kept in tiles, never written: " + bytes + " MB\n";
  text += "time saved by fusion (each fused run against its variant's first, op by op): " +
          microseconds(static_cast<double>(saved)) + "\n";
  return text;
}

}  // namespace tandem::detail
