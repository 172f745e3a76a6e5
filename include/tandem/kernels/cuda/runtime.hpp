#pragma once
// The CUDA runtime behind GPU tensors (compiled only by nvcc): one stream
// per device, on which every op and copy of that device is queued in order;
// a caching allocator per device; every CUDA error turned into a
// device_error naming the call and the op. The host waits only where it
// reads: a copy to the host, synchronize(), item() and printing.
//
// Blocks freed by the host go back to their device's cache at once, even
// while queued kernels still use them: the next user of a block is queued on
// the same stream, after them (PyTorch's allocator relies on the same
// order).

#ifndef __CUDACC__
#error "tandem/kernels/cuda/runtime.hpp is compiled only by nvcc; include <tandem/cuda.hpp> from a .cu file"
#endif

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tandem/core/allocator.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/device_runtime.hpp"
#include "tandem/core/error.hpp"

namespace tandem::detail::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* op) {
  throw device_error(std::string("tandem::") + op + ": " + call + " failed: " + cudaGetErrorName(status) + " (" +
                     cudaGetErrorString(status) + ")");
}

inline void check(cudaError_t status, const char* call, const char* op) {
  if (status != cudaSuccess) [[unlikely]] {
    cudaGetLastError();  // clears a non-sticky error so the next call starts clean
    throw_cuda_error(status, call, op);
  }
}

inline int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
    return n;
  }();
  return count;
}

// Makes `index` the calling thread's current device for a scope.
class device_scope {
 public:
  device_scope(int index, const char* op) {
    check(cudaGetDevice(&previous_), "cudaGetDevice", op);
    if (previous_ != index) check(cudaSetDevice(index), "cudaSetDevice", op);
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;
  ~device_scope() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

// One device's stream and cached blocks.
class device_state {
 public:
  explicit device_state(int index) : index_(index) {}

  cudaStream_t stream() {
    std::call_once(stream_made_, [&] {
      device_scope on(index_, "stream");
      check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "stream");
    });
    return stream_;
  }

  void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    std::size_t rounded = caching_allocator::size_class(bytes < 512 ? 512 : bytes);
    std::lock_guard lock(mutex_);
    ++stats_.allocations;
    void* block = nullptr;
    if (auto cached = free_.find(rounded); cached != free_.end() && !cached->second.empty()) {
      block = cached->second.back();
      cached->second.pop_back();
      stats_.cached_bytes -= static_cast<std::int64_t>(rounded);
    } else {
      block = fresh_block(rounded);
    }
    ++stats_.live_blocks;
    stats_.live_bytes += static_cast<std::int64_t>(rounded);
    return block;
  }

  void deallocate(void* block, std::size_t bytes) {
    if (!block) return;
    std::size_t rounded = caching_allocator::size_class(bytes < 512 ? 512 : bytes);
    std::lock_guard lock(mutex_);
    free_[rounded].push_back(block);
    --stats_.live_blocks;
    stats_.live_bytes -= static_cast<std::int64_t>(rounded);
    stats_.cached_bytes += static_cast<std::int64_t>(rounded);
  }

  device_memory_stats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void release_cached() {
    std::lock_guard lock(mutex_);
    release_cached_locked();
  }

 private:
  // cudaMalloc, and when the device is full, once more after the cache is
  // given back (the queued work that may still use cached blocks is waited
  // for first).
  void* fresh_block(std::size_t rounded) {
    device_scope on(index_, "allocate");
    void* block = nullptr;
    cudaError_t status = cudaMalloc(&block, rounded);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached_locked();
      status = cudaMalloc(&block, rounded);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw device_error("tandem::allocate: cudaMalloc of " + std::to_string(rounded) + " bytes on cuda:" +
                         std::to_string(index_) + " failed: " + cudaGetErrorName(status) + " (" +
                         std::to_string(stats_.live_bytes) + " bytes in use by tensors)");
    }
    ++stats_.device_mallocs;
    return block;
  }

  void release_cached_locked() {
    if (stats_.cached_bytes == 0) return;
    device_scope on(index_, "release_cached_memory");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize", "release_cached_memory");
    for (auto& [size, blocks] : free_)
      for (void* block : blocks) check(cudaFree(block), "cudaFree", "release_cached_memory");
    free_.clear();
    stats_.cached_bytes = 0;
  }

  int index_;
  std::once_flag stream_made_;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;
  device_memory_stats stats_{0, 0, 0, 0, 0};
};

// The state of GPU `index`, made on first use and kept for the program's
// life: blocks freed by static tensors at exit still find their cache.
inline device_state& state(int index) {
  static std::vector<std::unique_ptr<device_state>>* states = [] {
    auto* all = new std::vector<std::unique_ptr<device_state>>;
    for (int i = 0; i < device_count(); ++i) all->push_back(std::make_unique<device_state>(i));
    return all;
  }();
  return *(*states)[static_cast<std::size_t>(index)];
}

inline cudaStream_t stream(int index) { return state(index).stream(); }

// Device memory for the intermediate results of one op, from the caching
// allocator. It may be freed as soon as the op's kernels are queued: the
// next user of the block is queued after them, on the same stream.
class scratch {
 public:
  scratch(int index, std::size_t bytes) : index_(index), bytes_(bytes), memory_(state(index).allocate(bytes)) {}
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() { state(index_).deallocate(memory_, bytes_); }
  template <class T>
  T* as() const {
    return static_cast<T*>(memory_);
  }

 private:
  int index_;
  std::size_t bytes_;
  void* memory_;
};

inline void copy(void* to, device to_device, const void* from, device from_device, std::size_t bytes) {
  if (to_device.is_cpu()) {
    cudaStream_t s = stream(from_device.index());
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (device to host)", "to");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize", "to");
  } else if (from_device.is_cpu()) {
    // From pageable memory the call returns once the bytes are staged, so
    // the host buffer may be freed right after.
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream(to_device.index())),
          "cudaMemcpyAsync (host to device)", "to");
  } else if (to_device == from_device) {
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream(to_device.index())),
          "cudaMemcpyAsync (device to device)", "to");
  } else {
    // Between GPUs: the destination's queued work (a previous user of its
    // block) finishes first, and the copy before either stream goes on.
    check(cudaStreamSynchronize(stream(to_device.index())), "cudaStreamSynchronize", "to");
    cudaStream_t s = stream(from_device.index());
    check(cudaMemcpyPeerAsync(to, to_device.index(), from, from_device.index(), bytes, s), "cudaMemcpyPeerAsync", "to");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize", "to");
  }
}

inline const device_runtime& runtime() {
  static const device_runtime table{
      "CUDA",
      &device_count,
      [](int index, std::size_t bytes) { return state(index).allocate(bytes); },
      [](int index, void* memory, std::size_t bytes) { state(index).deallocate(memory, bytes); },
      &copy,
      [](int index) { check(cudaStreamSynchronize(stream(index)), "cudaStreamSynchronize", "synchronize"); },
      [](int index) { return state(index).stats(); },
      [](int index) { state(index).release_cached(); },
  };
  return table;
}

// Checks the launch just queued on behalf of `op`.
inline void check_launch(const char* op) { check(cudaGetLastError(), "a kernel launch", op); }

}  // namespace tandem::detail::cuda
