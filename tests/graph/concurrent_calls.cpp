// Tandem from many threads at once: one static graph called from several
// threads (its plan cache and statistics), eager autograd and grad recording
// per thread, gradients through static graphs in parallel, and eager ops
// whose loops share the thread pool. The thread sanitizer build
// (./tandem.sh tsan) runs this file with the thread pool's and the
// allocator's tests.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "support/check.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

// Runs body(t) on `count` threads that start together.
template <class Body>
void on_threads(int count, const Body& body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < count) std::this_thread::yield();
      body(t);
    });
  for (auto& thread : threads) thread.join();
}

}  // namespace

TEST_CASE("several threads may call one static graph at once") {
  auto f = jit([](auto x) { return sqrt(x) + 1; });
  std::vector<int> ok(4, 0);
  on_threads(4, [&](int t) {
    tensor<float> x = full<float>({100 + t}, 4.0f);
    bool good = true;
    for (int i = 0; i < 50; ++i) good = good && f(x).at(0) == 3.0f;
    ok[t] = good;
  });
  for (int t = 0; t < 4; ++t) CHECK(ok[t] == 1);
  CHECK(f.statistics().misses == 4);
}

TEST_CASE("first calls racing with one signature keep one plan: one miss, every other call a hit") {
  for (int round = 0; round < 20; ++round) {
    auto f = jit([](auto x) { return x * 2 + 1; });
    on_threads(4, [&](int) {
      tensor<float> x = full<float>({64}, 1.0f);
      for (int i = 0; i < 5; ++i) f(x);
    });
    plan_statistics stats = f.statistics();
    INFO("round " << round);
    CHECK(stats.misses == 1);
    CHECK(stats.hits == 19);
    CHECK(stats.signatures.size() == 1);
  }
}

TEST_CASE("each thread records and differentiates its own graphs") {
  auto f = [](const tensor<double>& x) { return sum(exp(x * 0.5) * x); };
  auto g = jit([](const auto& x) { return sum(exp(x * 0.5) * x); });
  std::vector<int> ok(4, 0);
  on_threads(4, [&](int t) {
    tensor<double> x = full<double>({33 + t}, 0.1 * (t + 1));
    bool good = true;
    for (int i = 0; i < 20; ++i) {
      tensor<double> eager = grad(f)(x), fused = grad(g)(x), second = grad(grad(g))(x);
      double v = 0.1 * (t + 1);
      double first = std::exp(v / 2) * (1 + v / 2), twice = std::exp(v / 2) * (1 + v / 4);
      good = good && std::abs(eager.at(0) - first) < 1e-12 && std::abs(fused.at(0) - first) < 1e-12 &&
             std::abs(second.at(0) - twice) < 1e-12;
      // backward() into leaves that belong to this thread.
      tensor<double> leaf = x.detach();
      leaf.set_requires_grad(true);
      g(leaf).backward();
      good = good && std::abs(leaf.grad().at(0) - first) < 1e-12;
    }
    ok[t] = good;
  });
  for (int t = 0; t < 4; ++t) CHECK(ok[t] == 1);
}

TEST_CASE("no_grad in one thread leaves recording on in the others") {
  std::vector<int> recorded(4, -1);
  on_threads(4, [&](int t) {
    tensor<float> x = ones<float>({3});
    x.set_requires_grad(true);
    if (t % 2 == 0) {
      no_grad off;
      for (int i = 0; i < 100; ++i) std::this_thread::yield();
      recorded[t] = (x * 2).requires_grad();
    } else {
      for (int i = 0; i < 100; ++i) std::this_thread::yield();
      recorded[t] = (x * 2).requires_grad();
    }
  });
  CHECK(recorded == std::vector<int>{0, 1, 0, 1});
}

TEST_CASE("eager ops from several threads share the thread pool and agree with one thread") {
  tensor<float> x = test::random_tensor<float>({1 << 18}, -2, 2, 3);
  tensor<float> want = tanh(x) * 2 + exp(x * 0.25f);
  float want_sum = sum(want).item();
  std::vector<int> ok(4, 0);
  on_threads(4, [&](int t) {
    bool good = true;
    for (int i = 0; i < 10; ++i) {
      tensor<float> got = tanh(x) * 2 + exp(x * 0.25f);
      good = good && got.to_vector() == want.to_vector() && sum(got).item() == want_sum;
    }
    ok[t] = good;
  });
  for (int t = 0; t < 4; ++t) CHECK(ok[t] == 1);
}
