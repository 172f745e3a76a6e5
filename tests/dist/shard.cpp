// dist::shard against the function run whole by one process: each rank's
// block of each output equals the same block of the unsharded result (in
// double, to rounding), with the collectives each layout needs and no more.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <tandem/dist.hpp>
#include <tandem/dist/shard.hpp>
#include <tandem/tandem.hpp>

#include "dist/same_on_every_rank.hpp"
#include "support/check.hpp"

using namespace tandem;

namespace {

tensor<double> random_tensor(shape s, std::uint64_t seed) {
  generator gen(seed);
  return uniform<double>(std::move(s), -1.0, 1.0, gen);
}

// The block of `whole` a rank holds under `s` (the whole where s cuts none).
tensor<double> block_under(const tensor<double>& whole, const dist::strategy& s) {
  const int ranks = dist::world_size();
  for (std::size_t a = 0; a < s.size(); ++a)
    if (s[a] > 1) {
      const std::int64_t length = whole.shape()[a] / ranks;
      return whole.take(static_cast<std::int64_t>(a), dist::rank() * length, length);
    }
  return whole;
}

// A copy of t that requires a gradient.
tensor<double> leaf(const tensor<double>& t) {
  tensor<double> copy = t.clone();
  copy.set_requires_grad(true);
  return copy;
}

void check_close(const tensor<double>& got, const tensor<double>& want) {
  REQUIRE(got.shape() == want.shape());
  const tensor<double> g = got.contiguous(), w = want.contiguous();
  double worst = 0;
  for (std::int64_t i = 0; i < g.numel(); ++i)
    worst = std::max(worst, std::abs(g.data()[i] - w.data()[i]) / (1 + std::abs(w.data()[i])));
  CHECK(worst < 1e-12);
}

dist::strategy rows(int ranks) { return {ranks, 1}; }
dist::strategy columns(int ranks) { return {1, ranks}; }
const dist::strategy whole{};

}  // namespace

TEST_CASE("dist::shard: elementwise ops follow their operands' blocks, on sizes that hit SIMD tails") {
  const int ranks = dist::world_size();
  auto f = [](const auto& x, const auto& b) { return tandem::tanh(x * 2.0 + b) - x; };
  for (std::int64_t per_rank : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{17}, test::largest_size}) {
    CAPTURE(per_rank);
    const tensor<double> x = random_tensor({ranks * per_rank}, 1), b = random_tensor({}, 2);
    const tensor<double> want = f(x, b);
    auto sharded = dist::shard(f, {{ranks}, whole}, {{ranks}});
    check_close(sharded(x, b), block_under(want, {ranks}));
    CHECK(sharded.statistics().collectives.empty());
    CHECK(sharded.statistics().fused_regions == (jit_enabled() ? 1 : 0));
    auto gathered = dist::shard(f, {{ranks}, whole});
    const tensor<double> all = gathered(x, b);
    check_close(all, want);
    CHECK(gathered.statistics().all_gathers == (ranks > 1 ? 1 : 0));
    CHECK(test::same_on_every_rank(all));
  }
}

TEST_CASE("dist::shard: a whole operand that broadcasts along the cut axis is cut by each rank, with no message") {
  const int ranks = dist::world_size();
  const tensor<double> x = random_tensor({3, 4 * ranks}, 3), bias = random_tensor({4 * ranks}, 4);
  auto f = [](const auto& x, const auto& bias) { return tandem::relu(x + bias) * x; };
  const tensor<double> want = f(x, bias);
  auto by_columns = dist::shard(f, {columns(ranks), whole}, {columns(ranks)});
  check_close(by_columns(x, bias), block_under(want, columns(ranks)));
  CHECK(by_columns.statistics().collectives.empty());
  CHECK(by_columns.statistics().local_slices == (ranks > 1 ? 1 : 0));
  // Cut along the rows, the bias (which has no rows) is read whole.
  const tensor<double> tall = random_tensor({2 * ranks, 4 * ranks}, 19);
  auto by_rows = dist::shard(f, {rows(ranks), whole}, {rows(ranks)});
  check_close(by_rows(tall, bias), block_under(f(tall, bias), rows(ranks)));
  CHECK(by_rows.statistics().local_slices == 0);
}

