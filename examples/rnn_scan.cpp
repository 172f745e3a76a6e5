// docs/control_flow.md: an RNN written with scan, trained as one static
// graph (forward over the whole sequence, its backward, the update), beside
// the same model unrolled eagerly, op by op. Hidden 256, 100 steps, batch
// 32; the task: is the sum of the first input feature over the sequence
// positive? Each step prints both losses and the largest difference between
// the two routes' gradients; the program fails if they disagree.
//
//   ./rnn_scan [steps]      (3 training steps by default)
#include <tandem/tandem.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tandem;

namespace {

constexpr std::int64_t features = 8, hidden_size = 256, classes = 2, sequence = 100, batch = 32;

struct rnn : nn::module<rnn> {
  tensor<float> input_weight, hidden_weight, bias;
  nn::linear<float> readout;

  explicit rnn(generator& gen)
      : input_weight(shape{features, hidden_size}),
        hidden_weight(shape{hidden_size, hidden_size}),
        bias(zeros<float>({hidden_size})),
        readout(hidden_size, classes, gen) {
    nn::init::fan_in_uniform_(input_weight, features, gen);
    nn::init::fan_in_uniform_(hidden_weight, hidden_size, gen);
    register_parameter("input_weight", input_weight);
    register_parameter("hidden_weight", hidden_weight);
    register_parameter("bias", bias);
    register_module("readout", readout);
  }

  // The cell over the whole sequence, as one scan: xs is [steps, batch, features].
  auto forward(const auto& h0, const auto& xs) const {
    auto [h, hs] = scan(
        [this](const auto& state, const auto& x) {
          auto next = tanh(matmul(x, input_weight) + matmul(state, hidden_weight) + bias);
          return std::tuple{next, next * 1.0f};
        },
        h0, xs);
    (void)hs;
    return readout(h);
  }

  // The same model as a C++ loop over eager ops.
  tensor<float> unrolled(const tensor<float>& h0, const tensor<float>& xs) const {
    tensor<float> h = h0;
    for (std::int64_t t = 0; t < xs.shape(0); ++t)
      h = tanh(matmul(xs.take(0, t, 1).squeeze(0), input_weight) + matmul(h, hidden_weight) + bias);
    return readout(h);
  }
};

// The gradients of every parameter, by one route.
template <class Loss>
std::vector<tensor<float>> gradients_of(rnn& model, const Loss& loss) {
  model.zero_grad();
  loss().backward();
  std::vector<tensor<float>> out;
  for (const auto& p : model.named_parameters()) out.push_back(std::get<tensor<float>>(p.value).grad().clone());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 3;
  generator gen(7);
  rnn model(gen);
  tensor<float> xs = normal<float>({sequence, batch, features}, 0, 1, gen);
  tensor<std::int64_t> labels = (sum(xs.take(2, 0, 1).squeeze(2), 0) > 0.0f).astype<std::int64_t>();
  tensor<float> h0 = zeros<float>({batch, hidden_size});

  auto scanned = [&](const auto& h, const auto& x, const auto& y) { return nn::cross_entropy(model(h, x), y); };
  auto graph = jit(scanned);
  nn::sgd optimizer(model.named_parameters(), {.lr = 0.05});

  int failures = 0;
  for (int step = 0; step < steps; ++step) {
    auto static_gradients = gradients_of(model, [&] { return graph(h0, xs, labels); });
    auto eager_gradients =
        gradients_of(model, [&] { return nn::cross_entropy(model.unrolled(h0, xs), labels); });
    double worst = 0;
    for (std::size_t k = 0; k < static_gradients.size(); ++k) {
      tensor<float> difference = abs(static_gradients[k] - eager_gradients[k]);
      double scale = 1 + max(abs(eager_gradients[k])).item();
      worst = std::max(worst, max(difference).item() / scale);
    }
    float static_loss = graph(h0, xs, labels).item();
    float eager_loss = nn::cross_entropy(model.unrolled(h0, xs), labels).item();
    std::printf("step %d: loss %.6f (static) %.6f (eager), largest gradient difference %.2e\n", step, static_loss,
                eager_loss, worst);
    if (worst > 1e-4 || std::abs(static_loss - eager_loss) > 1e-5f) ++failures;
    // Train on the static graph's gradients (left in .grad by the last call).
    gradients_of(model, [&] { return graph(h0, xs, labels); });
    optimizer.step();
  }
  if (failures) std::printf("the scanned and unrolled models disagree\n");
  return failures ? 1 : 0;
}
