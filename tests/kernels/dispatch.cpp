// The run-time choice among kernel builds (kernels/cpu/dispatch.hpp): at
// load the highest build the CPU runs is chosen, whatever the flags the
// program was compiled with; every build computes what the double-precision
// reference computes (elementwise ops, products, reductions over rows and
// columns, softmax, batch normalization, convolution, pooling), the exactly
// rounded ops bit for bit alike, and capture's register chains the same bits
// as that build's rows.

#include <algorithm>
#include <cstdlib>
#include <string>

#include "support/check.hpp"
#include "support/kernel_builds.hpp"

using namespace tandem;

namespace {

// Runs `run` (tensors in, tensors out, for a value type T given by a
// dummy argument) in double on the program's own kernels, then in float on
// each build, whose results must be close to double's (test::close with
// `rel` and `abs`); returns each build's.
template <class Run>
std::vector<std::pair<instruction_set, std::vector<tensor<float>>>> check_builds_against_double(Run run, double rel,
                                                                                                double abs) {
  set_kernel_instruction_set(instruction_set::generic);
  const std::vector<tensor<double>> want = run(0.0);
  std::vector<std::pair<instruction_set, std::vector<tensor<float>>>> results;
  for (instruction_set level : test::runnable_levels()) {
    INFO("build ", to_string(level));
    REQUIRE(set_kernel_instruction_set(level) == level);
    std::vector<tensor<float>> got = run(0.0f);
    for (std::size_t k = 0; k < got.size(); ++k)
      for (std::int64_t i = 0; i < got[k].numel(); ++i)
        REQUIRE(test::close(got[k].data()[i], want[k].data()[i], rel, abs));
    results.emplace_back(level, got);
  }
  return results;
}

instruction_set ceiling_in_environment() {
  instruction_set ceiling = instruction_set::avx512;
  if (const char* value = std::getenv("TANDEM_ISA")) instruction_set_named(value, ceiling);
  return ceiling;
}

}  // namespace

TEST_CASE("instruction sets are named as TANDEM_ISA spells them") {
  for (instruction_set level : {instruction_set::generic, instruction_set::sse2, instruction_set::sse4_2,
                                instruction_set::avx2, instruction_set::avx512}) {
    instruction_set named = instruction_set::generic;
    CHECK(instruction_set_named(to_string(level), named));
    CHECK(named == level);
  }
  instruction_set unchanged = instruction_set::avx2;
  CHECK_FALSE(instruction_set_named("avx3", unchanged));
  CHECK(unchanged == instruction_set::avx2);
}

TEST_CASE("at load, the highest kernels the CPU runs under TANDEM_ISA's ceiling are chosen") {
  const instruction_set limit = std::min(ceiling_in_environment(), cpu_instruction_set());
  instruction_set expected = compiled_instruction_set <= limit ? compiled_instruction_set : instruction_set::generic;
  bool build_fits = false;
  for (instruction_set level : kernel_builds())
    if (level <= limit) {
      expected = std::max(expected, level);
      build_fits = true;
    }
  if (!build_fits) expected = compiled_instruction_set;
  INFO("cpu ", to_string(cpu_instruction_set()), ", compiled for ", to_string(compiled_instruction_set),
       ", running ", to_string(kernel_instruction_set()));
  CHECK(kernel_instruction_set() == expected);
  CHECK(kernel_instruction_set() <= std::max(limit, compiled_instruction_set));
#if defined(__x86_64__) && defined(TANDEM_COMPILED_LIBRARY) && (defined(__GNUC__) || defined(__clang__))
  // What dispatch is for: a program compiled for less runs the CPU's best.
  if (!kernel_builds().empty() && limit >= instruction_set::avx2) CHECK(kernel_instruction_set() >= instruction_set::avx2);
#endif
}

TEST_CASE("a ceiling below every build runs the program's own kernels") {
  test::kernels_restored restore;
  CHECK(set_kernel_instruction_set(instruction_set::generic) == compiled_instruction_set);
  CHECK(kernel_instruction_set() == compiled_instruction_set);
}

