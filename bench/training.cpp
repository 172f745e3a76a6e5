// One training step (forward, backward, Adam update) of the demo's models
// at batch 128, on 1 and 2 threads: the MLP's step written by hand (the
// limit), tandem eager, the eager step under capture(), tandem with the
// whole step as one static graph,
// and, when libtorch-dev is installed, libtorch
// eager on the same architectures (training_libtorch.cpp, linked into the
// same binary). bench/training_pytorch.py times PyTorch eager and
// torch.compile the same way. The *_bf16 rows run the step under
// autocast(bfloat16) (products of bfloat16-rounded operands, float sums);
// training_pytorch.py --autocast times PyTorch's autocast beside them.
//
//   ./build/release/bench/bench_training --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

#include "../examples/fashion_models.hpp"
#include "mlp_hand.hpp"

namespace {

using namespace tandem;

// A fixed batch: images uniform in [0, 1], labels cycling through 0..9.
struct batch {
  tensor<float> images;
  tensor<std::int64_t> labels;
  batch() : images(uniform<float>({128, 784}, 0, 1, rng())), labels(shape{128}) {
    for (std::int64_t i = 0; i < 128; ++i) labels.data()[i] = i % 10;
  }
  static generator& rng() {
    static generator gen(11);
    return gen;
  }
};

enum class run { eager, graph, capture };

template <class Model>
void step(benchmark::State& state, run how, dtype products = dtype::float32) {
  set_num_threads(static_cast<int>(state.range(0)));
  generator gen(7);
  Model model(gen);
  nn::adam optimizer(model.named_parameters(), {.lr = 1e-3});
  nn::train_step eager([&model](const auto& x, const auto& y) { return cross_entropy(model(x), y); }, optimizer);
  auto graph = jit(eager);
  auto captured = capture(
      [&eager](const tensor<float>& images, const tensor<std::int64_t>& labels) { return eager(images, labels); });
  batch data;
  const autocast precision(products);
  for (auto _ : state) {
    tensor<float> loss = how == run::graph     ? graph(data.images, data.labels)
                         : how == run::capture ? captured(data.images, data.labels)
                                               : eager(data.images, data.labels);
    benchmark::DoNotOptimize(loss.data());
  }
  state.SetItemsProcessed(state.iterations() * 128);
}

// The same step written by hand (mlp_hand.hpp), from the same parameters.
void mlp_step_hand(benchmark::State& state) {
  set_num_threads(static_cast<int>(state.range(0)));
  generator gen(7);
  fashion::mlp model(gen);
  bench::mlp_hand hand(model);
  batch data;
  for (auto _ : state) {
    float loss = hand.step(data.images.data(), data.labels.data());
    benchmark::DoNotOptimize(loss);
  }
  state.SetItemsProcessed(state.iterations() * 128);
}

void mlp_step_tandem_eager(benchmark::State& state) { step<fashion::mlp>(state, run::eager); }
void mlp_step_tandem_capture(benchmark::State& state) { step<fashion::mlp>(state, run::capture); }
void mlp_step_tandem_graph(benchmark::State& state) { step<fashion::mlp>(state, run::graph); }
void mlp_step_tandem_eager_bf16(benchmark::State& state) { step<fashion::mlp>(state, run::eager, dtype::bfloat16); }
void mlp_step_tandem_graph_bf16(benchmark::State& state) { step<fashion::mlp>(state, run::graph, dtype::bfloat16); }
void cnn_step_tandem_eager(benchmark::State& state) { step<fashion::cnn>(state, run::eager); }
void cnn_step_tandem_capture(benchmark::State& state) { step<fashion::cnn>(state, run::capture); }
void cnn_step_tandem_graph(benchmark::State& state) { step<fashion::cnn>(state, run::graph); }
void cnn_step_tandem_graph_bf16(benchmark::State& state) { step<fashion::cnn>(state, run::graph, dtype::bfloat16); }

}  // namespace

BENCHMARK(mlp_step_hand)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(mlp_step_tandem_eager)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(mlp_step_tandem_capture)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(mlp_step_tandem_graph)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(mlp_step_tandem_eager_bf16)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(mlp_step_tandem_graph_bf16)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(cnn_step_tandem_eager)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(cnn_step_tandem_capture)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(cnn_step_tandem_graph)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(cnn_step_tandem_graph_bf16)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
