// libtorch's twins of bench/autograd.cpp's cases, for comparison only
// (Debian's libtorch-dev; tandem never depends on it).
#include <benchmark/benchmark.h>
#include <torch/torch.h>

namespace {

void torch_op(benchmark::State& state, bool recorded) {
  torch::set_num_threads(1);
  auto x = torch::ones({state.range(0)}, torch::requires_grad(recorded));
  auto y = torch::full({state.range(0)}, 2.0f);
  for (auto _ : state) {
    auto z = x * y;
    benchmark::DoNotOptimize(z.data_ptr());
  }
}
void op_libtorch_plain(benchmark::State& state) { torch_op(state, false); }
void op_libtorch_recorded(benchmark::State& state) { torch_op(state, true); }

void chain_libtorch(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(1);
  auto x = torch::rand({state.range(0)}).mul_(2).sub_(1).requires_grad_(true);
  for (auto _ : state) {
    auto loss = (torch::sigmoid(torch::exp(x * 0.5f) * x + 1.0f) * torch::tanh(x) - x).sum();
    loss.backward();
    x.mutable_grad().reset();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void mlp_step_libtorch(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(0)));
  torch::manual_seed(7);
  std::vector<torch::Tensor> params{torch::randn({784, 256}) * 0.05, torch::zeros({256}), torch::randn({256, 256}) * 0.05,
                                    torch::zeros({256}), torch::randn({256, 10}) * 0.05, torch::zeros({10})};
  for (auto& p : params) p.requires_grad_(true);
  auto images = torch::rand({128, 784});
  auto labels = torch::randint(0, 10, {128});
  for (auto _ : state) {
    auto h = torch::relu(torch::matmul(images, params[0]) + params[1]);
    h = torch::relu(torch::matmul(h, params[2]) + params[3]);
    auto loss = torch::nn::functional::cross_entropy(torch::matmul(h, params[4]) + params[5], labels);
    loss.backward();
    torch::NoGradGuard update;
    for (auto& p : params) {
      p.sub_(p.grad() * 0.01);
      p.mutable_grad().reset();
    }
  }
}

}  // namespace

BENCHMARK(op_libtorch_plain)->Arg(1)->Arg(16);
BENCHMARK(op_libtorch_recorded)->Arg(1)->Arg(16);
BENCHMARK(chain_libtorch)->Arg(1 << 20)->UseRealTime();
BENCHMARK(mlp_step_libtorch)->Arg(1)->Arg(2)->UseRealTime();
