#include <doctest/doctest.h>

#include <thread>
#include <utility>

#include "tandem/tandem.hpp"
#include "support/check.hpp"

using namespace tandem;

namespace {

// Counts its destructions, to see when the last owner lets go.
struct counted_node {
  int* destroyed;
  int value;
  ~counted_node() { ++*destroyed; }
};

}  // namespace

TEST_CASE("shared_node: copies share one node, which the last owner destroys") {
  int destroyed = 0;
  {
    auto a = detail::shared_node<counted_node>::make(&destroyed, 7);
    auto b = a;
    CHECK(b.get() == a.get());
    CHECK((*b).value == 7);
    detail::shared_node<counted_node> c;
    CHECK(c.get() == nullptr);
    c = b;
    auto moved = std::move(a);
    CHECK(a.get() == nullptr);
    CHECK(moved.get() == b.get());
    CHECK(destroyed == 0);
  }
  CHECK(destroyed == 1);
}

TEST_CASE("shared_node: the last owner may be on another thread") {
  int destroyed = 0;
  auto node = detail::shared_node<counted_node>::make(&destroyed, 1);
  std::thread other([kept = node]() mutable { kept = {}; });
  node = {};
  other.join();
  CHECK(destroyed == 1);
}

TEST_CASE("shared_node: a trace's nodes are not counted as tensor memory") {
  tensor<float> x = full<float>({64}, 0.5f), y = full<float>({64}, 1.5f);
  // Literals make every node above them hold a value, so each is a shared node.
  auto f = jit([](const auto& a, const auto& b) { return exp(a * b + 1.0f) / (b + 2.0f) - a; });
  tensor<float> warm = f(x, y);
  CHECK(test::allocations_during([&] { tensor<float> out = f(x, y); }) ==
        test::allocations_during([] { tensor<float> one_output({64}); }));
  CHECK(warm.at(0) == doctest::Approx(std::exp(0.5 * 1.5 + 1.0) / 3.5 - 0.5).epsilon(1e-6));
}
