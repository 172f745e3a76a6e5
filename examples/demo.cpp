// tandem's main demo: an MLP (784-256-256-10) trained on Fashion-MNIST, once
// eagerly and once in graph mode from the same seed, with progress per
// epoch, then each run's test accuracy and the speedup of graph mode. The
// model's forward and the loss are written once; mode::graph runs them as
// one static graph per step (forward fused, backward derived at compile
// time), eager mode op by op. Both runs follow the same loss curve.
//
//   ./tandem.sh demo                       # 8 epochs per run
//   ./tandem.sh demo --epochs 20
//   ./tandem.sh demo --data /path/to/dir   # the four IDX files, raw or .gz
//   ./tandem.sh demo --quick               # what ctest runs: 1 epoch on 6000 images
#include <tandem/tandem.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

using namespace tandem;

// The classifier: two hidden layers with relu.
struct mlp : nn::module<mlp> {
  nn::linear<float> hidden1, hidden2, out;
  explicit mlp(generator& gen) : hidden1(784, 256, gen), hidden2(256, 256, gen), out(256, 10, gen) {
    register_module("hidden1", hidden1);
    register_module("hidden2", hidden2);
    register_module("out", out);
  }
  auto forward(const auto& images) const { return out(relu(hidden2(relu(hidden1(images))))); }
};

// The loss of a batch, as a module of its own so that in graph mode the
// forward and the loss are one static graph.
struct classification_loss : nn::module<classification_loss> {
  const mlp* model;
  explicit classification_loss(const mlp& m) : model(&m) {}
  auto forward(const auto& images, const auto& labels) const { return cross_entropy((*model)(images), labels); }
};

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

double accuracy(const mlp& model, const dataset& s) {
  no_grad inference;
  return mean((argmax(model(s.images), 1) == s.labels).astype<double>()).item();
}

struct run_result {
  std::string mode;
  std::vector<double> losses;  // mean training loss per epoch
  double test_accuracy = 0;
  double steps_per_second = 0;
};

run_result train(mode m, const dataset& train_set, const dataset& test_set, int epochs) {
  set_mode(m);
  generator gen(7);
  mlp model(gen);
  classification_loss loss_of(model);
  nn::adam optimizer(model.named_parameters(), {.lr = 1e-3});
  nn::cosine_schedule schedule(optimizer, epochs, 1e-4);
  run_result result{m == mode::graph ? "graph" : "eager", {}, 0, 0};
  std::int64_t steps = 0;
  double seconds = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    auto start = std::chrono::steady_clock::now();
    double total = 0;
    std::int64_t batches = 0;
    for (const auto& index : data::batches(train_set.images.shape(0), 128, &gen)) {
      tensor<float> loss = loss_of(index_select(train_set.images, 0, index), index_select(train_set.labels, 0, index));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      total += loss.item();
      ++batches;
    }
    schedule.step();
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    steps += batches;
    seconds += elapsed;
    result.losses.push_back(total / static_cast<double>(batches));
    std::cout << "  " << result.mode << " epoch " << epoch << "/" << epochs << "  loss " << std::fixed
              << std::setprecision(4) << result.losses.back() << "  test accuracy " << accuracy(model, test_set)
              << "  " << std::setprecision(0) << static_cast<double>(batches) / elapsed << " steps/s" << std::endl;
  }
  result.test_accuracy = accuracy(model, test_set);
  result.steps_per_second = static_cast<double>(steps) / seconds;
  set_mode(mode::eager);
  return result;
}

int main(int argc, char** argv) {
  int epochs = 8;
  std::int64_t limit = 60000;
  std::string dir = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") epochs = 1, limit = 6000;
    else if (arg == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (arg == "--data" && i + 1 < argc) dir = argv[++i];
    else {
      std::cerr << "usage: demo [--quick] [--epochs N] [--data DIR]\n";
      return 2;
    }
  }
  if (epochs < 1) {
    std::cerr << "demo: --epochs needs a positive number\n";
    return 2;
  }

  dataset train_set, test_set;
  try {
    train_set = load(dir, "train", limit);
    test_set = load(dir, "t10k", 10000);
  } catch (const io_error& e) {
    std::cerr << "demo: " << e.what() << "\n(install the Debian package dataset-fashion-mnist, or point --data at "
              << "a folder with the four Fashion-MNIST IDX files)\n";
    return 1;
  }
  std::cout << "tandem demo: Fashion-MNIST from " << dir << ", " << train_set.images.shape(0) << " training and "
            << test_set.images.shape(0) << " test images, " << num_threads() << " threads\n"
            << "an MLP 784-256-256-10 (Adam, cosine schedule, batch 128), trained eagerly and in graph mode from the same seed\n";

  std::vector<run_result> runs{train(mode::eager, train_set, test_set, epochs),
                               train(mode::graph, train_set, test_set, epochs)};

  double worst = 0;
  for (std::size_t e = 0; e < runs[0].losses.size(); ++e)
    worst = std::max(worst, std::abs(runs[0].losses[e] - runs[1].losses[e]) / std::abs(runs[0].losses[e]));
  std::cout << "\nmodel  mode   test accuracy  steps/s\n";
  for (const auto& r : runs)
    std::cout << "mlp    " << r.mode << "  " << std::setprecision(4) << r.test_accuracy << "         "
              << std::setprecision(0) << r.steps_per_second << "\n";
  std::cout << std::setprecision(2) << "graph over eager: " << runs[1].steps_per_second / runs[0].steps_per_second
            << "x; loss curves agree within " << std::scientific << std::setprecision(1) << worst << " (relative)\n";
  return worst < 1e-3 ? 0 : 1;
}
