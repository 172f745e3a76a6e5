// The GPU suite on a GPU: the cases of op_cases.hpp and training_cases.hpp
// with the CUDA kernels, and the CUDA runtime's own (its caching
// allocator). Built wherever nvcc is; without a GPU the program reports
// itself skipped (exit 77) with the reason.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <tandem/cuda.hpp>

#include <cstdio>

namespace {

template <class Graph, class... A>
void compile_graph(const Graph& graph, const A&... a) {
  tandem::cuda::compile(graph, a...);
}

}  // namespace

#include "cuda/op_cases.hpp"
#include "cuda/training_cases.hpp"

TEST_CASE("the caching allocator reuses freed blocks and counts") {
  synchronize(gpu);
  release_cached_memory(gpu);
  device_memory_stats before = memory_stats(gpu);
  CHECK(before.cached_bytes == 0);
  { tensor<float> a(shape{1 << 20}, gpu); }
  device_memory_stats freed = memory_stats(gpu);
  CHECK(freed.live_blocks == before.live_blocks);
  CHECK(freed.cached_bytes >= 4 << 20);
  CHECK(freed.device_mallocs == before.device_mallocs + 1);
  { tensor<float> b(shape{1 << 20}, gpu); }
  CHECK(memory_stats(gpu).device_mallocs == freed.device_mallocs);
  CHECK(memory_stats(gpu).allocations == freed.allocations + 1);
  release_cached_memory(gpu);
  CHECK(memory_stats(gpu).cached_bytes == 0);
}

int main(int argc, char** argv) {
  if (!cuda_is_available()) {
    std::puts("skipped: no CUDA device is present (the GPU suite compiled and linked only)");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
