#pragma once
// The buffer behind one or more tensors. Views share it through a
// shared_ptr; it knows its device and how to give its memory back (the
// caching allocator, a GPU runtime's, a user's deleter, or nothing for a
// borrowed pointer). A captured call's results are pending storages until
// their region runs (core/deferred.hpp): reading one runs it.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "tandem/core/allocator.hpp"
#include "tandem/core/deferred.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/device_runtime.hpp"

namespace tandem::detail {

class storage {
 public:
  // Owned memory from the caching allocator.
  explicit storage(std::size_t bytes) : data_(caching_allocator::allocate(bytes)), bytes_(bytes), owned_(true) {}
  // Owned memory on `where`: the host's caching allocator or the GPU
  // runtime's.
  storage(std::size_t bytes, tandem::device where)
      : data_(nullptr), bytes_(bytes), owned_(true), device_(where) {
    if (where.is_cpu()) {
      data_ = caching_allocator::allocate(bytes);
    } else {
      runtime_ = &runtime_for(where, "allocate");
      data_ = runtime_->allocate(where.index(), bytes);
    }
  }
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
    if (runtime_)
      runtime_->deallocate(device_.index(), data_, bytes_);
    else if (owned_)
      caching_allocator::deallocate(data_, bytes_);
    else if (deleter_)
      deleter_(data_);
  }

  // The elements, for the host to read or write: a GPU's memory is not the
  // host's, so reaching it here throws instead of crashing a CPU kernel.
  void* data() const {
    if (!device_.is_cpu()) [[unlikely]]
      throw_host_access();
    if (deferred_work* producer = producer_.load(std::memory_order_acquire)) [[unlikely]]
      producer->run_pending("a pending value was read (item(), data(), printing, or an op capture does not defer)");
    return data_;
  }
  // The memory wherever it lives, for kernels and copies of its device.
  void* device_data() const { return device_.is_cpu() ? data() : data_; }
  std::size_t bytes() const { return bytes_; }
  tandem::device device() const { return device_; }

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
  tandem::device device_ = tandem::device::cpu;
  // The GPU runtime that gives the memory back; null on the host.
  const device_runtime* runtime_ = nullptr;

  [[noreturn]] void throw_host_access() const {
    throw device_error("tandem: the elements of a tensor on " + to_string(device_) +
                       " were read on the host by an op that has no " + to_string(device_) +
                       " kernel; copy the tensor with .cpu() first");
  }
};

inline std::shared_ptr<storage> allocate_storage(std::size_t bytes) { return make_cached<storage>(bytes); }
inline std::shared_ptr<storage> allocate_storage(std::size_t bytes, tandem::device where) {
  return where.is_cpu() ? make_cached<storage>(bytes) : make_cached<storage>(bytes, where);
}

// The storage of every default-constructed (empty) tensor.
inline const std::shared_ptr<storage>& empty_storage() {
  static const std::shared_ptr<storage> empty = std::make_shared<storage>(nullptr, 0);
  return empty;
}

}  // namespace tandem::detail