TEST_CASE("a build that runs fills the dispatch slots of its kernels; the program's own leave them empty") {
  test::kernels_restored restore;
  auto filled = [] {
    using namespace tandem::detail;
    return std::vector<bool>{dispatched_row<float, float, add_op, float*, float, float>.load() != nullptr,
                             dispatched_row<double, double, tanh_op, double*, double>.load() != nullptr,
                             dispatched_gemm<float>.load() != nullptr,
                             dispatched_gemm<double>.load() != nullptr,
                             dispatched_reduce_span<sum_reducer, float, float>.load() != nullptr,
                             dispatched_combine_into<max_reducer, double, double>.load() != nullptr,
                             dispatched_softmax_rows<true, float>.load() != nullptr,
                             dispatched_middle_moments<double>.load() != nullptr,
                             dispatched_max_pool_2x2_backward<float>.load() != nullptr,
                             dispatched_conv2d_backward_kernel<double>.load() != nullptr,
                             dispatched_batch_norm_backward<float>.load() != nullptr,
                             dispatched_chain_kernels.load() != nullptr};
  };
  set_kernel_instruction_set(instruction_set::generic);
  CHECK(filled() == std::vector<bool>(12, false));
  for (instruction_set level : test::runnable_levels()) {
    INFO("build ", to_string(level));
    set_kernel_instruction_set(level);
    // Every build runs but the one at the program's own level: there the
    // program's own kernels run.
    const bool build_runs = level != compiled_instruction_set;
    CHECK(filled() == std::vector<bool>(12, build_runs));
  }
}

TEST_CASE("every build computes elementwise ops as the reference does, the exact ones bit for bit alike") {
  test::kernels_restored restore;
  for (std::int64_t n : test::tail_sizes) {
    const tensor<float> x = test::random_tensor<float>({n}, -2, 2, 1);
    const tensor<float> y = test::random_tensor<float>({n}, 0.5, 2, 2);
    set_kernel_instruction_set(restore.at_start);
    const tensor<float> exact_here = (x * y + x) / y - sqrt(y);
    std::vector<double> exact(static_cast<std::size_t>(n)), smooth(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const double a = x.data()[i], b = y.data()[i];
      exact[static_cast<std::size_t>(i)] = (a * b + a) / b - std::sqrt(b);
      smooth[static_cast<std::size_t>(i)] =
          std::tanh(a * b) + 1 / (1 + std::exp(-a)) + std::exp(b) * (a > b ? 1 : 0) + std::sin(a * 3) * std::cos(b);
    }
    for (instruction_set level : test::runnable_levels()) {
      INFO("build ", to_string(level), ", n = ", n);
      REQUIRE(set_kernel_instruction_set(level) == level);
      const tensor<float> exact_there = (x * y + x) / y - sqrt(y);
      test::check_values(exact_there, {n}, exact, "exact ops");
      CHECK(std::equal(exact_there.data(), exact_there.data() + n, exact_here.data()));
      const tensor<float> smooth_there = tanh(x * y) + sigmoid(x) + where(x > y, exp(y), 0.0f) + sin(x * 3) * cos(y);
      test::check_values(smooth_there, {n}, smooth, "tanh, sigmoid, exp, where, sin, cos");
    }
  }
}

