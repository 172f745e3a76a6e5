#pragma once
// The GPU suite's cases for training: modules and optimizers on the device,
// autograd through device tensors, capture(), dropout, and static graphs
// compiled for the GPU (fused forward and backward, summations, into(),
// training steps), each against the host (device_testing.hpp says who runs
// them).

#include "cuda/device_testing.hpp"

namespace {

// Whether a static graph planned a run on the GPU.
bool planned_on_gpu(const plan_statistics& statistics) {
  for (const std::string& s : statistics.signatures)
    if (s.find("@cuda:0") != std::string::npos) return true;
  return false;
}

// Convolution, batch norm, relu, pooling and a linear layer: the CNN's ops.
struct small_cnn : nn::module<small_cnn> {
  nn::conv2d<float> conv;
  nn::batch_norm2d<float> norm{4};
  nn::max_pool2d pool;
  nn::linear<float> out;
  explicit small_cnn(generator& gen) : conv(1, 4, {3, 3}, gen, {.padding = {1, 1}}, false), out(4 * 4 * 4, 3, gen) {
    register_module("conv", conv);
    register_module("norm", norm);
    register_module("out", out);
  }
  auto forward(const auto& images) const {
    return out(flatten(pool(relu(norm(conv(images)))), 1));
  }
};

}  // namespace

TEST_CASE("a CNN moved to the GPU trains as it does on the host") {
  generator host_gen(35), gpu_gen(35);
  small_cnn host_model(host_gen), gpu_model(gpu_gen);
  gpu_model.to(gpu);
  tensor<float> images = test::random_tensor<float>({5, 1, 8, 8}, -1, 1, 36);
  tensor<std::int64_t> labels{0, 2, 1, 1, 0};
  nn::adam host_adam(host_model.named_parameters(), {.lr = 0.01});
  nn::adam gpu_adam(gpu_model.named_parameters(), {.lr = 0.01});
  for (int step = 0; step < 3; ++step) {
    host_model.zero_grad();
    gpu_model.zero_grad();
    cross_entropy(host_model(images), labels).backward();
    cross_entropy(gpu_model(images.cuda()), labels.cuda()).backward();
    host_adam.step();
    gpu_adam.step();
  }
  test::check_values(gpu_model.conv.weight.cpu(), host_model.conv.weight, "conv weights after 3 Adam steps", 1e-4, 1e-5);
  test::check_values(gpu_model.norm.running_var.cpu(), host_model.norm.running_var, "running variance", 1e-4, 1e-5);
}

TEST_CASE("dropout draws its mask on the GPU: the host's mask, and its gradient") {
  nn::dropout host_drop(0.3, 44), gpu_drop(0.3, 44);
  tensor<float> x = test::random_tensor<float>({6, 33}, -1, 1, 45);
  tensor<float> host_x = x.clone().set_requires_grad(), gpu_x = x.cuda().set_requires_grad();
  for (int call = 0; call < 2; ++call) {
    tensor<float> host_out = host_drop(host_x), gpu_out = gpu_drop(gpu_x);
    check_same(gpu_out, host_out, "dropout in training, call " + std::to_string(call));
    sum(host_out * host_out).backward();
    sum(gpu_out * gpu_out).backward();
  }
  check_same(gpu_x.grad(), host_x.grad(), "dropout's gradient");
  gpu_drop.eval();
  check_same(gpu_drop(gpu_x), x, "dropout in evaluation");
}

// capture() fuses host kernels only: on GPU tensors its ops run one by one
// on the device; a host value it deferred is computed before it moves.
TEST_CASE("a captured function runs on GPU tensors, and its deferred host values move there computed") {
  tensor<float> x = test::random_tensor<float>({17}, -1, 1, 48), y = test::random_tensor<float>({17}, -1, 1, 49);
  auto loss = capture([](const tensor<float>& a, const tensor<float>& b) { return sum(tanh(a * b + a) * b); });
  CHECK(loss(x.cuda(), y.cuda()).device() == gpu);
  CHECK(loss(x.cuda(), y.cuda()).item() == doctest::Approx(loss(x, y).item()).epsilon(1e-5));
  auto [host_dx, host_dy] = grad(loss, all_args)(x, y);
  auto [dx, dy] = grad(loss, all_args)(x.cuda(), y.cuda());
  check_same(dx, host_dx, "a captured function's gradient on the GPU");
  check_same(dy, host_dy, "a captured function's gradient on the GPU");
  auto mixed = capture([&](const tensor<float>& a) {
    tensor<float> pending = a * 3.0f + 1.0f;
    return (pending.to(gpu) * y.cuda()).cpu() + pending;
  });
  test::check_values(mixed(x), (x * 3.0f + 1.0f) * y + (x * 3.0f + 1.0f), "host values deferred, then moved", 1e-6, 1e-6);
  auto across = capture([&](const tensor<float>& a) { return a * 2.0f + y.cuda(); });
  CHECK_THROWS_AS(across(x), device_error);
}

