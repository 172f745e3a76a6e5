// nn::train_step: the eager step against zero_grad/backward/step written
// out; the step wrapped in jit (and in mode::graph) against the eager one,
// step by step, with SGD, Adam and AdamW, in float and double, through
// batch norm (its running statistics too) and a parameter read twice; that
// the fused step leaves `.grad` alone and reuses its plan; two values of
// one type; bad losses.
#include <doctest/doctest.h>

#include "support/check.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

template <class T>
struct small_net : nn::module<small_net<T>> {
  nn::linear<T> first, second;
  nn::batch_norm1d<T> norm{6};
  explicit small_net(generator& gen) : first(5, 6, gen), second(6, 3, gen) {
    this->register_module("first", first);
    this->register_module("norm", norm);
    this->register_module("second", second);
  }
  auto forward(const auto& x) const { return second(tandem::tanh(norm(first(x)))); }
};

template <class T>
struct batch {
  tensor<T> x;
  tensor<std::int64_t> labels;
};

template <class T>
batch<T> batch_at(int t) {
  tensor<std::int64_t> labels = tensor<std::int64_t>(shape{9});
  for (std::int64_t i = 0; i < 9; ++i) labels.data()[i] = (i * 7 + t) % 3;
  return {test::random_tensor<T>({9, 5}, -1, 1, 40 + static_cast<std::uint64_t>(t)), labels};
}

// Trains a fresh net for four steps with the optimizer `make` builds; the
// step is eager or jit. Returns the losses and the net.
template <class T, class Make>
std::pair<std::vector<double>, small_net<T>> train(bool jitted, Make make) {
  generator gen(3);
  small_net<T> net(gen);
  auto opt = make(net.named_parameters());
  auto loss_of = [&net](const auto& x, const auto& labels) { return nn::cross_entropy(net(x), labels); };
  nn::train_step step(loss_of, opt);
  std::vector<double> losses;
  for (int t = 0; t < 4; ++t) {
    batch<T> b = batch_at<T>(t);
    tensor<T> loss = jitted ? jit(step)(b.x, b.labels) : step(b.x, b.labels);
    losses.push_back(static_cast<double>(loss.item()));
  }
  return {losses, std::move(net)};
}

template <class T, class Make>
void check_same_training(const std::string& what, Make make) {
  INFO(what);
  auto [eager_losses, eager_net] = train<T>(false, make);
  auto [graph_losses, graph_net] = train<T>(true, make);
  // The first layer's bias has a gradient near zero (batch norm takes the
  // mean out): Adam scales its rounding noise up, so floats get more room.
  double rel = std::is_same_v<T, float> ? 1e-5 : 1e-12, parameter_rel = std::is_same_v<T, float> ? 1e-3 : 1e-9;
  for (std::size_t t = 0; t < eager_losses.size(); ++t) CHECK(test::close(graph_losses[t], eager_losses[t], rel, rel));
  auto eager_state = eager_net.named_parameters(), graph_state = graph_net.named_parameters();
  auto eager_buffers = eager_net.named_buffers(), graph_buffers = graph_net.named_buffers();
  eager_state.insert(eager_state.end(), eager_buffers.begin(), eager_buffers.end());
  graph_state.insert(graph_state.end(), graph_buffers.begin(), graph_buffers.end());
  REQUIRE(eager_state.size() == graph_state.size());
  for (std::size_t k = 0; k < eager_state.size(); ++k)
    test::check_values(std::get<tensor<T>>(graph_state[k].value), std::get<tensor<T>>(eager_state[k].value),
                       eager_state[k].name, parameter_rel, parameter_rel);
}

}  // namespace

TEST_CASE("an eager train_step is zero_grad, backward and step written out") {
  generator gen_a(3), gen_b(3);
  small_net<double> a(gen_a), b(gen_b);
  nn::sgd opt_a(a.named_parameters(), {.lr = 0.1, .momentum = 0.9}), opt_b(b.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  nn::train_step step([&a](const auto& x, const auto& y) { return nn::cross_entropy(a(x), y); }, opt_a);
  for (int t = 0; t < 3; ++t) {
    batch<double> data = batch_at<double>(t);
    tensor<double> loss = step(data.x, data.labels);
    opt_b.zero_grad();
    tensor<double> want = nn::cross_entropy(b(data.x), data.labels);
    want.backward();
    opt_b.step();
    CHECK(loss.item() == want.item());
    CHECK_FALSE(loss.requires_grad());
  }
  test::check_values(a.first.weight, b.first.weight, "first.weight", 0, 0);
  CHECK(a.first.weight.has_grad());
}

TEST_CASE("a jit train_step follows the eager one: SGD, Adam and AdamW, float and double, with batch norm") {
  auto sgd = [](const auto& ps) { return nn::sgd(ps, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true}); };
  auto adam = [](const auto& ps) { return nn::adam(ps, {.lr = 0.01, .weight_decay = 0.01}); };
  auto adamw = [](const auto& ps) { return nn::adamw(ps, {.lr = 0.01, .weight_decay = 0.1}); };
  check_same_training<double>("sgd, double", sgd);
  check_same_training<double>("adam, double", adam);
  check_same_training<double>("adamw, double", adamw);
  check_same_training<float>("sgd, float", sgd);
  check_same_training<float>("adam, float", adam);
}

