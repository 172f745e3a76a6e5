#pragma once
// The demo's two Fashion-MNIST classifiers, shared with bench/training.cpp
// so that the benchmark times the models the demo trains.
#include <tandem/tandem.hpp>

namespace fashion {

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

// A small CNN: two 3x3 convolutions, each with batch norm, relu and 2x2
// max pooling, then a hidden layer of 128 over the 32 x 7 x 7 features.
struct cnn : nn::module<cnn> {
  nn::conv2d<float> conv1, conv2;
  nn::batch_norm2d<float> norm1{16}, norm2{32};
  nn::max_pool2d pool;
  nn::linear<float> hidden, out;
  explicit cnn(generator& gen)
      : conv1(1, 16, {3, 3}, gen, {.padding = {1, 1}}, false), conv2(16, 32, {3, 3}, gen, {.padding = {1, 1}}, false),
        hidden(32 * 7 * 7, 128, gen), out(128, 10, gen) {
    register_module("conv1", conv1);
    register_module("norm1", norm1);
    register_module("conv2", conv2);
    register_module("norm2", norm2);
    register_module("hidden", hidden);
    register_module("out", out);
  }
  auto forward(const auto& images) const {
    auto x = images.reshape({-1, 1, 28, 28});
    auto features = pool(relu(norm2(conv2(pool(relu(norm1(conv1(x))))))));
    return out(relu(hidden(flatten(features, 1))));
  }
};

// The training loss: cross-entropy of a classifier's logits. A function
// object with a name, so that the demo's unit compiled by nvcc can name
// the training step's graph (static_graph<classification_loss<Model>>) and
// compile its kernels for the GPU (examples/cuda_kernels.cu).
template <class Model>
struct classification_loss {
  const Model* model;
  auto operator()(const auto& images, const auto& labels) const { return cross_entropy((*model)(images), labels); }
};

}  // namespace fashion
