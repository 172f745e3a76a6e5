#pragma once
// What the host side of tandem needs from a GPU: memory, copies and waiting.
// The CUDA runtime (kernels/cuda/runtime.hpp, compiled only by nvcc) fills
// this table when a translation unit of the program includes
// <tandem/cuda.hpp>; every other translation unit reaches the GPU through it,
// so host-only code needs no CUDA headers and a program may mix g++ and nvcc
// translation units. Without the table, reaching a GPU throws a
// device_error that says how to get one.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"

namespace tandem {

// A GPU's caching allocator, as its counters stand.
struct device_memory_stats {
  std::int64_t live_blocks;      // blocks handed out and not yet returned
  std::int64_t live_bytes;       // their rounded sizes
  std::int64_t cached_bytes;     // returned blocks kept for reuse
  std::int64_t allocations;      // calls to allocate since the start
  std::int64_t device_mallocs;   // of those, the ones that reached cudaMalloc
};

}  // namespace tandem

namespace tandem::detail {

struct device_runtime {
  // "CUDA": how errors name the runtime.
  const char* name;
  int (*device_count)();
  // Memory on GPU `index` (from a caching allocator): null for zero bytes.
  void* (*allocate)(int index, std::size_t bytes);
  void (*deallocate)(int index, void* memory, std::size_t bytes);
  // Copies between the host and a GPU or between GPUs, in stream order; a
  // copy to the host returns once the bytes are there.
  void (*copy)(void* to, device to_device, const void* from, device from_device, std::size_t bytes);
  // Waits until the GPU's work queued so far has finished.
  void (*synchronize)(int index);
  device_memory_stats (*memory_stats)(int index);
  // Gives the GPU's cached blocks back to the driver.
  void (*release_cached)(int index);
};

inline std::atomic<const device_runtime*>& cuda_runtime_slot() {
  static std::atomic<const device_runtime*> slot{nullptr};
  return slot;
}

// The runtime that serves `d`, which must be a GPU this program can reach.
inline const device_runtime& runtime_for(device d, const char* op) {
  const device_runtime* runtime = cuda_runtime_slot().load(std::memory_order_acquire);
  if (!runtime)
    throw device_error(std::string("tandem::") + op + ": " + to_string(d) +
                       " is not reachable: this program has no CUDA runtime (configure with -DTANDEM_CUDA=ON and "
                       "include <tandem/cuda.hpp> in a translation unit compiled by nvcc)");
  int count = runtime->device_count();
  if (d.index() < 0 || d.index() >= count)
    throw device_error(std::string("tandem::") + op + ": " + to_string(d) + " does not exist (" +
                       (count == 0 ? std::string("no CUDA device is present")
                                   : std::to_string(count) + " CUDA device" + (count == 1 ? " is" : "s are") +
                                         " present") +
                       ")");
  return *runtime;
}

}  // namespace tandem::detail

namespace tandem {

// Whether a translation unit of this program installed the CUDA runtime
// (<tandem/cuda.hpp> compiled by nvcc), GPU or not.
inline bool cuda_is_compiled() { return detail::cuda_runtime_slot().load(std::memory_order_acquire) != nullptr; }

// How many GPUs this program can use: 0 without a CUDA runtime or device.
inline int cuda_device_count() {
  const detail::device_runtime* runtime = detail::cuda_runtime_slot().load(std::memory_order_acquire);
  return runtime ? runtime->device_count() : 0;
}
inline bool cuda_is_available() { return cuda_device_count() > 0; }

// Waits until the work queued on `d` has finished (nothing to wait for on
// the host: its ops return when done).
inline void synchronize(device d) {
  if (!d.is_cpu()) detail::runtime_for(d, "synchronize").synchronize(d.index());
}

// A GPU's allocator counters (the host's: tandem::memory_stats()).
inline device_memory_stats memory_stats(device d) {
  if (d.is_cpu()) throw device_error("tandem::memory_stats: the host's allocator is counted by tandem::memory_stats() with no device");
  return detail::runtime_for(d, "memory_stats").memory_stats(d.index());
}

inline void release_cached_memory(device d) {
  if (!d.is_cpu()) detail::runtime_for(d, "release_cached_memory").release_cached(d.index());
}

}  // namespace tandem
