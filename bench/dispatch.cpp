// The kernel builds chosen at run time (kernels/cpu/dispatch.hpp), side by
// side in one run: each workload on the program's own kernels (`own`: what
// its -march compiles) and on every build the library holds that the CPU
// runs. Built for plain x86-64 (the `baseline` preset), `own` is SSE2 and
// the builds show what dispatch gives a binary built once for every x86:
//
//   cmake --preset baseline && cmake --build --preset baseline --target bench_dispatch
//   ./build/baseline/bench/bench_dispatch --benchmark_min_time=0.3
//
// Workloads, one thread: the 8-op chain with tanh eager (dispatched rows),
// captured (dispatched register chains) and as a static graph (its loops
// built for each level by bench/dispatch_graphs.cpp) on 16K floats (in cache) and 1M
// (eager ops then wait on memory), SGEMM on the MLP's 128 x 784 x 256,
// softmax over 128 rows of 1000 and sums of 64 rows of 4096, in cache.
#include <benchmark/benchmark.h>

#include <string>

#include "chain.hpp"

using namespace tandem;

namespace {

// Runs `work` once per iteration on one thread with the kernels of `level`
// (generic: the program's own), counting `bytes` per iteration.
template <class Work>
void on_one_thread(benchmark::State& state, instruction_set level, std::int64_t bytes, Work work) {
  set_num_threads(1);
  set_kernel_instruction_set(level);
  for (auto _ : state) benchmark::DoNotOptimize(work().data());
  state.SetBytesProcessed(state.iterations() * bytes);
  set_num_threads(0);
}

tensor<float> chain_of(const tensor<float>& x) {
  return bench::tanh_chain(x, [](const tensor<float>& d) { return tandem::tanh(d); });
}

void chain_eager(benchmark::State& state, instruction_set level) {
  const tensor<float> x = bench::input(state.range(0), 1);
  on_one_thread(state, level, 2 * x.numel() * 4, [&] { return chain_of(x); });
}

void chain_capture(benchmark::State& state, instruction_set level) {
  const tensor<float> x = bench::input(state.range(0), 1);
  auto captured = capture(chain_of);
  on_one_thread(state, level, 2 * x.numel() * 4, [&] { return captured(x); });
}

void chain_jit(benchmark::State& state, instruction_set level) {
  const tensor<float> x = bench::input(state.range(0), 1);
  auto graph = jit(bench::tanh_chain_graph);
  on_one_thread(state, level, 2 * x.numel() * 4, [&] { return graph(x); });
}

void sgemm(benchmark::State& state, instruction_set level) {
  generator gen(2);
  const tensor<float> a = uniform({128, 784}, -1, 1, gen), b = uniform({784, 256}, -1, 1, gen);
  on_one_thread(state, level, (a.numel() + b.numel() + 128 * 256) * 4, [&] { return matmul(a, b); });
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * 128 * 784 * 256, benchmark::Counter::kIsIterationInvariantRate);
}

void softmax_rows(benchmark::State& state, instruction_set level) {
  generator gen(3);
  const tensor<float> logits = uniform({128, 1000}, -4, 4, gen);
  on_one_thread(state, level, 2 * logits.numel() * 4, [&] { return softmax(logits, 1); });
}

void sum_rows(benchmark::State& state, instruction_set level) {
  generator gen(4);
  const tensor<float> x = uniform({64, 4096}, -1, 1, gen);
  on_one_thread(state, level, x.numel() * 4, [&] { return sum(x, axes{1}); });
}

}  // namespace

int main(int argc, char** argv) {
  const instruction_set at_load = kernel_instruction_set();
  std::vector<std::pair<std::string, instruction_set>> levels{
      {"own_" + std::string(to_string(compiled_instruction_set)), instruction_set::generic}};
  for (instruction_set level : kernel_builds())
    if (level <= cpu_instruction_set()) levels.emplace_back(std::string(to_string(level)), level);
  for (const auto& [name, level] : levels) {
    benchmark::RegisterBenchmark(("chain_jit/" + name).c_str(), chain_jit, level)
        ->Arg(1 << 14)
        ->Arg(1 << 20)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("chain_eager/" + name).c_str(), chain_eager, level)
        ->Arg(1 << 14)
        ->Arg(1 << 20)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("chain_capture/" + name).c_str(), chain_capture, level)
        ->Arg(1 << 14)
        ->Arg(1 << 20)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("sgemm_128x784x256/" + name).c_str(), sgemm, level)->UseRealTime();
    benchmark::RegisterBenchmark(("softmax_128x1000/" + name).c_str(), softmax_rows, level)->UseRealTime();
    benchmark::RegisterBenchmark(("sum_rows_64x4096/" + name).c_str(), sum_rows, level)->UseRealTime();
  }
  benchmark::AddCustomContext("cpu_instruction_set", std::string(to_string(cpu_instruction_set())));
  benchmark::AddCustomContext("compiled_for", std::string(to_string(compiled_instruction_set)));
  benchmark::AddCustomContext("chosen_at_load", std::string(to_string(at_load)));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
