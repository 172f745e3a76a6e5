#pragma once
// The buffer behind one or more tensors. Views share it through a
// shared_ptr; it knows how to give its memory back (the caching allocator, a
// user's deleter, or nothing for a borrowed pointer). A captured call's
// results are pending storages until their region runs (core/deferred.hpp):
// reading one runs it.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "tandem/core/allocator.hpp"
#include "tandem/core/deferred.hpp"

namespace tandem::detail {

class storage {
 public:
  // Owned memory from the caching allocator.
  explicit storage(std::size_t bytes) : data_(caching_allocator::allocate(bytes)), bytes_(bytes), owned_(true) {}
  // Memory the caller keeps alive (a non-owning view).
  storage(void* borrowed, std::size_t bytes) : data_(borrowed), bytes_(bytes) {}
  // Memory adopted with the deleter that frees it.
  storage(void* adopted, std::size_t bytes, std::function<void(void*)> deleter)
      : data_(adopted), bytes_(bytes), deleter_(std::move(deleter)) {}
  // Memory `producer` will compute (and allocate from the caching allocator).
  storage(std::size_t bytes, deferred_work* producer) : data_(nullptr), bytes_(bytes), owned_(true), producer_(producer) {}

  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;
  ~storage() {
    if (owned_)
      caching_allocator::deallocate(data_, bytes_);
    else if (deleter_)
      deleter_(data_);
  }

  void* data() const {
    if (deferred_work* producer = producer_.load(std::memory_order_acquire)) [[unlikely]]
      producer->run_pending("a pending value was read (item(), data(), printing, or an op capture does not defer)");
    return data_;
  }
  std::size_t bytes() const { return bytes_; }

  // What computes this storage's contents, while they are pending.
  deferred_work* producer() const { return producer_.load(std::memory_order_acquire); }
  // The producer's: the contents are computed, in `memory` (null for a
  // value nobody can read).
  void settle(void* memory) {
    data_ = memory;
    producer_.store(nullptr, std::memory_order_release);
  }
  // The producer's: another producer answers reads from now on.
  void hand_to(deferred_work* producer) { producer_.store(producer, std::memory_order_release); }

  // Bumped by every in-place write, so that autograd can detect a saved value
  // modified after it was saved.
  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_;
  std::size_t bytes_;
  bool owned_ = false;
  std::function<void(void*)> deleter_;
  std::uint64_t version_ = 0;
  std::atomic<deferred_work*> producer_{nullptr};
};

inline std::shared_ptr<storage> allocate_storage(std::size_t bytes) { return make_cached<storage>(bytes); }

// The storage of every default-constructed (empty) tensor.
inline const std::shared_ptr<storage>& empty_storage() {
  static const std::shared_ptr<storage> empty = std::make_shared<storage>(nullptr, 0);
  return empty;
}

}  // namespace tandem::detail
