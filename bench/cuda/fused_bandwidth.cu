// How close a static graph's fused group, run per element on the GPU, comes
// to the device's copy bandwidth. The kernels are tandem's compile-time group
// structs (graph/kernel.hpp), launched by a plain grid-stride loop: what the
// CUDA backend's launcher will do, before any tuning. The target is
// 90% of copy for a forward chain and 85% for a gradient.
//
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=native -Iinclude -x cu \
//        bench/cuda/fused_bandwidth.cu -o fused_bandwidth && ./fused_bandwidth
//
// bench/cuda/fused_bandwidth_torch.py measures PyTorch eager and
// torch.compile on the same expressions.

#include <tandem/tandem.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

constexpr int threads = 256;

__global__ void copy(const float* x, float* y, long n) {
  for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n; i += long{gridDim.x} * blockDim.x) y[i] = x[i];
}

template <class Kernel>
__global__ void forward(Kernel kernel, const float* x, float* y, long n) {
  for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n; i += long{gridDim.x} * blockDim.x)
    y[i] = kernel(x[i]);
}

template <class Kernel>
__global__ void adjoints(Kernel kernel, const float* x, const float* y, float* dx, float* dy, long n) {
  for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n; i += long{gridDim.x} * blockDim.x) {
    auto a = kernel.adjoints(1.0f, std::array<float, 2>{x[i], y[i]});
    dx[i] = a[0];
    dy[i] = a[1];
  }
}

// Milliseconds per call of `launch`, the median of `reps` timed calls.
template <class Launch>
float time_ms(Launch launch, int reps = 21) {
  launch();
  check(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times(reps);
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&times[r], start, stop);
  }
  check(cudaGetLastError(), "launch");
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return times[reps / 2];
}

// The group struct of a one-group graph's value (its root's only operand).
template <class Graph, class... X>
auto value_kernel(const Graph& g, const X&... x) {
  using root = decltype(g.trace(x...));
  using value = typename std::remove_cvref_t<decltype(tandem::detail::operand_at<0>(g.trace(x...).children))>::node_type;
  return tandem::detail::group_kernel<root, value>{};
}

}  // namespace

int main() {
  using namespace tandem;
  const long n = 64L << 20;
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "no GPU");
  const int blocks = prop.multiProcessorCount * 16;

  // The 8-op chain with its constants replaced by x: the same eight
  // ops, one read and one write per element.
  auto chain = jit([](const auto& x) {
    auto a = x + x;
    auto b = a * x;
    auto c = b * x;
    auto d = c + x;
    auto e = tanh(d);
    auto g = e * x;
    auto h = g - x;
    return h * h;
  });
  // The gradient of sum(tanh(x * y + x) * y): the group's adjoints for a
  // seed of ones, reading x and y and writing both gradients.
  auto product = jit([](const auto& x, const auto& y) { return tanh(x * y + x) * y; });
  tensor<float> probe{0.5f};
  auto chain_kernel = value_kernel(chain, probe);
  auto product_kernel = value_kernel(product, probe, probe);
  static_assert(decltype(chain_kernel)::n_operands == 1 && decltype(chain_kernel)::n_constants == 0);
  static_assert(decltype(product_kernel)::n_operands == 2 && decltype(product_kernel)::n_constants == 0);

  std::vector<float> host(n);
  for (long i = 0; i < n; ++i) host[i] = 0.5f * std::sin(0.001f * static_cast<float>(i % 100003));
  float *x, *y, *out, *dx, *dy;
  for (float** p : {&x, &y, &out, &dx, &dy}) check(cudaMalloc(p, n * sizeof(float)), "cudaMalloc");
  check(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy x");
  check(cudaMemcpy(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy y");

  float memcpy_ms = time_ms([&] { cudaMemcpy(out, x, n * sizeof(float), cudaMemcpyDeviceToDevice); });
  float copy_ms = time_ms([&] { copy<<<blocks, threads>>>(x, out, n); });
  float chain_ms = time_ms([&] { forward<<<blocks, threads>>>(chain_kernel, x, out, n); });
  float grad_ms = time_ms([&] { adjoints<<<blocks, threads>>>(product_kernel, x, y, dx, dy, n); });

  // The device ran the same struct the CPU runs: compare a stretch.
  std::vector<float> got(4096), got_dx(4096);
  check(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost), "read out");
  check(cudaMemcpy(got_dx.data(), dx, got_dx.size() * sizeof(float), cudaMemcpyDeviceToHost), "read dx");
  int wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    float v = host[i], want = chain_kernel(v), want_dx = product_kernel.adjoints(1.0f, std::array<float, 2>{v, v})[0];
    wrong += std::abs(got[i] - want) > 1e-5f * (1 + std::abs(want)) ||
             std::abs(got_dx[i] - want_dx) > 1e-5f * (1 + std::abs(want_dx));
  }

  auto gbps = [&](double bytes_per_element, float ms) { return bytes_per_element * n / (ms * 1e6); };
  double copy_gbps = gbps(8, memcpy_ms);
  std::printf("%s, %d SMs; %ld floats; median of 21 runs (CUDA events)\n", prop.name, prop.multiProcessorCount, n);
  std::printf("%-36s %9s %9s %9s\n", "kernel", "ms", "GB/s", "of copy");
  auto row = [&](const char* name, double bytes, float ms) {
    std::printf("%-36s %9.3f %9.0f %8.0f%%\n", name, ms, gbps(bytes, ms), 100 * gbps(bytes, ms) / copy_gbps);
  };
  row("cudaMemcpy device to device", 8, memcpy_ms);
  row("grid-stride copy", 8, copy_ms);
  row("fused 8-op chain (forward)", 8, chain_ms);
  row("fused gradient of tanh(x*y+x)*y", 16, grad_ms);
  std::printf("device results against the host struct: %d wrong of %zu\n", wrong, got.size());
  for (float* p : {x, y, out, dx, dy}) cudaFree(p);
  return wrong == 0 ? 0 : 1;
}
