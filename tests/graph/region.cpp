// A region of a traced graph rebuilt over other leaves (graph/region.hpp):
// its leaves and ops counted from the type, the rebuilt graph one fused
// loop, and its values against a double reference loop on sizes that hit
// SIMD tails, strided views and broadcasting, alone and under a sum.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/check.hpp"
#include "tandem/graph/region.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

// tanh(x * 2 + y) - x * y, the scalar kept in the region.
auto expression = [](const auto& x, const auto& y) { return tandem::tanh(x * 2.0 + y) - x * y; };
auto identity = [](const auto& v) { return v; };

template <class X, class Y>
auto traced_expression() {
  return expression(sym<detail::input_node<0, X>>{}, sym<detail::input_node<1, Y>>{});
}

}  // namespace

TEST_CASE("region: its leaves and ops, counted from the graph's type, each path's leaf once") {
  using root = decltype(traced_expression<double, double>())::node_type;
  static_assert(detail::region_leaves<root> == 4, "x and y under the tanh, x and y in the product");
  static_assert(detail::region_ops<root> == 5);
  static_assert(std::is_same_v<detail::region_leaf_types<root>::type,
                               std::tuple<tensor<double>, tensor<double>, tensor<double>, tensor<double>>>);
  // A sum is no elementwise op: it is a leaf of the region above it.
  auto above_sum = sum(sym<detail::input_node<0, float>>{}) * sym<detail::input_node<0, float>>{};
  static_assert(detail::region_leaves<decltype(above_sum)::node_type> == 2);
  static_assert(detail::region_ops<decltype(above_sum)::node_type> == 1);
}

TEST_CASE("region: the rebuilt graph is one fused loop with no buffer") {
  const auto root = traced_expression<double, double>();
  auto rebuilt = detail::region_function<decltype(root)::node_type, decltype(identity)>{&root, identity};
  auto graph = jit(rebuilt);
  using structure = detail::graph_structure<decltype(graph.trace(std::declval<tensor<double>>(),
                                                                 std::declval<tensor<double>>(),
                                                                 std::declval<tensor<double>>(),
                                                                 std::declval<tensor<double>>()))>;
  static_assert(structure::fusion_groups == 1 && structure::buffers == 0);
}

TEST_CASE("region: values against a double reference loop, with broadcasting, strided views and a sum") {
  const auto root = traced_expression<float, float>();
  for (std::int64_t n : test::tail_sizes) {
    CAPTURE(n);
    const tensor<float> x = test::random_tensor<float>({3, n}, -2, 2, 1);
    const tensor<float> row = test::random_tensor<float>({n}, -2, 2, 2);
    std::vector<double> want(static_cast<std::size_t>(3 * n)), want_sums(static_cast<std::size_t>(n), 0.0);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double a = x.data()[i * n + j], b = row.data()[j];
        const double v = std::tanh(a * 2.0 + b) - a * b;
        want[static_cast<std::size_t>(i * n + j)] = v;
        want_sums[static_cast<std::size_t>(j)] += v;
      }
    for (const auto& [name, view] : test::layouts(x)) {
      const tensor<float> got = detail::run_region(root, identity, view, row, view, row);
      test::check_values(got, {3, n}, want, name, 2e-6, 2e-6);
      auto column_sums = [](const auto& v) { return sum(v, 0); };
      const tensor<float> sums = detail::run_region(root, column_sums, view, row, view, row);
      test::check_values(sums, {n}, want_sums, name + ", summed", 1e-5, 1e-5);
    }
    // Over tensors, the rebuilt region is the eager value.
    test::check_values(detail::rebuild_region<0>(root, std::forward_as_tuple(x, row, x, row)), {3, n}, want,
                       "eager", 2e-6, 2e-6);
  }
}
