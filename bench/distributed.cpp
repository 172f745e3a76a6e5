// Scale-out on MPI (docs/benchmarks/distributed.md), run under mpirun:
//
//   bench_distributed all_reduce     tandem's all_reduce against a bare
//                                    MPI_Allreduce loop (what the MPI
//                                    library's own benchmark times), float
//                                    messages of 4 KB to 64 MB
//   bench_distributed mlp|cnn [steps]
//                                    data-parallel training steps of the
//                                    demo's models on batches of 64 per rank:
//                                    examples per second over the job
//   bench_distributed shard [calls]  a transformer's MLP block, 256 x 512
//                                    by 512 x 2048 by 2048 x 512: jit on
//                                    one process beside dist::shard cut by
//                                    rows (no message) and as Megatron-LM
//                                    cuts it (one all-reduce); then forward
//                                    and backward
//
//   mpirun -np 2 ./build/release/bench/bench_distributed all_reduce
//
// Not a Google Benchmark: every rank times the same loop between barriers,
// and rank 0 prints.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tandem/dist.hpp>
#include <tandem/dist/data_parallel.hpp>
#include <tandem/dist/shard.hpp>
#include <tandem/tandem.hpp>

#include "../examples/fashion_models.hpp"

using namespace tandem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The slowest rank's time for `repeats` runs of `body`, after one untimed.
template <class F>
double timed(int repeats, F&& body) {
  body();
  dist::communicator::world().barrier();
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) body();
  double mine = seconds_since(start) / repeats, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

