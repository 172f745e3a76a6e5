// tandem's main demo: an MLP (784-256-256-10) and a small CNN trained on
// Fashion-MNIST, each once eagerly and once in graph mode from the same
// seed, with progress per epoch, then each run's test accuracy and the
// speedup of graph mode. A model's forward and the loss are written once;
// nn::train_step runs them, with the backward and Adam's update, op by op
// in eager mode and as one static graph call per step in mode::graph
// (forward fused, backward derived at compile time). Both runs of a model
// follow the same loss curve.
//
//   ./tandem.sh demo                       # MLP 8 epochs, CNN 4, per run
//   ./tandem.sh demo --epochs 20           # both models
//   ./tandem.sh demo --model cnn           # one model (mlp or cnn)
//   ./tandem.sh demo --mode graph          # one mode (eager or graph)
//   ./tandem.sh demo --mode capture        # the eager step under capture(): the
//                                          # same code, elementwise ops fused at run time
//   ./tandem.sh demo --data /path/to/dir   # the four IDX files, raw or .gz
//   ./tandem.sh demo --quick               # what ctest runs: 1 epoch on 3000 images
//   ./tandem.sh demo --device cuda         # on the GPU (a build with CUDA)
//   ./tandem.sh demo --precision bf16      # products of bfloat16-rounded operands
//                                          # summed in float (autocast), or fp16;
//                                          # fp32 by default
//   ./tandem.sh demo --profile trace.json  # a profile of steps 2-6 of each run:
//                                          # a Chrome trace and a summary table
//   mpirun -np 2 ./build/release/examples/demo --distributed
//                                          # data-parallel over the ranks (a
//                                          # build that found MPI)
#include <tandem/io.hpp>
#include <tandem/tandem.hpp>
#if defined(TANDEM_DEMO_DISTRIBUTED)
#include <tandem/dist.hpp>
#include <tandem/dist/data_parallel.hpp>
#endif

#include "fashion_models.hpp"
#include "run_mode.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

using namespace tandem;
using fashion::cnn;
using fashion::mlp;

struct dataset {
  tensor<float> images;  // [N, 784] in [0, 1]
  tensor<std::int64_t> labels;
};

dataset load(const std::string& dir, const std::string& prefix, std::int64_t limit) {
  auto file = [&](const std::string& name) {
    std::filesystem::path plain = std::filesystem::path(dir) / name;
    return std::filesystem::exists(plain) ? plain.string() : plain.string() + ".gz";
  };
  tensor<float> images = data::read_idx_images(file(prefix + "-images-idx3-ubyte"));
  tensor<std::int64_t> labels = data::read_idx_labels(file(prefix + "-labels-idx1-ubyte"));
  std::int64_t n = std::min(limit, images.shape(0));
  return {images.slice(0, 0, n).reshape({n, 784}), labels.slice(0, 0, n).contiguous()};
}

// In batches, so that the CNN's im2col buffers stay small.
template <class Model>
double accuracy(const Model& model, const dataset& s, device where) {
  no_grad inference;
  double correct = 0;
  for (const auto& index : data::batches(s.images.shape(0), 1000, nullptr)) {
    tensor<float> logits = model(index_select(s.images, 0, index).to(where)).cpu();
    correct += sum((argmax(logits, 1) == index_select(s.labels, 0, index)).template astype<double>()).item();
  }
  return correct / static_cast<double>(s.images.shape(0));
}

struct run_result {
  std::string model;
  std::string mode;
  std::vector<double> losses;  // mean training loss per epoch
  double test_accuracy = 0;
  double steps_per_second = 0;
};

// This process's place in a data-parallel job: rank 0 of 1 without one.
struct job {
  int rank = 0, ranks = 1;
};

constexpr std::int64_t batch_size = 128;
// With --profile, the steps recorded in each run's first epoch: after the
// first, which traces and plans.
constexpr std::int64_t first_profiled_step = 2, last_profiled_step = 6;


