// The thread pool: every item runs exactly once, exceptions reach the caller,
// nested calls run inline, and elementwise results do not depend on threads.

#include <atomic>
#include <cstdlib>
#include <thread>
#include <stdexcept>

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("parallel_for covers the range once, in chunks of at least the grain") {
  set_num_threads(4);
  CHECK(num_threads() == 4);
  std::vector<std::atomic<int>> hits(100000);
  std::atomic<int> calls{0};
  detail::parallel_for(100000, 1000, [&](std::int64_t b, std::int64_t e) {
    ++calls;
    CHECK(e - b >= 1000);
    for (std::int64_t i = b; i < e; ++i) ++hits[i];
  });
  for (auto& h : hits) REQUIRE(h == 1);
  CHECK(calls.load() <= 4);
  std::atomic<int> small_calls{0};
  detail::parallel_for(10, 1000, [&](std::int64_t b, std::int64_t e) {
    ++small_calls;
    CHECK(b == 0);
    CHECK(e == 10);
  });
  CHECK(small_calls == 1);
  set_num_threads(0);
}

TEST_CASE("exceptions reach the caller; nested calls run inline") {
  set_num_threads(3);
  CHECK_THROWS_WITH_AS(detail::parallel_for(1000, 1, [](std::int64_t b, std::int64_t) {
                         if (b > 0) throw std::runtime_error("chunk failed");
                       }),
                       "chunk failed", std::runtime_error);
  std::atomic<int> inner{0};
  detail::parallel_for(6, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) detail::parallel_for(100, 1, [&](std::int64_t x, std::int64_t y) { inner += int(y - x); });
  });
  CHECK(inner == 600);
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> total{0};
    detail::parallel_for(64, 1, [&](std::int64_t b, std::int64_t e) { total += int(e - b); });
    REQUIRE(total == 64);
  }
  set_num_threads(0);
}

TEST_CASE("elementwise chains give the same bits on 1 and many threads") {
  tensor<float> x = test::random_tensor<float>({1000003}, -3, 3, 4);
  set_num_threads(1);
  auto one = (tanh(x) * exp(x * 0.1f) + sigmoid(x)).to_vector();
  set_num_threads(4);
  auto many = (tanh(x) * exp(x * 0.1f) + sigmoid(x)).to_vector();
  set_num_threads(0);
  CHECK(one == many);
}

TEST_CASE("TANDEM_NUM_THREADS sizes the pool") {
  set_num_threads(0);
  const char* env = std::getenv("TANDEM_NUM_THREADS");
  if (env) CHECK(num_threads() == std::atoi(env));
  else CHECK(num_threads() == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}