void all_reduce_bandwidth() {
  const int ranks = dist::world_size();
  if (dist::rank() == 0)
    std::printf("%12s %14s %14s %14s %14s\n", "bytes", "MPI us", "tandem us", "MPI GB/s", "tandem GB/s");
  for (std::int64_t bytes = 4096; bytes <= (std::int64_t{64} << 20); bytes *= 4) {
    const std::int64_t n = bytes / 4;
    const int repeats = static_cast<int>(std::clamp<std::int64_t>((std::int64_t{256} << 20) / bytes, 5, 2000));
    std::vector<float> raw(static_cast<std::size_t>(n), 1.0f);
    tensor<float> x = full<float>({n}, 1.0f);
    double mpi = timed(repeats, [&] {
      MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    double ours = timed(repeats, [&] { dist::all_reduce(x).wait(); });
    // Bus bandwidth, as NCCL's tests count it: each rank sends and
    // receives 2 (ranks - 1) / ranks of the message.
    const double moved = 2.0 * (ranks - 1) / ranks * static_cast<double>(bytes);
    if (dist::rank() == 0)
      std::printf("%12lld %14.1f %14.1f %14.2f %14.2f\n", static_cast<long long>(bytes), mpi * 1e6, ours * 1e6,
                  moved / mpi / 1e9, moved / ours / 1e9);
  }
}

// How a step averages its gradients: after the backward in one bucket
// (average_gradients), or during it in buckets (data_parallel).
enum class averaging { after_backward, during_backward };

template <class Model>
void training_throughput(const char* name, int steps) {
  const int me = dist::rank(), ranks = dist::world_size();
  constexpr std::int64_t batch = 64;
  generator data_gen(7 + static_cast<std::uint64_t>(me));
  tensor<float> images = uniform<float>({batch, 784}, 0, 1, data_gen);
  tensor<std::int64_t> labels = integers<std::int64_t>({batch}, 0, 10, data_gen);
  for (averaging how : {averaging::after_backward, averaging::during_backward}) {
    generator init(1);
    Model model(init);
    dist::broadcast_parameters(model);
    std::optional<dist::data_parallel> replicas;
    if (how == averaging::during_backward) replicas.emplace(model);
    nn::adam optimizer(model.named_parameters(), {.lr = 1e-3});
    double per_step = timed(steps, [&] {
      model.zero_grad();
      nn::cross_entropy(model(images), labels).backward();
      if (replicas) replicas->finish();
      else dist::average_gradients(model);
      optimizer.step();
    });
    if (me == 0)
      std::printf("%s, %d rank(s), batch %lld per rank, averaged %s: %.2f ms a step, %.0f examples/s\n", name, ranks,
                  static_cast<long long>(batch),
                  how == averaging::after_backward ? "after the backward " : "during the backward", per_step * 1e3,
                  ranks * batch / per_step);
  }
}

void sharded_block(int calls) {
  const int me = dist::rank(), ranks = dist::world_size();
  constexpr std::int64_t tokens = 256, width = 512, hidden = 2048;
  generator gen(3);
  const tensor<float> x = uniform<float>({tokens, width}, -1, 1, gen);
  const tensor<float> w1 = uniform<float>({width, hidden}, -0.05, 0.05, gen);
  const tensor<float> w2 = uniform<float>({hidden, width}, -0.05, 0.05, gen);
  auto block = [](const auto& x, const auto& w1, const auto& w2) { return matmul(gelu(matmul(x, w1)), w2) + x; };
  const dist::strategy whole{};
  auto compiled = jit(block);
  auto by_rows = dist::shard(block, {{ranks, 1}, whole, whole}, {{ranks, 1}});
  auto megatron = dist::shard(block, {whole, {1, ranks}, {ranks, 1}});
  const double one = timed(calls, [&] { compiled(x, w1, w2); });
  const double rows = timed(calls, [&] { by_rows(x, w1, w2); });
  const double cut = timed(calls, [&] { megatron(x, w1, w2); });
  // Forward and backward, every input taking a gradient. Sharded, each
  // rank holds its blocks of the weights (as Megatron-LM's ranks do), so
  // their gradients are blocks too and only x's is all-reduced.
  auto with_gradients = [&](const auto& run, tensor<float> a, tensor<float> b, tensor<float> c) {
    for (tensor<float>* t : {&a, &b, &c}) t->set_requires_grad(true);
    return timed(calls, [&] {
      for (tensor<float>* t : {&a, &b, &c}) t->zero_grad();
      sum(run(a, b, c)).backward();
    });
  };
  const std::int64_t part = hidden / ranks;
  const double one_backward = with_gradients(compiled, x.clone(), w1.clone(), w2.clone());
  const double cut_backward = with_gradients(
      [&](const auto& a, const auto& b, const auto& c) { return megatron.on_blocks(a, b, c); }, x.clone(),
      w1.take(1, me * part, part).contiguous(), w2.take(0, me * part, part).contiguous());
  if (me == 0) {
    std::printf("MLP block %lldx%lld by %lldx%lld by %lldx%lld, %d rank(s)\n", static_cast<long long>(tokens),
                static_cast<long long>(width), static_cast<long long>(width), static_cast<long long>(hidden),
                static_cast<long long>(hidden), static_cast<long long>(width), ranks);
    std::printf("  jit, unsharded on each rank:   %8.3f ms\n", one * 1e3);
    std::printf("  shard by rows:                 %8.3f ms (%.2fx)\n", rows * 1e3, one / rows);
    std::printf("  shard as Megatron-LM (%lld msg): %8.3f ms (%.2fx)\n",
                static_cast<long long>(megatron.statistics().collectives.size()), cut * 1e3, one / cut);
    std::printf("  forward and backward: jit %8.3f ms, shard as Megatron-LM %8.3f ms (%.2fx)\n", one_backward * 1e3,
                cut_backward * 1e3, one_backward / cut_backward);
  }
}

}  // namespace

int main(int argc, char** argv) {
  dist::environment mpi(argc, argv);
  std::string_view which = argc > 1 ? argv[1] : "all_reduce";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (which == "all_reduce") all_reduce_bandwidth();
  else if (which == "mlp") training_throughput<fashion::mlp>("mlp", steps);
  else if (which == "cnn") training_throughput<fashion::cnn>("cnn", steps);
  else if (which == "shard") sharded_block(steps);
  else {
    std::fprintf(stderr, "usage: %s <all_reduce | mlp | cnn | shard> [steps]\n", argv[0]);
    return 2;
  }
}
