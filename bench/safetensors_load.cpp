// Loading a safetensors file of 50 float32 tensors (500 MB by default),
// from the page cache, beside the limit and Python's loaders
// (bench/safetensors_load.py runs both and prints one table):
//   open           safetensors_file(path).all(): the header checked and
//                  every tensor a view of the mapping (zero-copy)
//   open_and_sum   the same, then every tensor summed by tandem::sum (the
//                  pages faulted in)
//   read_and_sum   a loader that copies, by hand: the whole file read into
//                  memory with read(2), then every element summed in one
//                  thread
//
//   ./build/release/bench/bench_safetensors_load [--file=PATH] [--file_mb=500]
// Without --file it writes its own under the temporary folder (and keeps it).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <tandem/io.hpp>
#include <tandem/tandem.hpp>

using namespace tandem;

namespace {

std::string file_path;
std::int64_t file_mb = 500;
constexpr int tensor_count = 50;

void make_file() {
  if (!file_path.empty()) return;
  file_path = (std::filesystem::temp_directory_path() / ("tandem_bench_" + std::to_string(file_mb) + "mb.safetensors")).string();
  if (std::filesystem::exists(file_path)) return;
  io::named_tensors tensors;
  std::int64_t each = file_mb * (std::int64_t{1} << 20) / tensor_count / 4;
  for (int k = 0; k < tensor_count; ++k) tensors.emplace("layer" + std::to_string(k) + ".weight", full<float>({each}, 0.5f + k));
  io::save_safetensors(file_path, tensors);
}

// Every element read in one thread, in 16 independent sums that the
// compiler vectorizes.
float sum_floats(const float* p, std::size_t n) {
  float lanes[16] = {};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] += p[i + static_cast<std::size_t>(j)];
  float s = 0;
  for (; i < n; ++i) s += p[i];
  for (float lane : lanes) s += lane;
  return s;
}

// Every element read by tandem's sum (on its threads, as PyTorch's is).
double sum_of(const io::named_tensors& tensors) {
  double total = 0;
  for (const auto& [name, t] : tensors) total += sum(std::get<tensor<float>>(t)).item();
  return total;
}

void open(benchmark::State& state) {
  for (auto _ : state) {
    io::named_tensors tensors = io::safetensors_file(file_path).all();
    benchmark::DoNotOptimize(tensors.size());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(std::filesystem::file_size(file_path)));
}

void open_and_sum(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(sum_of(io::safetensors_file(file_path).all()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(std::filesystem::file_size(file_path)));
}

void read_and_sum(benchmark::State& state) {
  auto size = static_cast<std::size_t>(std::filesystem::file_size(file_path));
  for (auto _ : state) {
    std::vector<char> bytes(size);
    int fd = ::open(file_path.c_str(), O_RDONLY);
    std::size_t done = 0;
    while (done < size) {
      ssize_t n = ::read(fd, bytes.data() + done, size - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    std::uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    benchmark::DoNotOptimize(sum_floats(reinterpret_cast<const float*>(bytes.data() + 8 + header), (size - 8 - header) / 4));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int k = 1; k < argc; ++k) {
    std::string arg = argv[k];
    if (arg.starts_with("--file=")) file_path = arg.substr(7);
    else if (arg.starts_with("--file_mb=")) file_mb = std::stoll(arg.substr(10));
  }
  make_file();
  benchmark::RegisterBenchmark("open", open)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("open_and_sum", open_and_sum)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("read_and_sum", read_and_sum)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
