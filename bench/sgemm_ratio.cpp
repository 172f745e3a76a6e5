// SGEMM beside OpenBLAS as a ratio: on this project's shared machines the
// clock moves by a quarter between runs, so Google Benchmark's runs of one
// product after the other give ratios that swing more than the differences
// being measured. This program alternates the two, 15 rounds of 80 ms each,
// and prints per shape and thread count the medians of each one's GFLOP/s
// and of the per-round ratio. Not a Google Benchmark; built where
// libopenblas-dev is installed. Run as
//
//   ./build/release/bench/bench_sgemm_ratio [rounds]                          # AVX-512 where the CPU has it
//   TANDEM_ISA=avx2 OPENBLAS_CORETYPE=Haswell ./build/release/bench/bench_sgemm_ratio  # both on AVX2
//
// Shapes: the static-graph benchmarks' four, the MLP's hidden layer's backward G W^T (B a
// transposed view) and its last layer's weight gradient H^T G (A a
// transposed view, 10 columns).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cblas.h>

#include <tandem/tandem.hpp>

using namespace tandem;

namespace {

// With two threads each round starts after 0.2 s of sleep: the other
// library's threads (an idle OpenBLAS worker spins for about 2^28 cycles,
// tandem's pool briefly) have stopped competing for the cores by then. With
// one thread nothing spins, and the sleep only added noise: on a shared
// Zen 4, rounds that start from idle put the same build at 0.92-1.03 of
// OpenBLAS where back-to-back rounds gave 0.97-0.99.
template <class F>
double gflops(F run, double flops, int threads) {
  if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int iterations = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    run();
    ++iterations;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < 0.08);
  return flops * iterations / elapsed / 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  // The number of rounds (15 unless given: `tandem.sh bench`'s smoke run gives 1).
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  std::printf("kernels: %s\n", std::string(to_string(kernel_instruction_set())).c_str());
  struct shape_case {
    std::int64_t m, k, n;
    bool b_transposed, a_transposed;
  };
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    openblas_set_num_threads(threads);
    for (const shape_case s :
         {shape_case{1024, 1024, 1024, false, false}, shape_case{128, 784, 256, false, false},
          shape_case{128, 256, 256, false, false}, shape_case{128, 256, 10, false, false},
          shape_case{128, 256, 256, true, false}, shape_case{256, 128, 10, false, true}}) {
      generator gen(3);
      const tensor<float> a_stored = s.a_transposed ? uniform({s.k, s.m}, -1, 1, gen) : uniform({s.m, s.k}, -1, 1, gen);
      const tensor<float> a = s.a_transposed ? a_stored.transpose(0, 1) : a_stored;
      const tensor<float> b_stored = s.b_transposed ? uniform({s.n, s.k}, -1, 1, gen) : uniform({s.k, s.n}, -1, 1, gen);
      const tensor<float> b = s.b_transposed ? b_stored.transpose(0, 1) : b_stored;
      tensor<float> c = zeros({s.m, s.n});
      const double flops = 2.0 * static_cast<double>(s.m * s.k * s.n);
      std::vector<double> ours, theirs, ratio;
      for (int round = 0; round < rounds; ++round) {
        ours.push_back(gflops([&] { c = matmul(a, b); }, flops, threads));
        theirs.push_back(gflops(
            [&] {
              cblas_sgemm(CblasRowMajor, s.a_transposed ? CblasTrans : CblasNoTrans,
                          s.b_transposed ? CblasTrans : CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
                          static_cast<int>(s.k), 1.0f, a_stored.data(), static_cast<int>(s.a_transposed ? s.m : s.k),
                          b_stored.data(), static_cast<int>(s.b_transposed ? s.k : s.n), 0.0f, c.data(),
                          static_cast<int>(s.n));
            },
            flops, threads));
        ratio.push_back(ours.back() / theirs.back());
      }
      std::printf("%lldx%lldx%lld%s%s, %d thread%s: tandem %.1f GFLOP/s, OpenBLAS %.1f GFLOP/s, ratio %.3f\n",
                  static_cast<long long>(s.m), static_cast<long long>(s.k), static_cast<long long>(s.n),
                  s.b_transposed ? " (B transposed)" : "", s.a_transposed ? " (A transposed)" : "", threads,
                  threads == 1 ? "" : "s", median(ours), median(theirs), median(ratio));
    }
  }
}
