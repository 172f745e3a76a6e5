#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "tandem/graph/node_ref.hpp"

using tandem::detail::confined_call;
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

TEST_CASE("node_ref: a node made in a confined call, kept past it and shared with other threads") {
  // Inside the call its counts are plain; once the call is over, every
  // thread's are atomic, the maker's included.
  std::thread([] {}).join();
  int destroyed = 0;
  std::vector<node_ref<counting_node>> kept;
  {
    confined_call call;
    auto made = node_ref<counting_node>::make(5, &destroyed);
    for (int i = 0; i < 8; ++i) kept.push_back(made);
    node_ref<counting_node> dropped = made;
  }
  CHECK(destroyed == 0);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&kept, &wrong, t] {
      for (int i = 0; i < 10000; ++i) {
        node_ref<counting_node> copy = kept[t];
        if (copy->value != 5) ++wrong;
      }
      kept[t] = node_ref<counting_node>();
    });
  for (int i = 0; i < 10000; ++i) {
    confined_call another;
    node_ref<counting_node> copy = kept[4];
    if (copy->value != 5) ++wrong;
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(destroyed == 0);
  kept.clear();
  CHECK(destroyed == 1);
}

TEST_CASE("confined_call: a nested call stays in the outer region; every call has a region of its own") {
  CHECK(confined_call::current() == 0);
  std::uint64_t first = 0, second = 0, other_thread = 0;
  {
    confined_call outer;
    first = confined_call::current();
    {
      confined_call nested;
      CHECK(confined_call::current() == first);
    }
    CHECK(confined_call::current() == first);
    std::thread([&] {
      confined_call elsewhere;
      other_thread = confined_call::current();
    }).join();
  }
  CHECK(confined_call::current() == 0);
  {
    confined_call next;
    second = confined_call::current();
  }
  CHECK(first != 0);
  CHECK(second != first);
  CHECK(other_thread != 0);
  CHECK(other_thread != first);
  CHECK(other_thread != second);
}

}  // namespace