TEST_CASE("dist::shard: a non-contiguous view is cut as the tensor it shows") {
  const int ranks = dist::world_size();
  const tensor<double> stored = random_tensor({5, 2 * ranks}, 5);
  const tensor<double> x = stored.transpose(0, 1);
  auto f = [](const auto& x) { return tandem::exp(x) * 0.5; };
  auto sharded = dist::shard(f, {rows(ranks)}, {rows(ranks)});
  check_close(sharded(x), block_under(f(x), rows(ranks)));
}

TEST_CASE("dist::shard: sums and means over a kept axis stay cut; over the cut axis they are summed over the ranks") {
  const int ranks = dist::world_size();
  const tensor<double> x = random_tensor({2 * ranks, 3, 5}, 6);
  auto kept = dist::shard([](const auto& x) { return sum(x * x, {1, 2}); }, {{ranks, 1, 1}}, {{ranks}});
  check_close(kept(x), block_under(sum(x * x, {1, 2}), {ranks}));
  CHECK(kept.statistics().collectives.empty());

  CHECK(kept.statistics().fused_regions == 0);

  auto over_cut = dist::shard([](const auto& x) { return mean(x, 0) + sum(x, {0, 2}, true); }, {{ranks, 1, 1}});
  check_close(over_cut(x), mean(x, 0) + sum(x, {0, 2}, true));
  CHECK(over_cut.statistics().all_reduces == (ranks > 1 ? 2 : 0));

  // The chain feeding a sum runs in the sum's loop.
  auto chain = [](const auto& x) { return sum(tandem::exp(x) * x - 1.0, 0); };
  auto fused = dist::shard(chain, {{ranks, 1, 1}});
  check_close(fused(x), chain(x));
  CHECK(fused.statistics().fused_regions == (jit_enabled() ? 1 : 0));

  auto everything = dist::shard([](const auto& x) { return mean(tandem::square(x)); }, {{1, 1, ranks}});
  const tensor<double> x_wide = random_tensor({2, 3, 4 * ranks}, 7);
  check_close(everything(x_wide), mean(tandem::square(x_wide)));
}

TEST_CASE("dist::shard: matmul split by rows, by columns, and by the contracted axis") {
  const int ranks = dist::world_size();
  const std::int64_t m = 3 * ranks, k = 5 * ranks, n = 2 * ranks;
  const tensor<double> a = random_tensor({m, k}, 8), b = random_tensor({k, n}, 9);
  auto product = [](const auto& a, const auto& b) { return matmul(a, b); };
  const tensor<double> want = matmul(a, b);
  const bool many = ranks > 1;

  auto by_rows = dist::shard(product, {rows(ranks), whole}, {rows(ranks)});
  check_close(by_rows(a, b), block_under(want, rows(ranks)));
  CHECK(by_rows.statistics().collectives.empty());

  auto by_columns = dist::shard(product, {whole, columns(ranks)}, {columns(ranks)});
  check_close(by_columns(a, b), block_under(want, columns(ranks)));
  CHECK(by_columns.statistics().collectives.empty());

  SUBCASE("contracted axis cut in both factors: a partial product, reduce-scattered into rows") {
    auto contracted = dist::shard(product, {columns(ranks), rows(ranks)}, {rows(ranks)});
    check_close(contracted(a, b), block_under(want, rows(ranks)));
    CHECK(contracted.statistics().reduce_scatters == (many ? 1 : 0));
    CHECK(contracted.statistics().all_reduces == 0);
  }
  SUBCASE("contracted axis cut in one factor: the other is cut by each rank, then all-reduced whole") {
    auto contracted = dist::shard(product, {columns(ranks), whole});
    const tensor<double> got = contracted(a, b);
    check_close(got, want);
    CHECK(contracted.statistics().all_reduces == (many ? 1 : 0));
    CHECK(contracted.statistics().local_slices == (many ? 1 : 0));
    CHECK(test::same_on_every_rank(got));
  }
  SUBCASE("rows of a and columns of b cut: b is gathered") {
    auto both = dist::shard(product, {rows(ranks), columns(ranks)}, {rows(ranks)});
    check_close(both(a, b), block_under(want, rows(ranks)));
    CHECK(both.statistics().all_gathers == (many ? 1 : 0));
  }
}

