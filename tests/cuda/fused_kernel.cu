// Compiled and linked by nvcc when it is found; run where a GPU is (skipped,
// exit 77, elsewhere). A static
// graph's fused kernel is a plain struct: the compile-time passes (Boost.Hana,
// host only) pick its classes, and the device runs its call operator and its
// adjoints per element, as the CPU runs them per SIMD lane. Compiling it
// keeps the public headers honest for the CUDA backend on every machine with
// nvcc: they must compile as CUDA host code, and the element math they share
// with kernels (exp, sigmoid and their derivatives here) for the device.

#include <tandem/tandem.hpp>

#include <cstdio>

template <class Kernel>
__global__ void fused_forward(Kernel kernel, const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kernel(x[i], y[i]);
}

template <class Kernel>
__global__ void fused_backward(Kernel kernel, const float* g, const float* x, const float* y, float* dx, float* dy,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    auto adjoint = kernel.adjoints(g[i], std::array<float, 2>{x[i], y[i]});
    dx[i] = adjoint[0];
    dy[i] = adjoint[1];
  }
}

int main() {
  auto f = tandem::jit([](auto x, auto y) { return exp(x * y) * y + x * sigmoid(x); });
  tandem::tensor<float> x{1, 2, 3}, y{0.5f, 0.25f, 0.125f};
  using root = decltype(f.trace(x, y));
  using value = std::remove_cvref_t<decltype(tandem::detail::operand_at<0>(f.trace(x, y).children))>::node_type;
  using kernel = tandem::detail::group_kernel<root, value>;
  static_assert(kernel::n_operands == 2 && kernel::n_constants == 0, "one loop over x and y");

  constexpr int n = 3;
  float* device = nullptr;
  if (cudaMalloc(&device, 7 * n * sizeof(float)) != cudaSuccess) {
    std::puts("skipped: no CUDA device is present (compiled and linked only)");
    return 77;
  }
  cudaMemcpy(device, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(device + n, y.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  fused_forward<<<1, 32>>>(kernel{}, device, device + n, device + 2 * n, n);
  float ones[n] = {1, 1, 1};
  cudaMemcpy(device + 3 * n, ones, n * sizeof(float), cudaMemcpyHostToDevice);
  fused_backward<<<1, 32>>>(kernel{}, device + 3 * n, device, device + n, device + 4 * n, device + 5 * n, n);
  float out[n], dx[n];
  cudaMemcpy(out, device + 2 * n, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(dx, device + 4 * n, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(device);
  tandem::tensor<float> want = f(x, y);
  auto [want_dx, want_dy] = tandem::grad([&](auto a, auto b) { return sum(f(a, b)); }, tandem::all_args)(x, y);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    float scale = 1 + (want.data()[i] < 0 ? -want.data()[i] : want.data()[i]);
    float e = out[i] - want.data()[i], d = dx[i] - want_dx.data()[i];
    bool bad = e * e > 1e-10f * scale * scale || d * d > 1e-8f * scale * scale;
    if (bad)
      std::printf("element %d: value %.9g (CPU %.9g), gradient %.9g (CPU %.9g)\n", i, out[i], want.data()[i], dx[i],
                  want_dx.data()[i]);
    wrong += bad;
  }
  std::printf("fused kernel on the GPU: %d wrong values\n", wrong);
  return wrong == 0 ? 0 : 1;
}
