// tandem's demo until the Fashion-MNIST trainer arrives: softmax regression
// on three Gaussian clouds, trained in eager mode with the gradient written
// out by hand (autodiff is the next milestone). Every step is ordinary eager
// tandem code: random data, matmul, softmax, cross-entropy, reductions and
// in-place updates through views.
//
//   ./tandem.sh demo              # 200 epochs
//   ./tandem.sh demo --epochs 50
//   ./tandem.sh demo --quick      # what ctest runs
#include <tandem/tandem.hpp>

#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>

using namespace tandem;

struct dataset {
  tensor<float> points;          // [N, 2]
  tensor<std::int64_t> labels;   // [N]
};

// `per_class` points around each of three centres.
dataset make_clouds(std::int64_t per_class, generator& gen) {
  tensor<float> centres{{0, 2.5}, {-2.2, -1.3}, {2.2, -1.3}};
  std::vector<tensor<float>> clouds;
  std::vector<tensor<std::int64_t>> labels;
  for (std::int64_t c = 0; c < 3; ++c) {
    clouds.push_back(normal({per_class, 2}, 0, 1.1, gen) + centres[c]);
    labels.push_back(full<std::int64_t>({per_class}, c));
  }
  return {concat(clouds), concat(labels)};
}

float accuracy(const tensor<float>& logits, const tensor<std::int64_t>& labels) {
  return mean(argmax(logits, 1) == labels).item();
}

int main(int argc, char** argv) {
  int epochs = 200;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") epochs = 20;
    else if (arg == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else {
      std::cerr << "usage: demo [--quick] [--epochs N]\n";
      return 2;
    }
  }

  generator gen(2024);
  dataset train = make_clouds(2000, gen), test = make_clouds(500, gen);
  std::cout << "tandem demo: softmax regression on 3 Gaussian clouds, " << train.points.shape(0)
            << " training points, " << num_threads() << " threads\n";
  std::cout << "first points:\n" << train.points.slice(0, 0, 3) << "\n";

  tensor<float> weight = normal({2, 3}, 0, 0.01, gen);
  tensor<float> bias = zeros({3});
  const float learning_rate = 0.5f;
  tensor<float> targets = one_hot<float>(train.labels, 3);
  const float n = static_cast<float>(train.points.shape(0));

  auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    tensor<float> logits = matmul(train.points, weight) + bias;
    float loss = cross_entropy(logits, train.labels).item();
    // d loss / d logits = (softmax - one_hot) / N
    tensor<float> grad_logits = (softmax(logits, 1) - targets) / n;
    weight -= matmul(train.points.transpose(0, 1), grad_logits) * learning_rate;
    bias -= sum(grad_logits, 0) * learning_rate;
    if (epoch == 1 || epoch % std::max(1, epochs / 10) == 0)
      std::cout << "epoch " << std::setw(4) << epoch << "  loss " << std::fixed << std::setprecision(4) << loss
                << "  train accuracy " << std::setprecision(3) << accuracy(logits, train.labels) << "\n";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  float test_accuracy = accuracy(matmul(test.points, weight) + bias, test.labels);
  std::cout << "weights:\n" << weight << "\nbias: " << bias << "\n";
  std::cout << "test accuracy " << std::setprecision(3) << test_accuracy << " after " << epochs << " epochs in "
            << std::setprecision(1) << seconds * 1e3 << " ms\n";
  return test_accuracy > 0.8f ? 0 : 1;
}
