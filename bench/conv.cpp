// The CNN's two 3x3 convolutions (the demo's fashion::cnn at batch 128)
// and their gradients on one thread, each computed two ways side by side:
// direct (kernels/cpu/conv_direct.hpp, what conv2d runs for stride 1) and
// by columns (im2col or col2im around tandem's GEMM, what it ran before and
// still runs for other strides). FLOP/s counts the products' multiply-adds
// (two FLOPs each) whichever way they run: the machine's FMA peak is the
// limit (on one AVX-512 core with two FMA units, 64 FLOPs per cycle).
//
//   ./build/release/bench/bench_conv --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <tandem/tandem.hpp>

using namespace tandem;
using namespace tandem::detail;

namespace {

enum class pass { forward, input_gradient, kernel_gradient };
enum class way { direct, columns };

struct layer {
  std::int64_t channels, size, outs;
};
constexpr layer layers[] = {{1, 28, 16}, {16, 14, 32}};

void convolution(benchmark::State& state, pass which, way how) {
  set_num_threads(1);
  const layer& shape_of = layers[state.range(0)];
  const std::int64_t n = 128, c = shape_of.channels, s = shape_of.size, o = shape_of.outs;
  generator gen(3);
  tensor<float> x = uniform<float>({n, c, s, s}, -1, 1, gen), w = uniform<float>({o, c, 3, 3}, -1, 1, gen);
  tensor<float> dy = uniform<float>({n, o, s, s}, -1, 1, gen);
  tensor<float> y(dy.shape()), dx(x.shape()), dw(w.shape());
  const conv_layout l = conv_layout_of(x.shape(), w.shape(), {.padding = {1, 1}});
  const float* no_bias = nullptr;
  for (auto _ : state) {
    if (which == pass::forward) {
      if (how == way::direct) native_conv2d_forward(l, x.data(), w.data(), no_bias, y.data());
      else columns_conv2d_forward(l, x.data(), w.data(), no_bias, y.data());
    } else if (which == pass::input_gradient) {
      if (how == way::direct) native_conv2d_backward_input(l, dy.data(), w.data(), dx.data());
      else columns_conv2d_backward_input(l, dy.data(), w.data(), dx.data());
    } else {
      if (how == way::direct) native_conv2d_backward_kernel(l, dy.data(), x.data(), dw.data());
      else columns_conv2d_backward_kernel(l, dy.data(), x.data(), dw.data());
    }
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * double(n * o * s * s * c * 9), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(state.range(0) == 0 ? "1->16 channels, 28x28" : "16->32 channels, 14x14");
  set_num_threads(0);
}

void forward_direct(benchmark::State& state) { convolution(state, pass::forward, way::direct); }
void forward_columns(benchmark::State& state) { convolution(state, pass::forward, way::columns); }
void input_gradient_direct(benchmark::State& state) { convolution(state, pass::input_gradient, way::direct); }
void input_gradient_columns(benchmark::State& state) { convolution(state, pass::input_gradient, way::columns); }
void kernel_gradient_direct(benchmark::State& state) { convolution(state, pass::kernel_gradient, way::direct); }
void kernel_gradient_columns(benchmark::State& state) { convolution(state, pass::kernel_gradient, way::columns); }

}  // namespace

BENCHMARK(forward_direct)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(forward_columns)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(input_gradient_direct)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(input_gradient_columns)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(kernel_gradient_direct)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(kernel_gradient_columns)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