TEST_CASE("a jit train_step leaves .grad alone and builds its plan once; mode::graph runs it so too") {
  generator gen(5);
  small_net<float> net(gen);
  nn::adam opt(net.named_parameters(), {.lr = 0.01});
  auto step = jit(nn::train_step([&net](const auto& x, const auto& y) { return nn::cross_entropy(net(x), y); }, opt));
  tensor<float> before = net.first.weight.clone();
  for (int t = 0; t < 3; ++t) {
    batch<float> b = batch_at<float>(t);
    step(b.x, b.labels);
  }
  CHECK_FALSE(net.first.weight.has_grad());  // its gradient went from the graph straight to the update
  CHECK(opt.steps() == 3);
  CHECK(step.graph_statistics().misses == 1);
  CHECK(step.graph_statistics().hits == 2);
  CHECK(sum(abs(net.first.weight - before)).item() > 0);

  nn::train_step by_mode([&net](const auto& x, const auto& y) { return nn::cross_entropy(net(x), y); }, opt);
  set_mode(mode::graph);
  batch<float> b = batch_at<float>(0);
  by_mode(b.x, b.labels);
  set_mode(mode::eager);
  CHECK(by_mode.graph_statistics().misses == 1);
  CHECK_FALSE(net.first.weight.has_grad());  // its gradient went from the graph straight to the update
}

TEST_CASE("a parameter read at two places gets the sum of both gradients in a jit step") {
  for (bool jitted : {false, true}) {
    tensor<double> w = test::random_tensor<double>({7}, -1, 1, 9);
    w.set_requires_grad(true);
    nn::sgd opt({{"w", w}}, {.lr = 0.5});
    tensor<double> x = test::random_tensor<double>({7}, -1, 1, 10);
    auto loss_of = [&w](const auto& input) { return sum(input * w) + sum(w * w); };
    nn::train_step step(loss_of, opt);
    std::vector<double> want = test::values_of(w), xs = test::values_of(x);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] -= 0.5 * (xs[i] + 2 * want[i]);
    if (jitted) jit(step)(x);
    else step(x);
    test::check_values(w, {7}, want, jitted ? "jit" : "eager", 1e-14, 1e-14);
  }
}

TEST_CASE("a jit step whose loss makes two values of one type, each holding a tensor, gives the eager update") {
  // input * w * 2 and input * w * 3: one type, two values (graph/sharing.hpp).
  tensor<double> w = test::random_tensor<double>({7}, -1, 1, 11);
  w.set_requires_grad(true);
  nn::sgd opt({{"w", w}}, {.lr = 0.5});
  tensor<double> x = test::random_tensor<double>({7}, -1, 1, 12);
  auto loss_of = [&w](const auto& input) { return sum(input * w * 2.0 + input * w * 3.0); };
  nn::train_step step(loss_of, opt);
  std::vector<double> want = test::values_of(w), xs = test::values_of(x);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] -= 0.5 * 5 * xs[i];
  tensor<double> loss = jit(step)(x);
  CHECK(!loss.requires_grad());
  test::check_values(w, {7}, want, "a graph with two values of one type", 1e-14, 1e-14);
}

TEST_CASE("a train_step whose loss is not one number throws and leaves the parameters alone") {
  for (bool jitted : {false, true}) {
    tensor<float> w = ones<float>({3});
    w.set_requires_grad(true);
    nn::sgd opt({{"w", w}}, {.lr = 0.5});
    nn::train_step step([&w](const auto& x) { return x * w; }, opt);
    tensor<float> x = ones<float>({3});
    auto call = [&] { return jitted ? jit(step)(x) : step(x); };
    CHECK_THROWS_WITH_AS(call(), "tandem::nn::train_step: the loss must be a single number, not of shape [3]",
                         shape_error);
    test::check_values(w, {3}, {1, 1, 1}, "w", 0, 0);
  }
}

TEST_CASE("a train_step's gradient hook sees every gradient before the update, eager and jit") {
  for (bool jitted : {false, true}) {
    CAPTURE(jitted);
    // Halving every gradient in the hook is plain SGD at half the rate.
    generator gen_a(5), gen_b(5);
    small_net<double> hooked(gen_a), halved_rate(gen_b);
    nn::sgd hooked_opt(hooked.named_parameters(), {.lr = 0.2});
    nn::sgd halved_opt(halved_rate.named_parameters(), {.lr = 0.1});
    std::size_t seen = 0;
    nn::gradient_hook halve = [&seen](nn::step_gradients& g) {
      seen = g.floats.size() + g.doubles.size();
      for (auto& t : g.doubles) t.assign(t * 0.5);
    };
    auto loss_of = [](const small_net<double>& net) {
      return [&net](const auto& x, const auto& labels) { return nn::cross_entropy(net(x), labels); };
    };
    nn::train_step with_hook(loss_of(hooked), hooked_opt, halve);
    nn::train_step plain(loss_of(halved_rate), halved_opt);
    for (int t = 0; t < 3; ++t) {
      batch<double> b = batch_at<double>(t);
      if (jitted) {
        jit(with_hook)(b.x, b.labels);
        jit(plain)(b.x, b.labels);
      } else {
        with_hook(b.x, b.labels);
        plain(b.x, b.labels);
      }
    }
    CHECK(seen == hooked.named_parameters().size());
    auto got = hooked.named_parameters(), want = halved_rate.named_parameters();
    for (std::size_t k = 0; k < got.size(); ++k)
      test::check_values(std::get<tensor<double>>(got[k].value), std::get<tensor<double>>(want[k].value), got[k].name,
                         1e-12, 1e-12);
  }
}
