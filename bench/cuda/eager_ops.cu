// Eager device ops one at a time, as bench/cuda/graphs.cu times its rows
// (CUDA-event medians of 21 whole calls): dense and broadcast elementwise
// ops, a strided copy, reductions, a batched product, and the CNN's layers
// forward and backward (docs/benchmarks/cuda.md).
//
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=native -Iinclude -x cu \
//        bench/cuda/eager_ops.cu -o cuda_eager_ops -lcublas && ./cuda_eager_ops

#include <tandem/cuda.hpp>

#include <cstdint>
#include <cstdio>

#include "gpu_runs.hpp"

namespace {

using namespace tandem;

const device gpu = device::cuda(0);


template <class Run>
void row(const char* what, Run run) {
  std::printf("%-44s %8.3f ms\n", what, bench::median_ms(run));
}

// A leaf that records its gradient.
tensor<float> leaf(const tensor<float>& t) {
  tensor<float> copy = t.detach();
  copy.set_requires_grad();
  return copy;
}

}  // namespace

int main() {
  if (!bench::print_gpu_heading("tandem eager device ops")) return 77;

  const std::int64_t n = std::int64_t{1} << 26;
  generator gen(1);
  tensor<float> x = uniform<float>({n}, -1, 1, gen, gpu), y = uniform<float>({n}, -1, 1, gen, gpu);
  tensor<float> one = ones<float>({1}, gpu), square = x.reshape({8192, 8192});
  row("x * y, 64M floats", [&] { (void)(x * y); });
  row("x * t, t of one element", [&] { (void)(x * one); });
  row("8192^2 transposed, contiguous()", [&] { (void)square.transpose(0, 1).contiguous(); });
  row("sum(x), 64M floats", [&] { (void)sum(x); });
  row("sum of 8192^2 over axis 1", [&] { (void)sum(square, 1); });
  row("sum of 8192^2 over axis 0", [&] { (void)sum(square, 0); });

  tensor<float> kernel = uniform<float>({1, 1, 32, 144}, -1, 1, gen, gpu);
  tensor<float> columns = uniform<float>({128, 1, 144, 196}, -1, 1, gen, gpu);
  row("matmul [1,1,32,144] x [128,1,144,196]", [&] { (void)matmul(kernel, columns); });

  // The demo's CNN layers (examples/fashion_models.hpp), batch 128.
  const conv2d_options same{.padding = {1, 1}};
  tensor<float> images = uniform<float>({128, 1, 28, 28}, -1, 1, gen, gpu);
  tensor<float> w1 = uniform<float>({16, 1, 3, 3}, -1, 1, gen, gpu);
  tensor<float> features = uniform<float>({128, 16, 14, 14}, -1, 1, gen, gpu);
  tensor<float> w2 = uniform<float>({32, 16, 3, 3}, -1, 1, gen, gpu);
  row("conv2d [128,1,28,28] * [16,1,3,3]", [&] { (void)conv2d(images, w1, same); });
  row("conv2d [128,16,14,14] * [32,16,3,3]", [&] { (void)conv2d(features, w2, same); });
  tensor<float> images_leaf = leaf(images), w1_leaf = leaf(w1), features_leaf = leaf(features), w2_leaf = leaf(w2);
  row("first conv2d, forward and backward", [&] { sum(conv2d(images_leaf, w1_leaf, same)).backward(); });
  row("second conv2d, forward and backward", [&] { sum(conv2d(features_leaf, w2_leaf, same)).backward(); });

  tensor<float> planes = uniform<float>({128, 16, 28, 28}, -1, 1, gen, gpu), planes_leaf = leaf(planes);
  row("max_pool2d 2x2 of [128,16,28,28]", [&] { (void)max_pool2d(planes); });
  row("max_pool2d, forward and backward", [&] { sum(max_pool2d(planes_leaf)).backward(); });
  tensor<float> weight = ones<float>({16}, gpu), bias = zeros<float>({16}, gpu);
  row("batch_normalize [128,16,28,28]", [&] { (void)batch_normalize(planes, weight, bias, 1e-5); });
  row("batch_normalize, forward and backward", [&] { sum(batch_normalize(planes_leaf, weight, bias, 1e-5)).backward(); });
  row("relu [128,16,28,28], forward and backward", [&] { sum(relu(planes_leaf)).backward(); });
  return 0;
}
