#pragma once
// The plan cache's functions (declared in graph/plan.hpp): inline in
// header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <mutex>
#include <shared_mutex>
#include <string>

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
    std::size_t rank = static_cast<std::size_t>(s.words[i + 1]);
    text += to_string(shape(std::span<const std::int64_t>(s.words.data() + i + 2, rank)));
    text += "@cpu";
    i += 2 + rank;
  }
  return text;
}

TANDEM_LIBRARY_FUNCTION std::shared_ptr<const plan> plan_cache::find(const signature& key) {
  std::shared_lock lock(mutex_);
  auto found = plans_.find(key);
  if (found == plans_.end()) return nullptr;
  hits_.fetch_add(1, std::memory_order_relaxed);
  return found->second;
}

TANDEM_LIBRARY_FUNCTION void plan_cache::insert(const signature& key, std::shared_ptr<const plan> p) {
  std::unique_lock lock(mutex_);
  if (plans_.emplace(key, std::move(p)).second) {
    order_.push_back(describe(key));
    ++misses_;
  } else {
    hits_.fetch_add(1, std::memory_order_relaxed);
  }
}

TANDEM_LIBRARY_FUNCTION plan_statistics plan_cache::statistics() const {
  std::shared_lock lock(mutex_);
  return {hits_.load(), misses_, order_};
}

}  // namespace tandem::detail