TEST_CASE("every build runs broadcast and strided operands") {
  test::kernels_restored restore;
  const tensor<double> base = test::random_tensor<double>({17, 33}, -1, 1, 3);
  const tensor<double> row = test::random_tensor<double>({33}, -1, 1, 4);
  for (instruction_set level : test::runnable_levels()) {
    REQUIRE(set_kernel_instruction_set(level) == level);
    for (const auto& layout_and_values : test::layouts(base)) {
      // Named, not bound: clang 14's lambdas cannot capture a structured binding.
      const std::string& layout = layout_and_values.first;
      const tensor<double>& x = layout_and_values.second;
      INFO("build ", to_string(level), ", ", layout);
      const tensor<double> got = exp(x) * row - maximum(x, row);
      std::vector<double> want;
      test::for_each_index(got.shape(), [&](const std::vector<std::int64_t>& at) {
        const double a = test::at_broadcast(x, at), b = row.data()[at[1]];
        want.push_back(std::exp(a) * b - std::max(a, b));
      });
      test::check_values(got, {17, 33}, want, layout);
    }
  }
}

TEST_CASE("every build multiplies matrices as the reference does; AVX2 and AVX-512 bit for bit alike") {
  test::kernels_restored restore;
  struct product_shape {
    std::int64_t m, k, n;
    bool transposed_a = false;
  };
  // 25x20x16 runs one-batch tiles on AVX-512, two-batch ones on AVX2;
  // 13x1024x70 packs A by transposes; 1, 7, 13, 25 and 128 rows end in a
  // panel of one or two rows (its sums in registers on AVX2 too).
  // 128x256x10, 130x257x7, 5x33x12 and 9x1300x11 are summed along the
  // depth (16 sums in one AVX-512 register or two AVX2 ones; 9x1300x11 in
  // AVX2's pairs of rows), 130x257x7 with A transposed too, its depth and
  // rows ending mid-chunk and mid-tile: C's rows in the lanes, as
  // 256x128x10's (the MLP's H^T G); 20x300x10 with A transposed has rows
  // for AVX2's 16-row tiles of that kernel, not AVX-512's 32, which packs A
  // into depth-long rows.
  for (const product_shape s : {product_shape{1, 1, 1}, product_shape{7, 17, 33}, product_shape{128, 256, 10},
                                product_shape{25, 20, 16}, product_shape{65, 300, 129}, product_shape{13, 1024, 70},
                                product_shape{130, 257, 7, true}, product_shape{256, 128, 10, true},
                                product_shape{20, 300, 10, true}, product_shape{5, 33, 12},
                                product_shape{9, 1300, 11}}) {
    const tensor<float> a = s.transposed_a ? test::random_tensor<float>({s.k, s.m}, -1, 1, 5).transpose(0, 1)
                                         : test::random_tensor<float>({s.m, s.k}, -1, 1, 5);
    const tensor<float> b = test::random_tensor<float>({s.k, s.n}, -1, 1, 6);
    std::vector<double> want(static_cast<std::size_t>(s.m * s.n), 0.0);
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t p = 0; p < s.k; ++p)
        for (std::int64_t j = 0; j < s.n; ++j)
          want[static_cast<std::size_t>(i * s.n + j)] += double(a.at(i, p)) * b.data()[p * s.n + j];
    std::vector<std::pair<instruction_set, tensor<float>>> products;
    for (instruction_set level : test::runnable_levels()) {
      INFO("build ", to_string(level), ", ", s.m, "x", s.k, "x", s.n);
      REQUIRE(set_kernel_instruction_set(level) == level);
      const tensor<float> c = matmul(a, b);
      REQUIRE(c.shape() == shape{s.m, s.n});
      for (std::int64_t i = 0; i < c.numel(); ++i)
        REQUIRE(test::close(c.data()[i], want[static_cast<std::size_t>(i)], 1e-5, 1e-5 * static_cast<double>(s.k)));
      products.emplace_back(level, c);
    }
    std::vector<const tensor<float>*> fused_multiply_add;
    for (const auto& [level, c] : products)
      if (level >= instruction_set::avx2) fused_multiply_add.push_back(&c);
    for (const tensor<float>* c : fused_multiply_add)
      CHECK(std::equal(c->data(), c->data() + c->numel(), fused_multiply_add.front()->data()));
  }
}