TEST_CASE("dist::shard: a two-layer block cut as Megatron-LM cuts it needs one all-reduce") {
  const int ranks = dist::world_size();
  const tensor<double> x = random_tensor({4, 6}, 10), w1 = random_tensor({6, 8 * ranks}, 11),
                       w2 = random_tensor({8 * ranks, 6}, 12);
  auto block = [](const auto& x, const auto& w1, const auto& w2) { return matmul(tandem::relu(matmul(x, w1)), w2) + x; };
  auto sharded = dist::shard(block, {whole, columns(ranks), rows(ranks)});
  const tensor<double> got = sharded(x, w1, w2);
  check_close(got, block(x, w1, w2));
  CHECK(sharded.statistics().all_reduces == (ranks > 1 ? 1 : 0));
  CHECK(sharded.statistics().all_gathers == 0);
  CHECK(test::same_on_every_rank(got));
  if (ranks > 1) CHECK(sharded.statistics().collectives.front().find("all_reduce after matmul") == 0);
  // Each rank giving only its own blocks computes the same.
  const tensor<double> from_blocks =
      sharded.on_blocks(x, block_under(w1, columns(ranks)).contiguous(), block_under(w2, rows(ranks)).contiguous());
  check_close(from_blocks, got);
  CHECK(sharded.statistics().all_reduces == (ranks > 1 ? 1 : 0));
}

TEST_CASE("dist::shard: batched matmul cut along the batch, and ops without a rule run on whole values") {
  const int ranks = dist::world_size();
  const tensor<double> a = random_tensor({2 * ranks, 3, 4}, 13), b = random_tensor({2 * ranks, 4, 5}, 14),
                       shared = random_tensor({4, 5}, 15);
  auto batched = dist::shard([](const auto& a, const auto& b) { return matmul(a, b); }, {{ranks, 1, 1}, {ranks, 1, 1}},
                             {{ranks, 1, 1}});
  check_close(batched(a, b), block_under(matmul(a, b), {ranks, 1, 1}));
  CHECK(batched.statistics().collectives.empty());
  auto broadcast = dist::shard([](const auto& a, const auto& w) { return matmul(a, w); }, {{ranks, 1, 1}, whole},
                               {{ranks, 1, 1}});
  check_close(broadcast(a, shared), block_under(matmul(a, shared), {ranks, 1, 1}));

  auto f = [](const auto& a, const auto& w) { return softmax(matmul(a, w), -1).reshape({-1}); };
  auto gathered = dist::shard(f, {{ranks, 1, 1}, whole});
  check_close(gathered(a, shared), f(a, shared));
}

TEST_CASE("dist::shard: outputs of a tuple, each with its strategy") {
  const int ranks = dist::world_size();
  const tensor<double> x = random_tensor({2 * ranks, 3}, 16);
  auto f = [](const auto& x) { return std::tuple{x * x, sum(x, 0)}; };
  auto sharded = dist::shard(f, {rows(ranks)}, {rows(ranks), {1}});
  auto [squares, sums] = sharded(x);
  check_close(squares, block_under(x * x, rows(ranks)));
  check_close(sums, sum(x, 0));
}

TEST_CASE("dist::shard: strategies no rank could run with throw, naming the tensor, its shape and the strategy") {
  const int ranks = dist::world_size();
  const tensor<double> x = random_tensor({2 * ranks, ranks + 1}, 17);
  auto f = [](const auto& x) { return x + 1.0; };
  const std::string named =
      "input 0 of shape [" + std::to_string(2 * ranks) + ", " + std::to_string(ranks + 1) + "] has strategy (";
  CHECK_THROWS_WITH_AS(dist::shard(f, {{ranks, 1, 1}})(x), doctest::Contains(named.c_str()), shape_error);
  CHECK_THROWS_WITH_AS(dist::shard(f, {{ranks, 1}, {1}})(x), doctest::Contains("2 input strategies for 1 tensor"),
                       error);
  CHECK_THROWS_WITH_AS(dist::shard(f, {{0, 1}})(x), doctest::Contains("cut into at least one part"), shape_error);
  CHECK_THROWS_WITH_AS(dist::shard(f, {{ranks, 1}}, {{ranks, 1}, {1}})(x),
                       doctest::Contains("2 output strategies for 1 outputs"), error);
  if (ranks > 1) {
    CHECK_THROWS_WITH_AS(dist::shard(f, {{ranks, ranks}})(x), doctest::Contains("which cuts two axes"), shape_error);
    CHECK_THROWS_WITH_AS(dist::shard(f, {{1, ranks}})(x), doctest::Contains("does not cut into"), shape_error);
    CHECK_THROWS_WITH_AS(dist::shard(f, {{ranks + 1, 1}})(x), doctest::Contains("one part per rank"), shape_error);
  }
}

