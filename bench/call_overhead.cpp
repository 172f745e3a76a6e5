// The fixed cost of a call on tiny tensors, for instruction counts: run
// under `valgrind --tool=callgrind` with N and 2N calls; the difference over
// N is one call without the program's start-up.
//
//   bench_call_overhead <add-jit | add-eager | ten-jit | ten-eager | weight-jit | weight-eager | layer-jit | layer-eager> <calls> [threaded]
//
// `threaded` starts (and joins) a thread first, as any program that ran an
// op on the thread pool has: libstdc++ and tandem then lock every shared
// count's update they cannot prove is one thread's. Callgrind counts those
// instructions as one each, yet on the Xeon measured each took about 6 ns
// (docs/benchmarks/static_graph.md counts them per call).
//
// weight-*: `x * w` where w is captured, not passed (a layer's weight),
// under no_grad as in inference; layer-*: `relu(x * w + b)`, w and b
// captured.
//
// Wall-clock figures of the same calls are bench_static_graph's.

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <thread>

#include <tandem/tandem.hpp>

namespace {

// The 10-node graph of bench/compile_time.py, without its sum.
auto ten_ops = [](const auto& x, const auto& y) {
  auto p = x * y + 1.0f;
  auto q = exp(p) - x;
  auto r = q * q / (y + 2.0f);
  return sigmoid(r) * p - tanh(q);
};

auto add = [](const auto& x, const auto& y) { return x + y; };

constexpr const char* usage =
    "<add-jit | add-eager | ten-jit | ten-eager | weight-jit | weight-eager | layer-jit | layer-eager> <calls> [threaded]";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && std::string_view(argv[3]) == "threaded")) {
    std::fprintf(stderr, "usage: %s %s\n", argv[0], usage);
    return 2;
  }
  std::string_view which = argv[1];
  long calls = std::atol(argv[2]);
  if (argc == 4) std::thread([] {}).join();
  tandem::tensor<float> x = tandem::full<float>({16}, 0.5f), y = tandem::full<float>({16}, 1.5f);
  auto add_graph = tandem::jit(add);
  auto ten_graph = tandem::jit(ten_ops);
  tandem::tensor<float> w = tandem::full<float>({16}, 0.25f);
  w.set_requires_grad();
  auto times_w = [&w](const auto& v) { return v * w; };
  auto weight_graph = tandem::jit(times_w);
  tandem::tensor<float> b = tandem::full<float>({16}, -0.0625f);
  b.set_requires_grad();
  auto layer = [&w, &b](const auto& v) { return tandem::relu(v * w + b); };
  auto layer_graph = tandem::jit(layer);
  std::optional<tandem::no_grad> inference;
  if (which.starts_with("weight-") || which.starts_with("layer-")) inference.emplace();
  float checksum = 0;
  for (long i = 0; i < calls; ++i) {
    if (which == "add-jit") checksum += add_graph(x, y).data()[0];
    else if (which == "add-eager") checksum += add(x, y).data()[0];
    else if (which == "ten-jit") checksum += ten_graph(x, y).data()[0];
    else if (which == "ten-eager") checksum += ten_ops(x, y).data()[0];
    else if (which == "weight-jit") checksum += weight_graph(x).data()[0];
    else if (which == "weight-eager") checksum += times_w(x).data()[0];
    else if (which == "layer-jit") checksum += layer_graph(x).data()[0];
    else if (which == "layer-eager") checksum += layer(x).data()[0];
    else {
      std::fprintf(stderr, "unknown call: %s\n", argv[1]);
      return 2;
    }
  }
  std::printf("%g\n", checksum);
  return 0;
}
