#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "tandem/graph/node_ref.hpp"

using tandem::detail::node_ref;

namespace {

// A node that counts its destructions, as a traced node holding a tensor
// would release it.
struct counting_node {
  int value;
  int* destroyed;
  counting_node(int v, int* d) : value(v), destroyed(d) {}
  counting_node(const counting_node&) = delete;
  ~counting_node() { ++*destroyed; }
};

TEST_CASE("node_ref: copies share one node, destroyed once with the last owner") {
  int destroyed = 0;
  {
    auto a = node_ref<counting_node>::make(7, &destroyed);
    CHECK(a->value == 7);
    node_ref<counting_node> b = a;
    CHECK(b.get() == a.get());
    node_ref<counting_node> c = std::move(a);
    CHECK(a.get() == nullptr);
    CHECK(c.get() == b.get());
    c = b;
    CHECK(c.get() == b.get());
    b = node_ref<counting_node>{};
    CHECK(destroyed == 0);
    CHECK((*c).value == 7);
  }
  CHECK(destroyed == 1);
}

TEST_CASE("node_ref: assignment releases the node it held") {
  int first = 0, second = 0;
  auto a = node_ref<counting_node>::make(1, &first);
  auto b = node_ref<counting_node>::make(2, &second);
  a = b;
  CHECK(first == 1);
  CHECK(second == 0);
  a = std::move(a);
  CHECK(a->value == 2);
}

TEST_CASE("node_ref: owners on several threads") {
  int destroyed = 0;
  {
    auto shared = node_ref<counting_node>::make(3, &destroyed);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([shared, &wrong] {
        for (int i = 0; i < 10000; ++i) {
          node_ref<counting_node> copy = shared;
          if (copy->value != 3) ++wrong;
        }
      });
    for (auto& thread : threads) thread.join();
    CHECK(wrong == 0);
    CHECK(destroyed == 0);
  }
  CHECK(destroyed == 1);
}

}  // namespace
