// The library's own GPU paths, side by side in one run: eager ops on device
// tensors against the same function as a static graph compiled for the GPU
// (tandem::cuda::compile), for the 8-op chain and the gradient of
// sum(tanh(x*y+x)*y), with the device's copy bandwidth as the
// limit, and the demo's MLP and CNN training steps (batch 128, Adam): eager
// against nn::train_step under jit compiled for the GPU. Times are
// CUDA-event medians of whole calls (launches, allocation and the host's
// work included).
//
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=native -Iinclude -x cu \
//        bench/cuda/graphs.cu -o cuda_graphs -lcublas && ./cuda_graphs
//
// bench/cuda/fused_bandwidth_torch.py and bench/cuda/training_torch.py
// measure PyTorch eager and torch.compile on the same work.

#include <tandem/cuda.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../../examples/fashion_models.hpp"
#include "../chain.hpp"
#include "gpu_runs.hpp"

namespace {

using namespace tandem;

const device gpu = device::cuda(0);


void row(const char* what, float ms, double bytes) {
  std::printf("%-44s %9.3f ms  %8.1f GB/s\n", what, ms, bytes / (ms * 1e-3) / 1e9);
}

// One training step of the model on a batch of 128 random images, eagerly
// and as one static graph compiled for the GPU, each from the same seed.
template <class Model>
void training_rows(const char* name) {
  generator data_gen(2);
  tensor<float> images = uniform<float>({128, 784}, 0, 1, data_gen, gpu);
  std::vector<std::int64_t> classes(128);
  for (std::size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<std::int64_t>(i % 10);
  tensor<std::int64_t> labels = from_vector(classes).to(gpu);
  auto time_step = [&](bool compiled) {
    generator gen(7);
    Model model(gen);
    model.to(gpu);
    nn::adam optimizer(model.named_parameters(), {.lr = 1e-3});
    nn::train_step step(fashion::classification_loss<Model>{&model}, optimizer);
    if (!compiled) return bench::median_ms([&] { (void)step(images, labels); });
    auto graph = jit(std::move(step));
    cuda::compile(graph, images, labels);
    return bench::median_ms([&] { (void)graph(images, labels); });
  };
  std::printf("%-44s %9.3f ms\n", (std::string(name) + " training step, eager").c_str(), time_step(false));
  std::printf("%-44s %9.3f ms\n", (std::string(name) + " training step, static graph").c_str(), time_step(true));
}

}  // namespace

int main() {
  if (!bench::print_gpu_heading("tandem eager ops against static graphs compiled for the GPU")) return 77;

  const std::int64_t n = std::int64_t{1} << 26;
  generator gen(1);
  tensor<float> x = uniform<float>({n}, -1, 1, gen, gpu), y = uniform<float>({n}, -1, 1, gen, gpu);
  const double bytes = 4.0 * static_cast<double>(n);

  row("copy (x.clone())", bench::median_ms([&] { (void)x.clone(); }), 2 * bytes);

  // The eager path's cost per op where the kernel is nothing: 1000 adds of
  // one-element tensors in a row, each result the next one's operand.
  tensor<float> one = ones<float>({1}, gpu);
  const float thousand_adds = bench::median_ms([&] {
    tensor<float> acc = one;
    for (int i = 0; i < 1000; ++i) acc = acc + one;
  });
  std::printf("%-44s %9.2f us\n", "eager add of 1-element tensors, per op", thousand_adds);

  const auto& chain = bench::tanh_chain_graph;
  auto chain_graph = jit(chain);
  cuda::compile(chain_graph, x);
  row("8-op chain, eager", bench::median_ms([&] { (void)chain(x); }), 2 * bytes);
  row("8-op chain, static graph", bench::median_ms([&] { (void)chain_graph(x); }), 2 * bytes);

  auto loss = [](const auto& a, const auto& b) { return sum(tanh(a * b + a) * b); };
  auto loss_graph = jit(loss);
  cuda::compile(loss_graph, x, y);
  // Reads x and y, writes both gradients.
  row("grad of sum(tanh(x*y+x)*y), eager", bench::median_ms([&] { (void)grad(loss, all_args)(x, y); }), 4 * bytes);
  row("grad of sum(tanh(x*y+x)*y), static graph", bench::median_ms([&] { (void)grad(loss_graph, all_args)(x, y); }),
      4 * bytes);

  training_rows<fashion::mlp>("MLP 784-256-256-10");
  training_rows<fashion::cnn>("CNN");
  return 0;
}