template <class Model>
run_result train(const std::string& name, run_mode m, const dataset& train_set, const dataset& test_set, int epochs,
                 const job& place, device where, profiler* recording) {
  set_mode(m == run_mode::graph ? mode::graph : mode::eager);
  // The same seed on every rank: the same initial model and epoch order.
  generator gen(7);
  Model model(gen);
  model.to(where);
  nn::adam optimizer(model.named_parameters(), {.lr = 1e-3});
  nn::cosine_schedule schedule(optimizer, epochs, 1e-4);
  // One training step: eagerly, zero_grad, forward, backward, update; in
  // mode::graph, forward, backward and update as one static graph call.
  // Over several ranks the gradients are averaged before the update (an
  // eager backward starts the averaging of the last layers' buckets while
  // it goes on through the first layers').
  nn::gradient_hook over_ranks;
#if defined(TANDEM_DEMO_DISTRIBUTED)
  std::optional<dist::data_parallel> replicas;
  if (place.ranks > 1) over_ranks = replicas.emplace(model).gradient_hook();
#endif
  nn::train_step step(fashion::classification_loss<Model>{&model}, optimizer, over_ranks);
  // The eager step unchanged, its elementwise ops fused at run time.
  auto captured_step = capture(
      [&step](const tensor<float>& images, const tensor<std::int64_t>& labels) { return step(images, labels); });
  run_result result{name, mode_name(m), {}, 0, 0};
  std::int64_t steps = 0;
  double seconds = 0;
  const std::int64_t examples = train_set.images.shape(0);
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    auto start = std::chrono::steady_clock::now();
    double total = 0;
    std::int64_t batches = 0;
    // Over several ranks each takes its share of every batch of 128.
    auto epoch_batches = place.ranks == 1
                             ? data::batches(examples, batch_size, &gen)
                             : data::distributed_batches(examples, batch_size / place.ranks, &gen, place.rank, place.ranks);
    for (const auto& index : epoch_batches) {
      const bool profiled = recording && epoch == 1 && batches + 1 >= first_profiled_step &&
                            batches + 1 <= last_profiled_step;
      if (profiled) recording->resume();
      {
        std::optional<profile_scope> scope;
        if (profiled) scope.emplace(name + " " + result.mode + " step " + std::to_string(batches + 1));
        tensor<float> images = index_select(train_set.images, 0, index).to(where);
        tensor<std::int64_t> labels = index_select(train_set.labels, 0, index).to(where);
        total += (m == run_mode::capture ? captured_step(images, labels) : step(images, labels)).item();
      }
      if (profiled) recording->pause();
      ++batches;
    }
    schedule.step();
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    steps += batches;
    seconds += elapsed;
#if defined(TANDEM_DEMO_DISTRIBUTED)
    // The epoch's loss over every rank's examples.
    if (place.ranks > 1) total = dist::all_reduce(full<double>({}, total), dist::reduce_op::mean).wait().item();
#endif
    result.losses.push_back(total / static_cast<double>(batches));
    // Every rank holds the same model: rank 0 speaks for the job.
    if (place.rank == 0)
      std::cout << "  " << name << " " << result.mode << " epoch " << epoch << "/" << epochs << "  loss " << std::fixed
                << std::setprecision(4) << result.losses.back() << "  test accuracy " << accuracy(model, test_set, where)
                << "  " << std::setprecision(0) << static_cast<double>(batches) / elapsed << " steps/s" << std::endl;
  }
  if (place.rank == 0) result.test_accuracy = accuracy(model, test_set, where);
  result.steps_per_second = static_cast<double>(steps) / seconds;
  set_mode(mode::eager);
  return result;
}

int main(int argc, char** argv) {
  int mlp_epochs = 8, cnn_epochs = 4;
  std::string which = "both";
  std::vector<run_mode> modes{run_mode::eager, run_mode::graph};
  std::int64_t limit = 60000;
  std::string dir = "/usr/share/datasets/fashion-mnist";
  bool distributed = false;
  device where = device::cpu;
  std::string profile_file;
  dtype products = dtype::float32;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") mlp_epochs = cnn_epochs = 1, limit = 3000;
    else if (arg == "--distributed") distributed = true;
    else if (arg == "--epochs" && i + 1 < argc) mlp_epochs = cnn_epochs = std::atoi(argv[++i]);
    else if (arg == "--data" && i + 1 < argc) dir = argv[++i];
    else if (arg == "--model" && i + 1 < argc && (std::string(argv[i + 1]) == "mlp" || std::string(argv[i + 1]) == "cnn"))
      which = argv[++i];
    else if (arg == "--mode" && i + 1 < argc && parse_mode(argv[i + 1]))
      modes = {*parse_mode(argv[++i])};
    else if (arg == "--device" && i + 1 < argc && (std::string(argv[i + 1]) == "cpu" || std::string(argv[i + 1]) == "cuda"))
      where = std::string(argv[++i]) == "cuda" ? device::cuda(0) : device::cpu;
    else if (arg == "--profile" && i + 1 < argc)
      profile_file = argv[++i];
    else if (arg == "--precision" && i + 1 < argc && parse_precision(argv[i + 1]))
      products = *parse_precision(argv[++i]);
    else {
      std::cerr << "usage: demo [--quick] [--epochs N] [--model mlp|cnn] [--mode eager|graph|capture] [--data DIR] "
                   "[--distributed] [--device cpu|cuda] [--precision fp32|bf16|fp16] [--profile TRACE.json]\n";
      return 2;
    }
  }
  if (mlp_epochs < 1) {
    std::cerr << "demo: --epochs needs a positive number\n";
    return 2;
  }

  if (where.is_cuda()) {
    if (!cuda_is_compiled()) {
      std::cerr << "demo: --device cuda needs a build with CUDA, and this demo was built without it (./tandem.sh demo "
                   "--device cuda builds one where nvcc is found)\n";
      return 2;
    }
    if (!cuda_is_available()) {
      std::cerr << "demo: --device cuda: this build has CUDA, but no CUDA device is present\n";
      return 2;
    }
    if (distributed) {
      std::cerr << "demo: --device cuda trains on one GPU; --distributed is for the host\n";
      return 2;
    }
    if (products != dtype::float32) {
      std::cerr << "demo: --precision bf16 and fp16 round the products' operands on the host; on the GPU products "
                   "run in float\n";
      return 2;
    }
    // capture() fuses host kernels: on the GPU both models train eagerly
    // and in graph mode (whose static graph runs op by op on the GPU).
    std::erase(modes, run_mode::capture);
    if (modes.empty()) {
      std::cerr << "demo: capture() runs on the host; on the GPU choose --mode eager or graph\n";
      return 2;
    }
  }

  job place;
