// tandem's demo until the Fashion-MNIST trainer arrives: a small MLP
// (2-16-3) on three Gaussian clouds, trained in eager mode with autodiff.
// Every step is ordinary eager tandem code: random data, matmul, relu,
// cross-entropy, backward() into the parameters, and SGD updates under
// no_grad.
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
  std::cout << "tandem demo: a 2-16-3 MLP on 3 Gaussian clouds, " << train.points.shape(0)
            << " training points, " << num_threads() << " threads\n";
  std::cout << "first points:\n" << train.points.slice(0, 0, 3) << "\n";

  std::vector<parameter<float>> params{parameter<float>(normal({2, 16}, 0, 0.5, gen), "hidden.weight"),
                                      parameter<float>(zeros({16}), "hidden.bias"),
                                      parameter<float>(normal({16, 3}, 0, 0.25, gen), "out.weight"),
                                      parameter<float>(zeros({3}), "out.bias")};
  auto model = [&](const tensor<float>& points) {
    return matmul(relu(matmul(points, params[0]) + params[1]), params[2]) + params[3];
  };
  const float learning_rate = 0.2f;

  auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    tensor<float> logits = model(train.points);
    tensor<float> loss = cross_entropy(logits, train.labels);
    loss.backward();
    {
      no_grad update;
      for (auto& p : params) {
        p -= p.grad() * learning_rate;
        p.zero_grad();
      }
    }
    if (epoch == 1 || epoch % std::max(1, epochs / 10) == 0)
      std::cout << "epoch " << std::setw(4) << epoch << "  loss " << std::fixed << std::setprecision(4) << loss.item()
                << "  train accuracy " << std::setprecision(3) << accuracy(logits, train.labels) << "\n";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  float test_accuracy = [&] {
    no_grad evaluation;
    return accuracy(model(test.points), test.labels);
  }();
  std::cout << "output layer:\n" << params[2].slice(0, 0, 3) << "\n...\nbias: " << params[3] << "\n";
  std::cout << "test accuracy " << std::setprecision(3) << test_accuracy << " after " << epochs << " epochs in "
            << std::setprecision(1) << seconds * 1e3 << " ms\n";
  return test_accuracy > 0.8f ? 0 : 1;
}
