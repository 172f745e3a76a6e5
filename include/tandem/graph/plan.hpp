#pragma once
// Plans and their cache. A plan is what a static graph learns from one input
// signature (the element type, shape and device of every tensor argument):
// the shapes of its outputs and of every buffer it fills, checked once when
// the plan is built. Calls with a signature seen before reuse the plan;
// scalars are not part of the signature, so changing one never builds a new
// plan. The cache is shared by copies of a static_graph and safe to use from
// several threads at once.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "tandem/core/dtype.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem {

struct plan_statistics {
  std::int64_t hits = 0;
  std::int64_t misses = 0;
  std::vector<std::string> signatures;
};

namespace detail {

struct plan {
  std::vector<shape> outputs;
  std::int64_t fused_loops = 0;
  std::int64_t eager_kernels = 0;
};

template <class X>
void describe_argument(std::string& into, const X& x) {
  if (!into.empty()) into += ", ";
  if constexpr (is_tensor_v<X>) {
    into += dtype_name(dtype_of<typename X::value_type>);
    into += to_string(x.shape());
    into += "@cpu";
  } else {
    into += "scalar";
  }
}

template <class... A>
std::string signature_of(const A&... a) {
  std::string s;
  (describe_argument(s, a), ...);
  return s;
}

class plan_cache {
 public:
  // The plan for a signature, or null (a miss) when none was built yet.
  std::shared_ptr<const plan> find(const std::string& signature) {
    std::shared_lock lock(mutex_);
    auto found = plans_.find(signature);
    if (found == plans_.end()) return nullptr;
    hits_.fetch_add(1, std::memory_order_relaxed);
    return found->second;
  }
  void insert(const std::string& signature, std::shared_ptr<const plan> p) {
    std::unique_lock lock(mutex_);
    if (plans_.emplace(signature, std::move(p)).second) order_.push_back(signature);
    ++misses_;
  }
  plan_statistics statistics() const {
    std::shared_lock lock(mutex_);
    return {hits_.load(), misses_, order_};
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const plan>> plans_;
  std::vector<std::string> order_;
  std::atomic<std::int64_t> hits_{0};
  std::int64_t misses_ = 0;
};

}  // namespace detail
}  // namespace tandem