#if defined(TANDEM_DEMO_DISTRIBUTED)
  std::optional<dist::environment> mpi;
  if (distributed) {
    mpi.emplace(argc, argv);
    place = {dist::rank(), dist::world_size()};
  }
#else
  if (distributed) {
    std::cerr << "demo: --distributed needs a build that found MPI (install libopenmpi-dev and openmpi-bin, then "
                 "configure again)\n";
    return 2;
  }
#endif

  dataset train_set, test_set;
  try {
    train_set = load(dir, "train", limit);
    test_set = load(dir, "t10k", 10000);
  } catch (const io_error& e) {
    std::cerr << "demo: " << e.what() << "\n(install the Debian package dataset-fashion-mnist, or point --data at "
              << "a folder with the four Fashion-MNIST IDX files)\n";
    return 1;
  }
  if (place.rank == 0) {
    std::cout << "tandem demo: Fashion-MNIST from " << dir << ", " << train_set.images.shape(0) << " training and "
              << test_set.images.shape(0) << " test images, " << num_threads() << " threads\n"
              << "an MLP 784-256-256-10 and a CNN (two 3x3 convolutions with batch norm), Adam with a cosine schedule,\n";
    if (products != dtype::float32)
      std::cout << "matrix products and convolutions of " << dtype_name(products)
                << "-rounded operands summed in float (autocast), everything else in float\n";
    if (place.ranks == 1)
      std::cout << "batch 128, each trained eagerly and in graph mode (one static graph per step) from the same seed\n";
    else
      std::cout << "batch 128 data-parallel over " << place.ranks << " ranks (" << batch_size / place.ranks
                << " examples each, gradients averaged over MPI), eagerly and in graph mode from the same seed\n";
  }

  std::optional<profiler> recording;
  if (!profile_file.empty()) {
    recording.emplace();
    recording->start();
    recording->pause();
  }
  profiler* profiled = recording ? &*recording : nullptr;
  std::vector<run_result> runs;
  const autocast precision(products);
  for (run_mode m : modes)
    if (which != "cnn") runs.push_back(train<mlp>("mlp", m, train_set, test_set, mlp_epochs, place, where, profiled));
  for (run_mode m : modes)
    if (which != "mlp") runs.push_back(train<cnn>("cnn", m, train_set, test_set, cnn_epochs, place, where, profiled));
  if (place.rank != 0) return 0;
  if (recording) {
    profile_trace trace = recording->stop();
    trace.save(profile_file);
    std::cout << "\nprofile of steps " << first_profiled_step << "-" << last_profiled_step << " of each run ("
              << profile_file << ", for Perfetto or chrome://tracing), by total time:\n"
              << trace.summary({.rows = 20});
  }

  std::cout << "\nmodel  mode   test accuracy  steps/s\n";
  for (const auto& r : runs)
    std::cout << r.model << "    " << r.mode << "  " << std::fixed << std::setprecision(4) << r.test_accuracy
              << "         " << std::setprecision(0) << r.steps_per_second << "\n";
  double worst = 0;
  for (std::size_t k = 0; modes.size() == 2 && k < runs.size(); k += 2) {
    double differs = 0;
    for (std::size_t e = 0; e < runs[k].losses.size(); ++e)
      differs = std::max(differs, std::abs(runs[k].losses[e] - runs[k + 1].losses[e]) / std::abs(runs[k].losses[e]));
    worst = std::max(worst, differs);
    std::cout << runs[k].model << ": graph over eager " << std::fixed << std::setprecision(2)
              << runs[k + 1].steps_per_second / runs[k].steps_per_second << "x; loss curves agree within "
              << std::scientific << std::setprecision(1) << differs << " (relative)\n";
  }
  // Graph mode fuses batch norm's arithmetic, so its sums run in another
  // order than eager mode's: the two runs differ by rounding, which
  // training amplifies over thousands of steps (2e-3 to 4e-3 after four
  // CNN epochs; 1e-7 after the --quick run). A real divergence is far
  // larger.
  return worst < 1e-2 ? 0 : 1;
}
