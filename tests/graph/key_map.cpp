#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tandem/graph/key_map.hpp"

using tandem::detail::key_map;

namespace {

// A value that counts the live copies, so that every slot's value is seen
// destroyed exactly once (erase, growth, the map's end).
struct counted {
  static inline int live = 0;
  std::string text;
  explicit counted(std::string t) : text(std::move(t)) { ++live; }
  counted(counted&& other) noexcept : text(std::move(other.text)) { ++live; }
  counted(const counted&) = delete;
  ~counted() { --live; }
};

TEST_CASE("key_map: find, try_emplace, emplace keeps the first value") {
  int a = 0, b = 0;
  key_map<int> map;
  CHECK(map.find(&a) == nullptr);
  auto [at, fresh] = map.try_emplace(&a, 1);
  CHECK(fresh);
  CHECK(*at == 1);
  auto [again, fresh_again] = map.try_emplace(&a, 2);
  CHECK_FALSE(fresh_again);
  CHECK(again == at);
  map.emplace(&a, 3);
  CHECK(*map.find(&a) == 1);
  map.emplace(&b, 4);
  CHECK(*map.find(&b) == 4);
  CHECK(map.size() == 2);
  map.erase(&a);
  map.erase(&a);
  CHECK(map.find(&a) == nullptr);
  CHECK(*map.find(&b) == 4);
  CHECK(map.size() == 1);
}

TEST_CASE("key_map: agrees with std::map over random inserts and erases, and destroys every value once") {
  // Keys are addresses in one array, as a call's nodes sit close together;
  // 4 KB of them force growth and long probe runs.
  std::vector<std::int64_t> objects(512);
  std::mt19937 random(7);
  {
    key_map<counted> map;
    std::map<const void*, std::string> reference;
    for (int step = 0; step < 20000; ++step) {
      const void* key = &objects[random() % objects.size()];
      switch (random() % 4) {
        case 0:
        case 1: {
          std::string text = std::to_string(step);
          auto [at, fresh] = map.try_emplace(key, text);
          auto [expected, inserted] = reference.try_emplace(key, text);
          REQUIRE(fresh == inserted);
          REQUIRE(at->text == expected->second);
          break;
        }
        case 2:
          map.erase(key);
          reference.erase(key);
          break;
        default: {
          const counted* found = map.find(key);
          auto expected = reference.find(key);
          REQUIRE((found != nullptr) == (expected != reference.end()));
          if (found) REQUIRE(found->text == expected->second);
        }
      }
      REQUIRE(map.size() == reference.size());
      REQUIRE(counted::live == static_cast<int>(reference.size()));
    }
    std::map<const void*, std::string> seen;
    map.for_each([&](const void* key, const counted& value) { seen.emplace(key, value.text); });
    CHECK(seen == reference);
    key_map<counted> moved(std::move(map));
    CHECK(moved.size() == reference.size());
    CHECK(map.size() == 0);
    CHECK(map.find(&objects[0]) == nullptr);
  }
  CHECK(counted::live == 0);
}

TEST_CASE("key_map with inline slots: fills them, spills to the heap, and moves in either state") {
  std::vector<std::int64_t> objects(64);
  {
    key_map<counted, 8> map;
    // Six entries fit the eight inline slots (the table grows at 3/4).
    for (int k = 0; k < 6; ++k) map.emplace(&objects[k], std::to_string(k));
    CHECK(counted::live == 6);
    key_map<counted, 8> inline_moved(std::move(map));
    CHECK(map.size() == 0);
    CHECK(map.find(&objects[0]) == nullptr);
    CHECK(counted::live == 6);
    for (int k = 0; k < 6; ++k) {
      REQUIRE(inline_moved.find(&objects[k]) != nullptr);
      CHECK(inline_moved.find(&objects[k])->text == std::to_string(k));
    }
    for (int k = 6; k < 40; ++k) inline_moved.emplace(&objects[k], std::to_string(k));
    inline_moved.erase(&objects[3]);
    key_map<counted, 8> heap_moved(std::move(inline_moved));
    CHECK(heap_moved.size() == 39);
    CHECK(counted::live == 39);
    CHECK(heap_moved.find(&objects[3]) == nullptr);
    for (int k = 0; k < 40; ++k)
      if (k != 3) CHECK(heap_moved.find(&objects[k])->text == std::to_string(k));
  }
  CHECK(counted::live == 0);
}

TEST_CASE("key_map: clear destroys every value, inline or on the heap, and the map fills again") {
  std::vector<std::int64_t> objects(64);
  key_map<counted, 8> map;
  for (int entries : {5, 40}) {
    for (int k = 0; k < entries; ++k) map.emplace(&objects[k], std::to_string(k));
    CHECK(counted::live == entries);
    map.clear();
    CHECK(map.size() == 0);
    CHECK(counted::live == 0);
    CHECK(map.find(&objects[0]) == nullptr);
  }
  map.emplace(&objects[7], "seven");
  CHECK(map.find(&objects[7])->text == "seven");
}

}  // namespace
