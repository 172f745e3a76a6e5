// Gradient-ready hooks (autograd/gradient_ready.hpp): each fires once per
// backward with the leaf's finished gradient, as soon as the ops that send
// to it have run (before older leaves' gradients are done), and never for
// grad(); handles remove them; only leaves take them.

#include <string>
#include <vector>

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("on_gradient_ready: once per backward, with every part of the gradient added") {
  tensor<double> w{1, 2, 3};
  w.set_requires_grad();
  std::vector<std::vector<double>> seen;
  hook_handle handle = on_gradient_ready(w, [&](const tensor<double>& g) { seen.push_back(g.to_vector()); });
  sum(w * w + w).backward();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::vector<double>{3, 5, 7});
  // A second backward adds to the gradient; the hook sees the sum.
  sum(w * 2.0).backward();
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == std::vector<double>{5, 7, 9});
  // grad() leaves nothing in the leaf, and calls nothing.
  grad([](const tensor<double>& x) { return sum(x * x); })(w);
  CHECK(seen.size() == 2);
  handle.reset();
  sum(w).backward();
  CHECK(seen.size() == 2);
}

TEST_CASE("on_gradient_ready: a leaf fires once its ops have run, before older leaves it does not wait for") {
  tensor<double> early = full<double>({4}, 0.5), late = full<double>({4}, 2.0);
  early.set_requires_grad();
  late.set_requires_grad();
  // The first step makes both accumulators, `late`'s first: in sequence
  // order alone, `late` would run last from now on.
  sum(late * early).backward();
  std::vector<std::string> order;
  hook_handle a = on_gradient_ready(early, [&](const tensor<double>&) { order.push_back("early"); });
  hook_handle b = on_gradient_ready(late, [&](const tensor<double>&) { order.push_back("late"); });
  // Now `late` is used last: its gradient is done first, though its
  // accumulator is older than every node of this graph.
  tensor<double> h = tandem::tanh(tandem::exp(early) * 3.0);
  sum(h * late).backward();
  CHECK(order == std::vector<std::string>{"late", "early"});
  CHECK(late.grad().to_vector() == (tandem::tanh(tandem::exp(early) * 3.0) + early).detach().to_vector());
}

TEST_CASE("on_gradient_ready: a handle dropped removes its hook; only leaves that require a gradient take one") {
  tensor<float> w = full<float>({2}, 1.0f);
  w.set_requires_grad();
  int calls = 0;
  {
    hook_handle scoped = on_gradient_ready(w, [&](const tensor<float>&) { ++calls; });
    sum(w).backward();
  }
  sum(w).backward();
  CHECK(calls == 1);
  hook_handle moved = on_gradient_ready(w, [&](const tensor<float>&) { ++calls; });
  hook_handle other = std::move(moved);
  sum(w).backward();
  CHECK(calls == 2);
  CHECK_THROWS_WITH_AS((void)on_gradient_ready(w * 2.0f, [](const tensor<float>&) {}),
                       doctest::Contains("is not a leaf that requires a gradient"), error);
  CHECK_THROWS_WITH_AS((void)on_gradient_ready(full<float>({2}, 1.0f), [](const tensor<float>&) {}),
                       doctest::Contains("of shape [2] is not a leaf"), error);
}

TEST_CASE("on_gradient_ready: a handle outliving its tensor removes nothing and leaves the engine counting nothing") {
  const std::int64_t before = detail::ready_hook_count().load();
  hook_handle outliving;
  {
    tensor<double> w{1, 2};
    w.set_requires_grad();
    outliving = on_gradient_ready(w, [](const tensor<double>&) {});
    CHECK(detail::ready_hook_count().load() == before + 1);
  }
  outliving.reset();
  CHECK(detail::ready_hook_count().load() == before);
  // With no hook left, a backward runs as before.
  tensor<double> v{3, 4};
  v.set_requires_grad();
  sum(v * v).backward();
  CHECK(v.grad().to_vector() == std::vector<double>{6, 8});
}