TEST_CASE("dist::shard: max, min, softmax, transpose and permute keep a cut where they can") {
  const int ranks = dist::world_size();
  const bool many = ranks > 1;
  const tensor<double> x = random_tensor({2 * ranks, 3, 5}, 20);
  const dist::strategy by_batch{ranks, 1, 1};

  auto extremes = [](const auto& x) { return max(x, 2, true) - min(x, {1, 2}, true); };
  auto kept = dist::shard(extremes, {by_batch}, {by_batch});
  check_close(kept(x), block_under(extremes(x), by_batch));
  CHECK(kept.statistics().all_reduces == 0);
  CHECK(kept.statistics().all_gathers == 0);
  auto over_cut = dist::shard([](const auto& x) { return max(x, 0) + min(x); }, {by_batch});
  check_close(over_cut(x), max(x, 0) + min(x));
  CHECK(over_cut.statistics().all_reduces == (many ? 2 : 0));

  auto along_kept = dist::shard([](const auto& x) { return softmax(x, -1) + log_softmax(x, 1); }, {by_batch},
                                {by_batch});
  check_close(along_kept(x), block_under(softmax(x, -1) + log_softmax(x, 1), by_batch));
  CHECK(along_kept.statistics().collectives.empty());
  auto along_cut = dist::shard([](const auto& x) { return softmax(x, 0); }, {by_batch}, {by_batch});
  check_close(along_cut(x), block_under(softmax(x, 0), by_batch));
  CHECK(along_cut.statistics().all_gathers == (many ? 1 : 0));

  auto moved = dist::shard([](const auto& x) { return x.transpose(0, 2).permute({1, 2, 0}) * 2.0; }, {by_batch},
                           {{1, ranks, 1}});
  check_close(moved(x), block_under(x.transpose(0, 2).permute({1, 2, 0}) * 2.0, {1, ranks, 1}));
  CHECK(moved.statistics().collectives.empty());
  // A partial product stays partial through a transpose.
  const tensor<double> a = random_tensor({3, 4 * ranks}, 21), b = random_tensor({4 * ranks, 2}, 22);
  auto transposed = dist::shard([](const auto& a, const auto& b) { return matmul(a, b).transpose(0, 1); },
                                {columns(ranks), rows(ranks)});
  check_close(transposed(a, b), matmul(a, b).transpose(0, 1));
  CHECK(transposed.statistics().all_reduces == (many ? 1 : 0));
  CHECK(transposed.statistics().collectives.size() == (many ? 1u : 0u));
}

TEST_CASE("dist::shard: reshapes keep a cut where each block is a block of the result") {
  const int ranks = dist::world_size();
  const bool many = ranks > 1;
  const tensor<double> x = random_tensor({4 * ranks, 3}, 23);
  auto rows_kept = [](const auto& x) { return x.flatten().unsqueeze(0).squeeze(0).reshape({-1, 6}) * 2.0; };
  auto kept = dist::shard(rows_kept, {rows(ranks)}, {rows(ranks)});
  check_close(kept(x), block_under(rows_kept(x), rows(ranks)));
  CHECK(kept.statistics().collectives.empty());
  // Columns flattened are no block of the result: gathered.
  const tensor<double> wide = random_tensor({3, 4 * ranks}, 24);
  auto flat = dist::shard([](const auto& x) { return flatten(x) + 1.0; }, {columns(ranks)});
  check_close(flat(wide), flatten(wide) + 1.0);
  CHECK(flat.statistics().all_gathers == (many ? 1 : 0));
}