TEST_CASE("every build reduces, normalizes and takes batch moments as the reference does") {
  test::kernels_restored restore;
  const tensor<double> long_row = test::random_tensor<double>({1000003}, -1, 1, 9);
  const tensor<float> table = test::random_tensor<float>({129, 1001}, -3, 3, 10);
  const tensor<double> images = test::random_tensor<double>({4, 3, 5, 7}, -1, 1, 11);
  double long_sum = 0;
  for (std::int64_t i = 0; i < long_row.numel(); ++i) long_sum += long_row.data()[i];
  for (instruction_set level : test::runnable_levels()) {
    INFO("build ", to_string(level));
    REQUIRE(set_kernel_instruction_set(level) == level);
    CHECK(test::close(sum(long_row).item(), long_sum, 1e-12, 1e-9));
    const tensor<float> row_max = max(table, axes{1}), column_sum = sum(table, axes{0});
    const tensor<float> row_mean = mean(table, axes{1});
    const tensor<float> probabilities = softmax(table, 1), log_probabilities = log_softmax(table, 1);
    for (std::int64_t r = 0; r < 129; ++r) {
      double peak = -1e300, total = 0, normaliser = 0;
      for (std::int64_t c = 0; c < 1001; ++c) {
        peak = std::max(peak, double(table.data()[r * 1001 + c]));
        total += table.data()[r * 1001 + c];
      }
      for (std::int64_t c = 0; c < 1001; ++c) normaliser += std::exp(double(table.data()[r * 1001 + c]) - peak);
      CHECK(row_max.data()[r] == float(peak));
      CHECK(test::close(row_mean.data()[r], total / 1001, 1e-5, 1e-6));
      for (std::int64_t c : {std::int64_t{0}, std::int64_t{500}, std::int64_t{1000}}) {
        const double centred = double(table.data()[r * 1001 + c]) - peak;
        REQUIRE(test::close(probabilities.data()[r * 1001 + c], std::exp(centred) / normaliser, 1e-5, 1e-7));
        REQUIRE(test::close(log_probabilities.data()[r * 1001 + c], centred - std::log(normaliser), 1e-5, 1e-5));
      }
    }
    for (std::int64_t c = 0; c < 1001; ++c) {
      double total = 0;
      for (std::int64_t r = 0; r < 129; ++r) total += table.data()[r * 1001 + c];
      REQUIRE(test::close(column_sum.data()[c], total, 1e-5, 1e-4));
    }
    tensor<double> centre;
    const tensor<double> variance = batch_variance(images, &centre);
    for (std::int64_t channel = 0; channel < 3; ++channel) {
      double total = 0, squares = 0;
      for (std::int64_t n = 0; n < 4; ++n)
        for (std::int64_t p = 0; p < 35; ++p) total += images.data()[(n * 3 + channel) * 35 + p];
      const double mean_value = total / 140;
      for (std::int64_t n = 0; n < 4; ++n)
        for (std::int64_t p = 0; p < 35; ++p)
          squares += std::pow(images.data()[(n * 3 + channel) * 35 + p] - mean_value, 2);
      CHECK(test::close(centre.data()[channel], mean_value, 1e-13, 1e-14));
      CHECK(test::close(variance.data()[channel], squares / 140, 1e-13, 1e-14));
    }
  }
}

TEST_CASE("every build convolves and takes convolution's gradients as double does; AVX2 and AVX-512 bit for bit alike") {
  test::kernels_restored restore;
  const tensor<float> images = test::random_tensor<float>({3, 2, 9, 30}, -1, 1, 14);
  const tensor<float> kernel = test::random_tensor<float>({4, 2, 3, 3}, -1, 1, 15);
  const tensor<float> weights = test::random_tensor<float>({3, 4, 9, 30}, -1, 1, 16);
  auto run = [&]<class T>(T) {
    tensor<T> x = images.astype<T>(), w = kernel.astype<T>();
    x.set_requires_grad();
    w.set_requires_grad();
    tensor<T> y = conv2d(x, w, {.padding = {1, 1}});
    sum(y * weights.astype<T>()).backward();
    return std::vector<tensor<T>>{y, x.grad(), w.grad()};
  };
  const auto results = check_builds_against_double(run, 1e-5, 1e-4);
  const std::vector<tensor<float>>* first_fused = nullptr;
  for (const auto& [level, got] : results) {
    if (level < instruction_set::avx2) continue;
    if (!first_fused) first_fused = &got;
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK(std::equal(got[k].data(), got[k].data() + got[k].numel(), (*first_fused)[k].data()));
  }
}

