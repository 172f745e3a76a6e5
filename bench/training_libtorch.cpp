// libtorch's twins of bench/training.cpp's steps, for comparison only
// (Debian's libtorch-dev; tandem never depends on it): the same layers,
// PyTorch's default initialization, Adam, batch 128, eager.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

namespace {

struct mlp_net : torch::nn::Module {
  torch::nn::Linear hidden1{784, 256}, hidden2{256, 256}, out{256, 10};
  mlp_net() {
    register_module("hidden1", hidden1);
    register_module("hidden2", hidden2);
    register_module("out", out);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return out(torch::relu(hidden2(torch::relu(hidden1(x)))));
  }
};

struct cnn_net : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 16, 3).padding(1).bias(false)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(16, 32, 3).padding(1).bias(false)};
  torch::nn::BatchNorm2d norm1{16}, norm2{32};
  torch::nn::Linear hidden{32 * 7 * 7, 128}, out{128, 10};
  cnn_net() {
    register_module("conv1", conv1);
    register_module("norm1", norm1);
    register_module("conv2", conv2);
    register_module("norm2", norm2);
    register_module("hidden", hidden);
    register_module("out", out);
  }
  torch::Tensor forward(const torch::Tensor& images) {
    auto x = images.reshape({-1, 1, 28, 28});
    x = torch::max_pool2d(torch::relu(norm1(conv1(x))), 2);
    x = torch::max_pool2d(torch::relu(norm2(conv2(x))), 2);
    return out(torch::relu(hidden(x.flatten(1))));
  }
};

template <class Net>
void torch_step(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(0)));
  torch::manual_seed(7);
  auto net = std::make_shared<Net>();
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-3));
  auto images = torch::rand({128, 784});
  auto labels = torch::arange(128) % 10;
  for (auto _ : state) {
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(images), labels);
    loss.backward();
    optimizer.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * 128);
}

void mlp_step_libtorch(benchmark::State& state) { torch_step<mlp_net>(state); }
void cnn_step_libtorch(benchmark::State& state) { torch_step<cnn_net>(state); }

}  // namespace

BENCHMARK(mlp_step_libtorch)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(cnn_step_libtorch)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
