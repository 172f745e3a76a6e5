// Compiled by nvcc when it is found (nothing runs: the CI machine has no
// GPU). Keeps the public headers honest for the CUDA backend: they must
// compile as CUDA host code, and the element math they share with kernels
// must compile for the device.

#include <tandem/tandem.hpp>

__global__ void apply_sigmoid(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tandem::sigmoid_op{}(in[i]);
}

int main() {
  tandem::tensor<float> x{1, 2, 3};
  float* device = nullptr;
  if (cudaMalloc(&device, 2 * sizeof(float) * x.numel()) != cudaSuccess) return 0;
  apply_sigmoid<<<1, 32>>>(device, device + x.numel(), static_cast<int>(x.numel()));
  cudaFree(device);
  auto slope = tandem::grad([](const tandem::tensor<float>& t) { return sum(tandem::sigmoid(t) * t); });
  tandem::tensor<float> g = slope(x);
  return static_cast<int>(sum(x).item()) == 6 && g.numel() == 3 ? 0 : 1;
}
