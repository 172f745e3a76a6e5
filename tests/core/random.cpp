// Seeded random tensors: reproducible, independent of the thread count, and
// with the moments their distributions promise.

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("the same seed gives the same numbers; draws advance the generator") {
  generator a(7), b(7), c(8);
  auto x = uniform({1000}, -1, 1, a);
  CHECK(x.to_vector() == uniform({1000}, -1, 1, b).to_vector());
  CHECK(x.to_vector() != uniform({1000}, -1, 1, c).to_vector());
  CHECK(uniform({1000}, -1, 1, a).to_vector() != x.to_vector());
}

TEST_CASE("numbers do not depend on the thread count") {
  generator one(3), many(3);
  set_num_threads(1);
  auto first = normal<double>({300001}, 0, 1, one);
  set_num_threads(4);
  auto second = normal<double>({300001}, 0, 1, many);
  set_num_threads(0);
  CHECK(first.to_vector() == second.to_vector());
}

TEST_CASE("distributions have their moments and ranges") {
  generator gen(11);
  auto u = uniform<double>({200000}, 2, 5, gen);
  CHECK(min(u).item() >= 2);
  CHECK(max(u).item() < 5);
  CHECK(mean(u).item() == doctest::Approx(3.5).epsilon(0.01));
  auto n = normal<double>({200000}, 1, 2, gen);
  CHECK(mean(n).item() == doctest::Approx(1).epsilon(0.02));
  CHECK(tandem::std(n).item() == doctest::Approx(2).epsilon(0.02));
  auto k = integers<std::int32_t>({100000}, -3, 4, gen);
  CHECK(min(k).item() == -3);
  CHECK(max(k).item() == 3);
  CHECK(mean(k).item() == doctest::Approx(0).epsilon(0.02).scale(1));
  auto f = uniform<float>({100000}, 0, 1e-30, gen);
  CHECK(max(f).item() < 1e-30f);
}

TEST_CASE("bad parameters are refused") {
  generator gen;
  CHECK_THROWS_WITH_AS(uniform({2}, 1, 1, gen), "tandem::uniform: low must be below high (got 1.000000, 1.000000)",
                       value_error);
  CHECK_THROWS_AS(normal({2}, 0, -1, gen), value_error);
  CHECK_THROWS_AS(integers({2}, 5, 5, gen), value_error);
}