TEST_CASE("dist::shard: multi-head attention with the heads cut over the ranks needs one all-reduce") {
  const int ranks = dist::world_size();
  // 12 heads of 2, features 5, batch 2, sequence 3: 12 splits over 1 to 4 ranks.
  const tensor<double> x = random_tensor({2, 3, 5}, 25), wq = random_tensor({5, 24}, 26),
                       wk = random_tensor({5, 24}, 27), wv = random_tensor({5, 24}, 28),
                       wo = random_tensor({24, 5}, 29);
  auto attention = [](const auto& x, const auto& wq, const auto& wk, const auto& wv, const auto& wo) {
    auto heads = [](const auto& t) { return t.reshape({2, 3, 12, 2}).permute({0, 2, 1, 3}); };
    auto q = heads(matmul(x, wq));
    auto k = heads(matmul(x, wk));
    auto v = heads(matmul(x, wv));
    auto weights = softmax(matmul(q, k.transpose(2, 3)) * 0.5, -1);
    return matmul(matmul(weights, v).permute({0, 2, 1, 3}).reshape({2, 3, 24}), wo) + x;
  };
  auto sharded = dist::shard(attention, {{}, columns(ranks), columns(ranks), columns(ranks), rows(ranks)});
  const tensor<double> got = sharded(x, wq, wk, wv, wo);
  check_close(got, attention(x, wq, wk, wv, wo));
  CHECK(test::same_on_every_rank(got));
  CHECK(sharded.statistics().all_reduces == (ranks > 1 ? 1 : 0));
  CHECK(sharded.statistics().all_gathers == 0);
  CHECK(sharded.statistics().reduce_scatters == 0);
}

namespace {

struct two_layers : nn::module<two_layers> {
  nn::linear<double> first, second;
  explicit two_layers(generator& gen) : first(5, 8 * dist::world_size(), gen), second(8 * dist::world_size(), 5, gen) {
    register_module("first", first);
    register_module("second", second);
  }
  auto forward(const auto& x) const { return second(tandem::tanh(first(x))); }
};

}  // namespace

TEST_CASE("dist::shard: a module's parameters cut by name, as Megatron-LM cuts two linear layers") {
  const int ranks = dist::world_size();
  generator gen(30);
  two_layers model(gen);
  const tensor<double> x = random_tensor({4, 5}, 31);
  no_grad plain;
  auto forward = [&model](const auto& x) { return model(x); };
  const dist::parameter_plan plan(model, {{"first.weight", columns(ranks)},
                                          {"first.bias", {ranks}},
                                          {"second.weight", rows(ranks)}});
  auto sharded = dist::shard(forward, {whole}, {}, plan);
  const tensor<double> got = sharded(x);
  check_close(got, model(x));
  CHECK(test::same_on_every_rank(got));
  CHECK(sharded.statistics().all_reduces == (ranks > 1 ? 1 : 0));
  CHECK(sharded.statistics().all_gathers == 0);
  CHECK_THROWS_WITH_AS(dist::parameter_plan(model, {{"third.weight", rows(ranks)}}),
                       doctest::Contains("the model has no parameter named 'third.weight'"), error);
  if (ranks > 1)
    CHECK_THROWS_WITH_AS(dist::shard(forward, {whole}, {}, dist::parameter_plan(model, {{"second.bias", {ranks}}}))(x),
                         doctest::Contains("parameter 'second.bias' of shape [5] has strategy"), shape_error);
}

namespace {

// The gradients of sum(f(x...) * weights) with respect to each x, eagerly
// on the whole tensors.
template <std::size_t N, class F>
std::vector<tensor<double>> reference_gradients(F f, const std::array<tensor<double>, N>& inputs,
                                                const tensor<double>& weights) {
  std::vector<tensor<double>> leaves;
  for (const auto& x : inputs) leaves.push_back(leaf(x));
  tensor<double> out = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return f(leaves[I]...);
  }(std::make_index_sequence<N>{});
  sum(out * weights).backward();
  std::vector<tensor<double>> grads;
  for (const auto& l : leaves) grads.push_back(l.grad());
  return grads;
}

}  // namespace

