// A program's builds of its static graphs' loops (graph/kernel_build.hpp,
// tandem_graph_kernels): with a build of the library chosen, every loop a
// run of each graph asks for (forward groups, fused backward, a sum in its
// operand's loop alone and with its backward in the same pass, a product's
// epilogue) is that level's, and computes what the double-precision
// reference does; with the program's own kernels running, none is.

#include "graph/kernel_build_graphs.hpp"
#include "support/check.hpp"
#include "support/kernel_builds.hpp"
#include "tandem/graph/kernel_build.hpp"

using namespace tandem;

namespace {

// How many of the graph's loops have a build's function in their slot, and
// how many loops it has.
template <class G, class... A>
std::pair<int, int> installed_rows() {
  int installed = 0, rows = 0;
  detail::for_each_graph_row<detail::traced_root_t<G, A...>>(
      [&]<class R, class C, class Op, class Out, class... In>(std::type_identity<detail::row_signature<R, C, Op, Out, In...>>) {
        ++rows;
        installed += detail::dispatched_row<R, C, Op, Out, In...>.load() != nullptr;
      });
  return {installed, rows};
}

template <class T>
tensor<T> seeded(const shape& s, std::uint64_t seed) {
  generator gen(seed);
  return uniform<T>(s, -1, 1, gen);
}

}  // namespace

TEST_CASE("a build of a program's graph loops is chosen with the library's build of its level") {
  test::kernels_restored restore;
  using chain_type = decltype(kernel_build_test::chain);
  using loss_type = decltype(kernel_build_test::loss);
  using layer_type = decltype(kernel_build_test::layer);

  set_kernel_instruction_set(compiled_instruction_set);
  if (kernel_instruction_set() == compiled_instruction_set) {
    auto [installed, rows] = installed_rows<chain_type, tensor<float>>();
    CHECK(rows == 2);
    CHECK(installed == 0);
  }
  for (instruction_set level : test::runnable_levels()) {
    INFO("build ", to_string(level));
    REQUIRE(set_kernel_instruction_set(level) == level);
    if (level == compiled_instruction_set) continue;
    // The chain: one group, and its backward. The loss: a sum in its operand's loop, that loop
    // with its backward in one pass, and its backward alone. The layer: the
    // epilogue's group, a group reading its value twice, their backwards.
    CHECK(installed_rows<chain_type, tensor<float>>() == std::pair{2, 2});
    CHECK(installed_rows<chain_type, tensor<double>>() == std::pair{2, 2});
    CHECK(installed_rows<loss_type, tensor<float>, tensor<float>>() == std::pair{3, 3});
    CHECK(installed_rows<layer_type, tensor<float>, tensor<float>, tensor<float>>() == std::pair{4, 4});
  }
}

TEST_CASE("a graph's built loops compute what double precision does, forward and backward") {
  test::kernels_restored restore;
  auto chain = jit(kernel_build_test::chain);
  auto loss = jit(kernel_build_test::loss);
  auto layer = jit(kernel_build_test::layer);

  // The references: each function eagerly, in double.
  set_kernel_instruction_set(instruction_set::generic);
  std::vector<std::vector<double>> chain_want;
  for (std::int64_t n : test::tail_sizes)
    chain_want.push_back(test::values_of(kernel_build_test::chain(seeded<double>({n}, 1))));
  tensor<double> x = seeded<double>({33, 19}, 2), y = seeded<double>({33, 19}, 3);
  auto [loss_dx, loss_dy] = grad(kernel_build_test::loss, all_args)(x, y);
  tensor<double> loss_want = kernel_build_test::loss(x, y);
  tensor<double> a = seeded<double>({13, 70}, 4), w = seeded<double>({70, 10}, 5), b = seeded<double>({10}, 6);
  auto layer_sum = [](const auto& p, const auto& q, const auto& r) { return sum(kernel_build_test::layer(p, q, r)); };
  tensor<double> layer_want = kernel_build_test::layer(a, w, b);
  auto [layer_da, layer_dw, layer_db] = grad(layer_sum, all_args)(a, w, b);

  for (instruction_set level : test::runnable_levels()) {
    INFO("build ", to_string(level));
    REQUIRE(set_kernel_instruction_set(level) == level);
    for (std::size_t k = 0; k < test::tail_sizes.size(); ++k) {
      std::int64_t n = test::tail_sizes[k];
      test::check_values(chain(seeded<float>({n}, 1)), shape{n}, chain_want[k], "chain, " + std::to_string(n));
    }
    // A strided view runs the same loop through its strides.
    tensor<float> wide = seeded<float>({17, 2}, 7);
    test::check_values(chain(wide.slice(1, 0, 1)), kernel_build_test::chain(wide.slice(1, 0, 1)), "chain on a view");

    tensor<float> xf = x.astype<float>(), yf = y.astype<float>();
    test::check_values(loss(xf, yf), loss_want.shape(), test::values_of(loss_want), "loss", 1e-5, 1e-4);
    auto [dx, dy] = grad(loss, all_args)(xf, yf);
    test::check_values(dx, loss_dx.shape(), test::values_of(loss_dx), "loss, d/dx");
    test::check_values(dy, loss_dy.shape(), test::values_of(loss_dy), "loss, d/dy");

    tensor<float> af = a.astype<float>(), wf = w.astype<float>(), bf = b.astype<float>();
    test::check_values(layer(af, wf, bf), layer_want.shape(), test::values_of(layer_want), "layer");
    auto layer_graph_sum = [&](const auto& p, const auto& q, const auto& r) { return sum(layer(p, q, r)); };
    auto [da, dw, db] = grad(layer_graph_sum, all_args)(af, wf, bf);
    test::check_values(da, layer_da.shape(), test::values_of(layer_da), "layer, d/da");
    test::check_values(dw, layer_dw.shape(), test::values_of(layer_dw), "layer, d/dw");
    test::check_values(db, layer_db.shape(), test::values_of(layer_db), "layer, d/db");
  }
}
