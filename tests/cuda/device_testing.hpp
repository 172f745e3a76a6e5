#pragma once
// What the GPU suite's cases share (op_cases.hpp, training_cases.hpp): the
// device, tolerances, the layouts a host tensor is moved to the GPU in, and
// the comparisons. tests/cuda/device_ops.cu runs the cases on a GPU (with
// the CUDA kernels of <tandem/cuda.hpp>); tests/cuda/emulated_device.cpp
// and emulated_training.cpp run them on every machine against host loops
// standing for those kernels (support/emulated_device.hpp), which checks
// everything but the kernels. The including file provides the device
// first, and compile_graph(graph, arguments...), which compiles a static
// graph's kernels for it.

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "support/check.hpp"

using namespace tandem;

namespace {

const device gpu = device::cuda(0);

template <class T>
struct gpu_tolerance {
  // The device's libm (CUDA's exp, erf, tanh...) and the host's round
  // differently within a few ulp.
  static constexpr double rel = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  static constexpr double abs = std::is_same_v<T, float> ? 2e-6 : 1e-13;
};

// The CPU tensor `base` on the GPU in the layouts of check.hpp: dense, every
// other element at an odd offset, and transposed.
template <class T>
std::vector<std::pair<std::string, tensor<T>>> device_layouts(const tensor<T>& base) {
  std::vector<std::pair<std::string, tensor<T>>> out{{"contiguous", base.to(gpu)}};
  if (base.dim() >= 1) {
    shape wide = base.shape();
    wide.back() = 2 * wide.back() + 1;
    tensor<T> buffer = zeros<T>(wide);
    buffer.slice(-1, 1, {}, 2).assign(base);
    out.emplace_back("stride 2, odd offset", buffer.to(gpu).slice(-1, 1, {}, 2));
  }
  if (base.dim() >= 2) {
    tensor<T> flipped = base.transpose(0, 1).contiguous();
    out.emplace_back("transposed", flipped.to(gpu).transpose(0, 1));
  }
  return out;
}

template <class T>
void check_same(const tensor<T>& on_device, const tensor<T>& on_host, const std::string& context) {
  INFO(context);
  CHECK(on_device.device() == gpu);
  test::check_values(on_device.cpu(), on_host, context, gpu_tolerance<T>::rel, gpu_tolerance<T>::abs);
}

// Inputs inside every unary op's domain (log, sqrt, rsqrt need x > 0).
template <class T>
tensor<T> positive_inputs(const shape& s, std::uint64_t seed) {
  return test::random_tensor<T>(s, 0.05, 4, seed);
}

}  // namespace
