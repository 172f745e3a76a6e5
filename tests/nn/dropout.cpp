// Dropout (seeded masks, scaling, evaluation) and embedding lookups, with
// gradients, eagerly and in a static graph.
#include <doctest/doctest.h>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

TEST_CASE("dropout keeps about 1 - p of the elements, scaled, from a seeded mask") {
  nn::dropout a(0.25, 7), b(0.25, 7);
  tensor<float> x = ones<float>({100000});
  tensor<float> ya = a(x), yb = b(x);
  test::check_values(ya, yb, "the same seed, the same mask");
  double kept = mean((ya != 0.0f).astype<double>()).item();
  CHECK(kept == doctest::Approx(0.75).epsilon(0.01));
  CHECK(max(ya).item() == doctest::Approx(1 / 0.75));
  CHECK(a(x).to_vector() != ya.to_vector());
  a.eval();
  test::check_values(a(x), x, "evaluation is the identity");
  CHECK_THROWS_AS(nn::dropout(1.0), value_error);

  nn::dropout c(0.5, 3);
  tensor<double> v = test::random_tensor<double>({64}, -1, 1, 4);
  v.set_requires_grad(true);
  set_mode(mode::graph);
  tensor<double> out = c(v);
  set_mode(mode::eager);
  sum(out).backward();
  for (std::int64_t i = 0; i < 64; ++i) CHECK(v.grad().at(i) == (out.at(i) != 0 ? 2.0 : 0.0));
}

TEST_CASE("embedding looks rows up for indices of any shape; gradients add into the rows") {
  generator gen(5);
  nn::embedding<double> table(10, 3, gen);
  tensor<std::int64_t> index{{1, 4}, {4, 9}};
  tensor<double> rows = table(index);
  CHECK(rows.shape() == shape{2, 2, 3});
  for (std::int64_t k = 0; k < 3; ++k) CHECK(rows.at(1, 0, k) == table.weight.at(4, k));
  set_mode(mode::graph);
  tensor<double> graph_rows = table(index);
  set_mode(mode::eager);
  test::check_values(graph_rows, rows, "static");
  auto with = [&](const std::vector<tensor<double>>& v) {
    table.weight = v[0];
    return table(index) * 2.0;
  };
  test::check_gradients(with, {table.weight.detach()}, "eager");
  set_mode(mode::graph);
  test::check_gradients(with, {table.weight.detach()}, "static");
  set_mode(mode::eager);
  CHECK_THROWS_AS(table(tensor<std::int64_t>{10}), index_error);
}
