#pragma once
// A stand-in for a GPU runtime that keeps "cuda:0" in host memory and
// counts what it is asked: with it, every machine tests the device plumbing
// that does not depend on GPU kernels (to(), errors, modules moving). Ops
// that need a kernel throw, as in a program without <tandem/cuda.hpp>.
// tests/cuda runs the real runtime.

#include <cstdlib>
#include <cstring>

#include <tandem/tandem.hpp>

namespace tandem::test {

struct stand_in_tally {
  int allocations = 0, deallocations = 0, copies = 0;
};

inline stand_in_tally& stand_in_counts() {
  static stand_in_tally counts;
  return counts;
}

inline const detail::device_runtime& stand_in_runtime() {
  static const detail::device_runtime runtime{
      "stand-in",
      [] { return 1; },
      [](int, std::size_t bytes) -> void* {
        ++stand_in_counts().allocations;
        return bytes ? std::malloc(bytes) : nullptr;
      },
      [](int, void* memory, std::size_t) {
        ++stand_in_counts().deallocations;
        std::free(memory);
      },
      [](void* to, device, const void* from, device, std::size_t bytes) {
        ++stand_in_counts().copies;
        std::memcpy(to, from, bytes);
      },
      [](int) {},
      [](int) {
        const stand_in_tally& c = stand_in_counts();
        return device_memory_stats{c.allocations - c.deallocations, 0, 0, c.allocations, 0};
      },
      [](int) {},
  };
  return runtime;
}

// Installs the stand-in for a scope; the test programs have no runtime
// otherwise (no translation unit of theirs is compiled by nvcc).
struct with_stand_in_device {
  with_stand_in_device() { detail::cuda_runtime_slot().store(&stand_in_runtime()); }
  ~with_stand_in_device() { detail::cuda_runtime_slot().store(nullptr); }
  with_stand_in_device(const with_stand_in_device&) = delete;
  with_stand_in_device& operator=(const with_stand_in_device&) = delete;
};

}  // namespace tandem::test
