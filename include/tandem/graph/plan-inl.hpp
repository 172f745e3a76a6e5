#pragma once
// The plan cache's functions (declared in graph/plan.hpp): inline in
// header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "tandem/graph/plan.hpp"

namespace tandem::detail {

TANDEM_LIBRARY_FUNCTION std::string describe(const signature& s) {
  std::string text;
  for (std::size_t i = 0; i < s.words.size();) {
    if (!text.empty()) text += ", ";
    if (s.words[i] == scalar_mark) {
      text += "scalar";
      ++i;
      continue;
    }
    text += dtype_name(static_cast<dtype>(s.words[i]));
    const std::int64_t place = s.words[i + 1];
    std::size_t rank = static_cast<std::size_t>(s.words[i + 2]);
    text += to_string(shape(std::span<const std::int64_t>(s.words.data() + i + 3, rank)));
    text += "@" + to_string(place < 0 ? device::cpu : device::cuda(static_cast<int>(place)));
    i += 3 + rank;
  }
  return text;
}

struct plan_cache::entries {
  std::shared_mutex mutex;
  std::unordered_set<signature, signature_hash> seen;
  // The last signature found, read without the lock: a graph called again
  // and again with one signature skips the lock and the hash. Entries are
  // never removed and a set's nodes never move, so the pointer stays valid.
  std::atomic<const signature*> last_found{nullptr};
  std::vector<std::string> order;
  // Hits on the thread that made the cache, counted by that thread alone
  // (a load and a store: a locked add took about 6 ns on the Xeon
  // measured, a tenth of a one-op graph's call), and hits on every other
  // thread.
  std::thread::id owner = std::this_thread::get_id();
  std::atomic<std::int64_t> owner_hits{0};
  std::atomic<std::int64_t> hits{0};
  std::int64_t misses = 0;
  std::vector<const construct_counters*> constructs;
};

TANDEM_LIBRARY_FUNCTION plan_cache::plan_cache() : entries_(std::make_unique<entries>()) {}

TANDEM_LIBRARY_FUNCTION plan_cache::~plan_cache() = default;

TANDEM_LIBRARY_FUNCTION const signature* plan_cache::last_found() const {
  return entries_->last_found.load(std::memory_order_acquire);
}

TANDEM_LIBRARY_FUNCTION void plan_cache::count_hit() {
  entries& e = *entries_;
  if (std::this_thread::get_id() == e.owner)
    e.owner_hits.store(e.owner_hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  else
    e.hits.fetch_add(1, std::memory_order_relaxed);
}

TANDEM_LIBRARY_FUNCTION bool plan_cache::known(const signature& key) {
  entries& e = *entries_;
  const signature* last = e.last_found.load(std::memory_order_acquire);
  if (!(last && *last == key)) {
    std::shared_lock lock(e.mutex);
    auto found = e.seen.find(key);
    if (found == e.seen.end()) return false;
    e.last_found.store(&*found, std::memory_order_release);
  }
  count_hit();
  return true;
}

TANDEM_LIBRARY_FUNCTION void plan_cache::insert(const signature& key) {
  std::unique_lock lock(entries_->mutex);
  if (entries_->seen.insert(key).second) {
    entries_->order.push_back(describe(key));
    ++entries_->misses;
  } else {
    count_hit();
  }
}

TANDEM_LIBRARY_FUNCTION void plan_cache::add_construct(const construct_counters* counters) {
  std::unique_lock lock(entries_->mutex);
  for (const construct_counters* known : entries_->constructs)
    if (known == counters) return;
  entries_->constructs.push_back(counters);
}

TANDEM_LIBRARY_FUNCTION plan_statistics plan_cache::statistics() const {
  std::shared_lock lock(entries_->mutex);
  plan_statistics result{entries_->owner_hits.load() + entries_->hits.load(), entries_->misses, entries_->order, {}};
  std::vector<std::pair<std::string, int>> numbered;
  for (const construct_counters* c : entries_->constructs) {
    int number = 1;
    for (const auto& [name, count] : numbered)
      if (name == c->construct) number = count + 1;
    numbered.emplace_back(c->construct, number);
    for (std::size_t k = 0; k < c->subgraphs.size(); ++k)
      result.subgraphs.push_back({c->construct + " #" + std::to_string(number) + ": " + c->subgraphs[k],
                                  c->runs[k].load(std::memory_order_relaxed)});
  }
  return result;
}

}  // namespace tandem::detail