TEST_CASE("a module moved to the GPU runs forward and backward there") {
  generator gen(26);
  nn::linear<float> layer(6, 4, gen);
  tensor<float> x = test::random_tensor<float>({3, 6}, -1, 1, 27);
  tensor<float> host_out = layer(x);
  sum(square(host_out)).backward();
  tensor<float> host_grad = layer.weight.grad();
  layer.zero_grad();
  layer.to(gpu);
  CHECK(layer.weight.device() == gpu);
  tensor<float> out = layer(x.cuda());
  check_same(out, host_out, "linear forward");
  sum(square(out)).backward();
  check_same(layer.weight.grad(), host_grad, "linear weight gradient");
}

TEST_CASE("optimizers update GPU parameters as they update host ones") {
  generator gen(28);
  nn::linear<float> host_layer(5, 3, gen);
  nn::linear<float> gpu_layer = host_layer;
  gpu_layer.to(gpu);
  tensor<float> x = test::random_tensor<float>({4, 5}, -1, 1, 29);
  nn::adam host_adam(host_layer.named_parameters(), {.lr = 0.01, .weight_decay = 0.1});
  nn::adam gpu_adam(gpu_layer.named_parameters(), {.lr = 0.01, .weight_decay = 0.1});
  for (int step = 0; step < 3; ++step) {
    host_layer.zero_grad();
    gpu_layer.zero_grad();
    sum(square(host_layer(x))).backward();
    sum(square(gpu_layer(x.cuda()))).backward();
    host_adam.step();
    gpu_adam.step();
  }
  check_same(gpu_layer.weight, host_layer.weight, "Adam, 3 steps");
  nn::sgd host_sgd(host_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  nn::sgd gpu_sgd(gpu_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  for (int step = 0; step < 2; ++step) {
    host_layer.zero_grad();
    gpu_layer.zero_grad();
    sum(square(host_layer(x))).backward();
    sum(square(gpu_layer(x.cuda()))).backward();
    host_sgd.step();
    gpu_sgd.step();
  }
  check_same(gpu_layer.bias, host_layer.bias, "SGD with Nesterov momentum, 2 steps");
}

TEST_CASE("gradients of a small network's loss flow on the GPU") {
  tensor<double> w = test::random_tensor<double>({6, 3}, -1, 1, 23);
  tensor<double> x = test::random_tensor<double>({4, 6}, -1, 1, 24);
  auto loss = [&](const tensor<double>& weight, const tensor<double>& input) {
    return mean(square(tanh(matmul(input, weight)) - 0.5));
  };
  auto [host_value, host_grad] = value_and_grad(loss)(w, x);
  auto [device_value, device_grad] = value_and_grad(loss)(w.cuda(), x.cuda());
  CHECK(device_grad.device() == gpu);
  CHECK(device_value.item() == doctest::Approx(host_value.item()).epsilon(1e-12));
  test::check_values(device_grad.cpu(), host_grad, "gradient of the loss", 1e-11, 1e-12);
}

TEST_CASE("gradients of elementwise ops flow on the GPU and back through to()") {
  tensor<double> x = test::random_tensor<double>({9}, -2, 2, 13).set_requires_grad();
  auto f = [](const tensor<double>& t) { return exp(t) * t + sigmoid(t) * 3; };
  tensor<double> on_device = x.cuda();
  tensor<double> y = f(on_device);
  y.backward(ones<double>({9}).cuda());
  tensor<double> host_x = x.detach().set_requires_grad();
  f(host_x).backward(ones<double>({9}));
  CHECK(x.grad().device() == device::cpu);
  test::check_values(x.grad(), host_x.grad(), "gradient through the GPU", 1e-12, 1e-13);
}

TEST_CASE_TEMPLATE("a static graph on the GPU runs its fused kernels, forward and backward", T, float, double) {
  auto chain = jit([](const auto& x, const auto& y) {
    auto a = x + x;
    auto b = a * y;
    return square(tanh(b * T(0.5) + T(1)) * x - T(0.25));
  });
  auto loss = jit([](const auto& x, const auto& y) { return sum(tanh(x * y + x) * y); });
  tensor<T> x = test::random_tensor<T>({5, 7}, -1, 1, 40), y = test::random_tensor<T>({7}, -1, 1, 41);
  // Not compiled for the GPU: the function eagerly, on the device.
  check_same(chain(x.cuda(), y.cuda()), chain(x, y), "the chain, eagerly on the GPU");
  CHECK_FALSE(planned_on_gpu(chain.statistics()));

  compile_graph(chain, x, y);
  compile_graph(loss, x, y);
  check_same(chain(x.cuda(), y.cuda()), chain(x, y), "the chain's fused kernel");
  CHECK(planned_on_gpu(chain.statistics()));
  // A broadcast view: the kernel reads operands through their strides.
  tensor<T> wide = test::random_tensor<T>({7, 5}, -1, 1, 42);
  check_same(chain(wide.cuda().transpose(0, 1), y.cuda()), chain(wide.transpose(0, 1), y), "a transposed operand");

  // A captured host tensor in a graph run on the GPU: an error, not a read
  // of host memory by a kernel.
  tensor<T> host_shift = test::random_tensor<T>({7}, -1, 1, 46);
  auto shifted = jit([&](const auto& v) { return v * T(2) + host_shift; });
  compile_graph(shifted, x);
  CHECK_THROWS_AS(shifted(x.cuda()), device_error);

  auto [host_dx, host_dy] = grad(loss, all_args)(x, y);
  auto [dx, dy] = grad(loss, all_args)(x.cuda(), y.cuda());
  check_same(dx, host_dx, "the fused backward's gradient of x");
  check_same(dy, host_dy, "the fused backward's gradient of y (summed over the broadcast axis)");
  CHECK(planned_on_gpu(loss.statistics()));
  // value_and_grad reads the value: the summation's kernel, then the
  // backward (grad above ran the backward alone).
  auto [host_value, host_gradient] = value_and_grad(loss)(x, y);
  auto [value, gradient] = value_and_grad(loss)(x.cuda(), y.cuda());
  CHECK(value.item() == doctest::Approx(host_value.item()).epsilon(gpu_tolerance<T>::rel));
  check_same(gradient, host_gradient, "value_and_grad's gradient");
  auto average = jit([](const auto& u, const auto& v) { return mean(exp(u * v) - u); });
  compile_graph(average, x, y);
  check_same(grad(average)(x.cuda(), y.cuda()), grad(average)(x, y), "the gradient of a fused mean, backward alone");
  // The run grad makes: the backward alone leaves the unread value NaN.
  const tensor<T> on_x = x.cuda().detach().set_requires_grad();
  CHECK(std::isnan(average.call_with_unit_seed(std::tuple{on_x, y.cuda()}, false).item()));

  // Fused summations over some axes: one pass each, a broadcast and a
  // transposed operand read through their strides.
  auto partial_sums = jit([](const auto& u, const auto& v) { return sum(tanh(u * v) + u, 1, true) + mean(u * v, 0); });
  compile_graph(partial_sums, x, y);
  check_same(partial_sums(x.cuda(), y.cuda()), partial_sums(x, y), "a sum over axis 1 (kept) and a mean over axis 0");
  check_same(partial_sums(wide.cuda().transpose(0, 1), y.cuda()), partial_sums(wide.transpose(0, 1), y),
             "the same of a transposed operand");
  auto [host_px, host_py] = grad([&](const auto& u, const auto& v) { return sum(partial_sums(u, v)); }, all_args)(x, y);
  auto [px, py] =
      grad([&](const auto& u, const auto& v) { return sum(partial_sums(u, v)); }, all_args)(x.cuda(), y.cuda());
  check_same(px, host_px, "the gradient of x through the partial sums");
  check_same(py, host_py, "the gradient of y through the partial sums");
  CHECK(planned_on_gpu(partial_sums.statistics()));
}

TEST_CASE("into() on the GPU: the fused kernel writes into the tensor given, views included") {
  auto chain = jit([](const auto& x, const auto& y) { return tanh(x * y + x) * y; });
  tensor<float> x = test::random_tensor<float>({5, 7}, -1, 1, 50), y = test::random_tensor<float>({7}, -1, 1, 51);
  const tensor<float> want = chain(x, y);
  const tensor<float> on_x = x.cuda(), on_y = y.cuda();
  tensor<float> eager_out = zeros<float>({5, 7}, gpu);
  chain.into(eager_out, on_x, on_y);
  check_same(eager_out, want, "into() before the graph is compiled: eagerly, then copied");

  compile_graph(chain, x, y);
  tensor<float> out = zeros<float>({5, 7}, gpu);
  const std::int64_t before = memory_stats(gpu).allocations;
  chain.into(out, on_x, on_y);
  CHECK(memory_stats(gpu).allocations == before);
  check_same(out, want, "into() by the fused kernel");
  CHECK(planned_on_gpu(chain.statistics()));
  tensor<float> wide = zeros<float>({7, 5}, gpu);
  chain.into(wide.transpose(0, 1), on_x, on_y);
  check_same(wide.transpose(0, 1).contiguous(), want, "into() a transposed view");
  CHECK_THROWS_AS(chain.into(zeros<float>({5, 6}, gpu), on_x, on_y), shape_error);
}

TEST_CASE("a jit training step runs as one static graph on the GPU") {
  generator host_gen(43), gpu_gen(43);
  nn::linear<float> host_layer(6, 4, host_gen), gpu_layer(6, 4, gpu_gen);
  gpu_layer.to(gpu);
  nn::sgd host_sgd(host_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  nn::sgd gpu_sgd(gpu_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  auto host_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return mean(square(relu(host_layer(x)) - t)); }, host_sgd));
  auto gpu_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return mean(square(relu(gpu_layer(x)) - t)); }, gpu_sgd));
  tensor<float> x = test::random_tensor<float>({8, 6}, -1, 1, 44), t = test::random_tensor<float>({8, 4}, 0, 1, 45);
  compile_graph(gpu_step, x, t);
  for (int step = 0; step < 3; ++step) {
    float host_loss = host_step(x, t).item();
    float gpu_loss = gpu_step(x.cuda(), t.cuda()).item();
    CHECK(gpu_loss == doctest::Approx(host_loss).epsilon(1e-5));
  }
  CHECK(planned_on_gpu(gpu_step.graph().statistics()));
  test::check_values(gpu_layer.weight.cpu(), host_layer.weight, "weights after 3 steps", 1e-5, 1e-6);
  test::check_values(gpu_layer.bias.cpu(), host_layer.bias, "bias after 3 steps", 1e-5, 1e-6);
}

