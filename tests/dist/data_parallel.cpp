// Data-parallel training over the ranks against one process that trains on
// the union of their batches: the same parameters (to rounding), and on
// every rank the same bits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <tandem/dist.hpp>
#include <tandem/dist/data_parallel.hpp>
#include <tandem/tandem.hpp>

#include "dist/same_on_every_rank.hpp"

using namespace tandem;

namespace {

// No batch norm: its statistics over a rank's batch are not those over the
// union (PyTorch's DDP has the same difference without SyncBatchNorm).
struct small_net : nn::module<small_net> {
  nn::linear<double> first, second;
  explicit small_net(generator& gen) : first(5, 6, gen), second(6, 3, gen) {
    register_module("first", first);
    register_module("second", second);
  }
  auto forward(const auto& x) const { return second(tandem::tanh(first(x))); }
};

tensor<std::int64_t> concatenated(const std::vector<tensor<std::int64_t>>& parts) {
  std::vector<std::int64_t> values;
  for (const auto& p : parts)
    for (std::int64_t v : p.to_vector()) values.push_back(v);
  tensor<std::int64_t> out(shape{static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), out.data());
  return out;
}

// Every parameter of `model` the same bits on every rank, and within
// `tolerance` of the reference's.
void check_trained_alike(const small_net& model, const small_net& reference, double tolerance) {
  const auto trained = model.named_parameters(), expected = reference.named_parameters();
  REQUIRE(trained.size() == expected.size());
  for (std::size_t p = 0; p < trained.size(); ++p) {
    CAPTURE(trained[p].name);
    const tensor<double> got = std::get<tensor<double>>(trained[p].value).contiguous();
    const tensor<double> want = std::get<tensor<double>>(expected[p].value).contiguous();
    CHECK(test::same_on_every_rank(got));
    double worst = 0;
    for (std::int64_t i = 0; i < got.numel(); ++i) worst = std::max(worst, std::abs(got.data()[i] - want.data()[i]));
    CHECK(worst < tolerance);
  }
}

}  // namespace

