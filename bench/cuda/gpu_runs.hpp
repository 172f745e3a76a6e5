#pragma once
// What the GPU benchmarks share: the heading that names the GPU (or says
// there is none), and how a call is timed: CUDA events on the device's
// stream around each whole call (launches, allocation and the host's work
// included), after one warm-up call; the median of `reps`.

#include <tandem/cuda.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace bench {

// Prints GPU 0's name and `what`; false, having said so, where no GPU is.
inline bool print_gpu_heading(const char* what) {
  if (!tandem::cuda_is_available()) {
    std::puts("no CUDA device is present");
    return false;
  }
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  std::printf("%s, %s\n\n", properties.name, what);
  return true;
}

// Milliseconds per call of `run` on GPU `index`, the median of `reps` timed calls.
template <class Run>
float median_ms(Run run, int index = 0, int reps = 21) {
  run();
  tandem::synchronize(tandem::device::cuda(index));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start, tandem::detail::cuda::stream(index));
    run();
    cudaEventRecord(stop, tandem::detail::cuda::stream(index));
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

}  // namespace bench