TEST_CASE("dist::shard: gradients through the cuts equal the whole function's, on every rank alike") {
  const int ranks = dist::world_size();
  SUBCASE("Megatron-LM's block: x whole, w1 by columns, w2 by rows, a whole output") {
    const tensor<double> x = random_tensor({4, 6}, 40), w1 = random_tensor({6, 8 * ranks}, 41),
                         w2 = random_tensor({8 * ranks, 6}, 42), weights = random_tensor({4, 6}, 43);
    auto block = [](const auto& x, const auto& w1, const auto& w2) { return matmul(tandem::tanh(matmul(x, w1)), w2) + x; };
    const auto want = reference_gradients<3>(block, {x, w1, w2}, weights);
    tensor<double> lx = leaf(x), lw1 = leaf(w1), lw2 = leaf(w2);
    auto sharded = dist::shard(block, {whole, columns(ranks), rows(ranks)});
    sum(sharded(lx, lw1, lw2) * weights).backward();
    check_close(lx.grad(), want[0]);
    check_close(lw1.grad(), want[1]);
    check_close(lw2.grad(), want[2]);
    CHECK(test::same_on_every_rank(lw1.grad()));
  }
  SUBCASE("rows cut in and out: each rank's loss on its block, the gradient of their sum") {
    const tensor<double> x = random_tensor({2 * ranks, 5}, 44), b = random_tensor({5}, 45),
                         weights = random_tensor({2 * ranks, 5}, 46);
    auto f = [](const auto& x, const auto& b) { return tandem::tanh(x * 2.0 + b) * x; };
    const auto want = reference_gradients<2>(f, {x, b}, weights);
    tensor<double> lx = leaf(x), lb = leaf(b);
    auto sharded = dist::shard(f, {rows(ranks), whole}, {rows(ranks)});
    sum(sharded(lx, lb) * block_under(weights, rows(ranks))).backward();
    check_close(lx.grad(), want[0]);
    check_close(lb.grad(), want[1]);
    CHECK(test::same_on_every_rank(lb.grad()));
  }
  SUBCASE("a contracted cut reduce-scattered into rows, and a softmax along the cut axis gathered") {
    const tensor<double> a = random_tensor({2 * ranks, 3 * ranks}, 47), b = random_tensor({3 * ranks, 4}, 48),
                         weights = random_tensor({2 * ranks, 4}, 49);
    auto f = [](const auto& a, const auto& b) { return softmax(matmul(a, b), 0) * sum(a, 1, true); };
    const auto want = reference_gradients<2>(f, {a, b}, weights);
    tensor<double> la = leaf(a), lb = leaf(b);
    auto sharded = dist::shard(f, {columns(ranks), rows(ranks)}, {rows(ranks)});
    sum(sharded(la, lb) * block_under(weights, rows(ranks))).backward();
    check_close(la.grad(), want[0]);
    check_close(lb.grad(), want[1]);
  }
  SUBCASE("max and min over the cut axis: the gradient to the rank holding the extreme") {
    const tensor<double> x = random_tensor({2 * ranks, 3}, 53), weights = random_tensor({3}, 54);
    auto f = [](const auto& x) { return max(x, 0) - min(x * x, 0) * 0.5; };
    const auto want = reference_gradients<1>(f, {x}, weights);
    tensor<double> lx = leaf(x);
    sum(dist::shard(f, {rows(ranks)})(lx) * weights).backward();
    check_close(lx.grad(), want[0]);
  }
  SUBCASE("a module's layers cut by a parameter plan") {
    generator gen(50);
    two_layers model(gen);
    const tensor<double> x = random_tensor({4, 5}, 51), weights = random_tensor({4, 5}, 52);
    sum(model(x) * weights).backward();
    std::vector<tensor<double>> want;
    for (const auto& p : model.named_parameters()) want.push_back(std::get<tensor<double>>(p.value).grad().clone());
    model.zero_grad();
    const dist::parameter_plan plan(model, {{"first.weight", columns(ranks)},
                                            {"first.bias", {ranks}},
                                            {"second.weight", rows(ranks)}});
    auto forward = [&model](const auto& x) { return model(x); };
    sum(dist::shard(forward, {whole}, {}, plan)(x) * weights).backward();
    const auto got = model.named_parameters();
    for (std::size_t p = 0; p < got.size(); ++p) {
      CAPTURE(got[p].name);
      check_close(std::get<tensor<double>>(got[p].value).grad(), want[p]);
    }
  }
}