TEST_CASE("data parallel: the ranks train one model, bit for bit, as one process on the union of their batches") {
  const int me = dist::rank(), ranks = dist::world_size();
  generator data_gen(7);
  const tensor<double> x = uniform<double>({40, 5}, -1, 1, data_gen), y = uniform<double>({40, 3}, -1, 1, data_gen);
  // Each rank starts from its own initialization; the broadcast makes them
  // all rank 0's, which the reference starts from too.
  generator init(100 + me), reference_init(100);
  small_net model(init), reference(reference_init);
  dist::broadcast_parameters(model);
  nn::sgd optimizer(model.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  nn::sgd reference_optimizer(reference.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  // Buckets of 200 bytes: the gradients travel in several.
  const std::size_t bucket_bytes = 200;
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<tensor<std::int64_t>>> batches_of(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      generator order(epoch);
      batches_of[static_cast<std::size_t>(r)] = data::distributed_batches(40, 4, &order, r, ranks);
    }
    const auto& mine = batches_of[static_cast<std::size_t>(me)];
    for (std::size_t k = 0; k < mine.size(); ++k) {
      model.zero_grad();
      nn::mse_loss(model(index_select(x, 0, mine[k])), index_select(y, 0, mine[k])).backward();
      dist::average_gradients(model, dist::communicator::world(), bucket_bytes);
      optimizer.step();

      std::vector<tensor<std::int64_t>> step_batches;
      for (const auto& batches : batches_of) step_batches.push_back(batches[k]);
      const tensor<std::int64_t> all = concatenated(step_batches);
      reference.zero_grad();
      nn::mse_loss(reference(index_select(x, 0, all)), index_select(y, 0, all)).backward();
      reference_optimizer.step();
    }
  }
  check_trained_alike(model, reference, 1e-12);
}

TEST_CASE("data parallel through nn::train_step, eagerly and as one static graph per step") {
  const int me = dist::rank(), ranks = dist::world_size();
  generator data_gen(8);
  const tensor<double> x = uniform<double>({24, 5}, -1, 1, data_gen), y = uniform<double>({24, 3}, -1, 1, data_gen);
  for (mode m : {mode::eager, mode::graph}) {
    CAPTURE(m == mode::graph);
    generator init(200 + me), reference_init(200);
    small_net model(init), reference(reference_init);
    dist::broadcast_parameters(model);
    nn::adam optimizer(model.named_parameters(), {.lr = 0.05});
    nn::adam reference_optimizer(reference.named_parameters(), {.lr = 0.05});
    auto loss_of = [](const small_net& net) {
      return [&net](const auto& images, const auto& targets) { return nn::mse_loss(net(images), targets); };
    };
    set_mode(m);
    nn::train_step step(loss_of(model), optimizer, dist::gradient_averaging(dist::communicator::world(), 200));
    nn::train_step reference_step(loss_of(reference), reference_optimizer);
    generator order(3);
    const auto mine = data::distributed_batches(24, 3, &order, me, ranks);
    for (std::size_t k = 0; k < mine.size(); ++k) {
      step(index_select(x, 0, mine[k]), index_select(y, 0, mine[k]));
      std::vector<tensor<std::int64_t>> step_batches;
      for (int r = 0; r < ranks; ++r) {
        generator same(3);
        step_batches.push_back(data::distributed_batches(24, 3, &same, r, ranks)[k]);
      }
      const tensor<std::int64_t> all = concatenated(step_batches);
      reference_step(index_select(x, 0, all), index_select(y, 0, all));
    }
    set_mode(mode::eager);
    check_trained_alike(model, reference, 1e-10);
  }
}

TEST_CASE("average_gradients: a parameter the backward did not reach takes part as zeros") {
  const int me = dist::rank(), ranks = dist::world_size();
  generator init(3);
  small_net model(init);
  model.zero_grad();
  // Only rank 0 computes a loss that reaches `second`'s bias.
  tensor<double> bias = std::get<tensor<double>>(model.named_parameters().back().value);
  if (me == 0) sum(bias * 2.0).backward();
  dist::average_gradients(model);
  CHECK(bias.grad().data()[0] == doctest::Approx(2.0 / ranks));
  CHECK(std::get<tensor<double>>(model.named_parameters().front().value).grad().data()[0] == 0.0);
}

TEST_CASE("broadcast_parameters sends buffers too: batch norm's running statistics") {
  const int me = dist::rank();
  struct normed : nn::module<normed> {
    nn::batch_norm1d<float> norm{4};
    normed() { register_module("norm", norm); }
  };
  normed net;
  // Each rank's own statistics and scale, as after training apart.
  for (auto& t : net.named_buffers()) std::get<tensor<float>>(t.value).assign(full<float>({}, 10.0f * me + 1));
  {
    no_grad plain;
    for (auto& t : net.named_parameters()) std::get<tensor<float>>(t.value).assign(full<float>({}, -2.0f * me));
  }
  dist::broadcast_parameters(net);
  for (const auto& t : net.named_buffers()) {
    CAPTURE(t.name);
    const auto& value = std::get<tensor<float>>(t.value);
    CHECK(value.contiguous().data()[0] == 1.0f);
    CHECK(test::same_on_every_rank(value));
  }
  for (const auto& t : net.named_parameters()) CHECK(std::get<tensor<float>>(t.value).contiguous().data()[0] == 0.0f);
}

TEST_CASE("dist::data_parallel: buckets averaged during the backward train as one process, eagerly and in graphs") {
  const int me = dist::rank(), ranks = dist::world_size();
  generator data_gen(9);
  const tensor<double> x = uniform<double>({24, 5}, -1, 1, data_gen), y = uniform<double>({24, 3}, -1, 1, data_gen);
  for (mode m : {mode::eager, mode::graph}) {
    CAPTURE(m == mode::graph);
    generator init(300 + me), reference_init(300);
    small_net model(init), reference(reference_init);
    // Buckets of 200 bytes: the gradients travel in several.
    dist::data_parallel ddp(model, dist::communicator::world(), 200);
    nn::adam optimizer(model.named_parameters(), {.lr = 0.05});
    nn::adam reference_optimizer(reference.named_parameters(), {.lr = 0.05});
    auto loss_of = [](const small_net& net) {
      return [&net](const auto& images, const auto& targets) { return nn::mse_loss(net(images), targets); };
    };
    set_mode(m);
    nn::train_step step(loss_of(model), optimizer, ddp.gradient_hook());
    nn::train_step reference_step(loss_of(reference), reference_optimizer);
    generator order(4);
    const auto mine = data::distributed_batches(24, 3, &order, me, ranks);
    for (std::size_t k = 0; k < mine.size(); ++k) {
      step(index_select(x, 0, mine[k]), index_select(y, 0, mine[k]));
      std::vector<tensor<std::int64_t>> step_batches;
      for (int r = 0; r < ranks; ++r) {
        generator same(4);
        step_batches.push_back(data::distributed_batches(24, 3, &same, r, ranks)[k]);
      }
      reference_step(index_select(x, 0, concatenated(step_batches)), index_select(y, 0, concatenated(step_batches)));
    }
    set_mode(mode::eager);
    const dist::data_parallel_statistics& stats = ddp.statistics();
    if (ranks > 1) {
      CHECK(stats.buckets > 1);
      // A static graph's backward calls no hook: its buckets start after it
      // (with jit off, graph mode runs eagerly).
      CHECK(stats.started_in_backward == (m == mode::eager || !jit_enabled() ? stats.buckets : 0));
      CHECK(stats.restarted == 0);
    }
    check_trained_alike(model, reference, 1e-10);
  }
}

TEST_CASE("dist::data_parallel: in a loop of one's own, with gradients accumulated over two backwards") {
  const int me = dist::rank(), ranks = dist::world_size();
  generator data_gen(10);
  const tensor<double> x = uniform<double>({8 * ranks, 5}, -1, 1, data_gen);
  generator init(400 + me), reference_init(400);
  small_net model(init), reference(reference_init);
  dist::data_parallel ddp(model, dist::communicator::world(), 200);
  auto loss = [&](const small_net& net, const tensor<double>& rows) { return sum(tandem::square(net(rows))); };
  const tensor<double> first = x.take(0, 8 * me, 4), second = x.take(0, 8 * me + 4, 4);
  model.zero_grad();
  loss(model, first).backward();
  loss(model, second).backward();
  ddp.finish();
  // The second backward found its buckets in flight with the first's
  // gradients: finish() starts them again with the sums.
  if (ranks > 1) CHECK(ddp.statistics().restarted == ddp.statistics().buckets);
  reference.zero_grad();
  for (int r = 0; r < ranks; ++r) loss(reference, x.take(0, 8 * r, 8)).backward();
  const auto got = model.named_parameters(), want = reference.named_parameters();
  for (std::size_t p = 0; p < got.size(); ++p) {
    const tensor<double> g = std::get<tensor<double>>(got[p].value).grad().contiguous();
    const tensor<double> w = (std::get<tensor<double>>(want[p].value).grad() / static_cast<double>(ranks)).contiguous();
    CHECK(test::same_on_every_rank(g));
    for (std::int64_t i = 0; i < g.numel(); ++i) CHECK(g.data()[i] == doctest::Approx(w.data()[i]).epsilon(1e-12));
  }
}

TEST_CASE("dist::data_parallel: a parameter one rank's backward did not reach takes part as zeros") {
  const int me = dist::rank(), ranks = dist::world_size();
  generator init(5);
  small_net model(init);
  dist::data_parallel ddp(model);
  model.zero_grad();
  tensor<double> bias = std::get<tensor<double>>(model.named_parameters().back().value);
  tensor<double> first_weight = std::get<tensor<double>>(model.named_parameters().front().value);
  if (me == 0) sum(bias * 2.0).backward();
  else sum(first_weight * 0.0).backward();
  ddp.finish();
  CHECK(bias.grad().data()[0] == doctest::Approx(2.0 / ranks));
  CHECK(first_weight.grad().data()[0] == 0.0);
}