// Every op a graph runs through an eager kernel (convolution, batch norm,
// pooling, cross-entropy), inside one training step compiled for the GPU.
TEST_CASE("a jit training step of a CNN with cross-entropy runs as one static graph on the GPU") {
  generator host_gen(47), gpu_gen(47);
  small_cnn host_model(host_gen), gpu_model(gpu_gen);
  gpu_model.to(gpu);
  nn::adam host_adam(host_model.named_parameters(), {.lr = 1e-2});
  nn::adam gpu_adam(gpu_model.named_parameters(), {.lr = 1e-2});
  auto host_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return nn::cross_entropy(host_model(x), t); }, host_adam));
  auto gpu_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return nn::cross_entropy(gpu_model(x), t); }, gpu_adam));
  tensor<float> x = test::random_tensor<float>({6, 1, 8, 8}, -1, 1, 48);
  tensor<std::int64_t> t{0, 2, 1, 1, 0, 2};
  compile_graph(gpu_step, x, t);
  for (int step = 0; step < 3; ++step) {
    float host_loss = host_step(x, t).item();
    float gpu_loss = gpu_step(x.cuda(), t.cuda()).item();
    CHECK(gpu_loss == doctest::Approx(host_loss).epsilon(1e-4));
  }
  CHECK(planned_on_gpu(gpu_step.graph().statistics()));
  test::check_values(gpu_model.conv.weight.cpu(), host_model.conv.weight, "convolution weights after 3 steps", 1e-4,
                     1e-5);
  test::check_values(gpu_model.norm.running_var.cpu(), host_model.norm.running_var, "running variance after 3 steps",
                     1e-4, 1e-5);
  test::check_values(gpu_model.out.weight.cpu(), host_model.out.weight, "output weights after 3 steps", 1e-4, 1e-5);
}