TEST_CASE("every build normalizes batches and takes their gradients as double does") {
  test::kernels_restored restore;
  const tensor<float> images = test::random_tensor<float>({5, 3, 7, 9}, -2, 3, 17);
  const tensor<float> scale = test::random_tensor<float>({3}, 0.5, 2, 18), shift = test::random_tensor<float>({3}, -1, 1, 19);
  const tensor<float> weights = test::random_tensor<float>({5, 3, 7, 9}, -1, 1, 20);
  auto run = [&]<class T>(T) {
    tensor<T> x = images.astype<T>(), w = scale.astype<T>(), b = shift.astype<T>();
    for (tensor<T>* t : {&x, &w, &b}) t->set_requires_grad();
    tensor<T> y = batch_normalize(x, w, b, 1e-5);
    sum(y * weights.astype<T>()).backward();
    return std::vector<tensor<T>>{y, x.grad(), w.grad(), b.grad()};
  };
  check_builds_against_double(run, 1e-4, 1e-4);
}

TEST_CASE("every build pools 2x2 windows and routes their gradient bit for bit alike") {
  test::kernels_restored restore;
  // Ties (values from four levels), an odd width, and rows of 14 and 7
  // outputs: the demo's CNN's.
  const tensor<float> wide = test::random_tensor<std::int32_t>({3, 5, 28, 29}, 0, 4, 12).astype<float>();
  for (const tensor<float>& images : {wide, wide.slice(2, 0, 14).slice(3, 0, 14).contiguous()}) {
    const tensor<float> weights =
        test::random_tensor<float>({3, 5, images.shape(2) / 2, images.shape(3) / 2}, -1, 1, 13);
    std::vector<std::pair<tensor<float>, tensor<float>>> results;
    for (instruction_set level : test::runnable_levels()) {
      INFO("build ", to_string(level), ", input ", to_string(images.shape()));
      REQUIRE(set_kernel_instruction_set(level) == level);
      tensor<float> x = images.detach();
      x.set_requires_grad();
      tensor<float> out = max_pool2d(x);
      sum(out * weights).backward();
      results.emplace_back(out, x.grad());
      const auto& [first_out, first_grad] = results.front();
      CHECK(std::equal(out.data(), out.data() + out.numel(), first_out.data()));
      CHECK(std::equal(x.grad().data(), x.grad().data() + x.grad().numel(), first_grad.data()));
    }
  }
}

TEST_CASE("capture's register chains compute each build's bits") {
  test::kernels_restored restore;
  const tensor<float> x = test::random_tensor<float>({20000}, -2, 2, 7);
  const tensor<float> y = test::random_tensor<float>({20000}, 0.5, 2, 8);
  auto chain = [](const tensor<float>& a, const tensor<float>& b) {
    tensor<float> c = a * b + a;
    return tanh(c) * b - exp(sqrt(b)) / b;
  };
  auto captured = capture(chain);
  for (instruction_set level : test::runnable_levels()) {
    INFO("build ", to_string(level));
    REQUIRE(set_kernel_instruction_set(level) == level);
    const tensor<float> eager = chain(x, y);
    for (int call = 0; call < 2; ++call) {
      const tensor<float> replayed = captured(x, y);
      CHECK(std::equal(replayed.data(), replayed.data() + replayed.numel(), eager.data()));
    }
  }
  CHECK(captured.statistics().ops_chained > 0);
}
