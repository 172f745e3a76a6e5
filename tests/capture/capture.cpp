// capture(fn): eager code run with its elementwise ops deferred and fused
// region by region. Every result is compared with the same code run eagerly,
// bit for bit: a region runs each op's own row function.

#include <atomic>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/check.hpp"
#include "support/gradcheck.hpp"

namespace tandem::test {
namespace {

template <class T>
void check_identical(const tensor<T>& got, const tensor<T>& want, const std::string& context) {
  INFO(context);
  REQUIRE(got.shape() == want.shape());
  tensor<T> a = got.contiguous();
  tensor<T> b = want.contiguous();
  CHECK(std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(T)) == 0);
}

tensor<float> chain(const tensor<float>& x) {
  tensor<float> a = x + x;
  tensor<float> b = a * x;
  tensor<float> c = b * 0.5f;
  tensor<float> d = c + 1.0f;
  tensor<float> e = tanh(d);
  tensor<float> g = e * x;
  tensor<float> h = g - 0.25f;
  return h * h;
}

}  // namespace

TEST_CASE("capture: the 8-op chain equals eager, bit for bit, on every tail size") {
  auto captured = capture(chain);
  for (std::int64_t n : tail_sizes) {
    tensor<float> x = random_tensor<float>({n}, -2, 2, 7);
    check_identical(captured(x), chain(x), "n = " + std::to_string(n));
  }
  capture_statistics s = captured.statistics();
  CHECK(s.calls == static_cast<std::int64_t>(tail_sizes.size()));
  // Size 0 runs nothing; each other size is one region of 8 ops keeping one result.
  CHECK(s.regions_run == static_cast<std::int64_t>(tail_sizes.size()) - 1);
  CHECK(s.ops_captured == 8 * s.regions_run);
  CHECK(s.bytes_kept_in_tiles == 7 * 4 * (1 + 7 + 17 + 33 + largest_size));
}

template <class T>
void check_register_chains() {
  // Every op that capture runs in register chains (capture/register_chain.hpp)
  // fed by the previous op through its first operand, its second, both and
  // neither; results read out of turn (stored mid-chain), one kept past the
  // call, and operands read in place along rows (a bias) and across them (a
  // column).
  tensor<T> kept;
  auto f = [&kept](const tensor<T>& x, const tensor<T>& bias, const tensor<T>& column) {
    tensor<T> a = x * T(0.75);
    tensor<T> b = bias - a;
    tensor<T> c = maximum(b, column);
    tensor<T> d = c * c;
    tensor<T> e = tanh(d) + exp(-abs(b));
    tensor<T> g = sqrt(abs(e)) / (T(1) + square(e));
    tensor<T> h = log(T(1) + sigmoid(g));
    kept = h;
    tensor<T> r = relu(h - T(0.5)) + minimum(h, x);
    return -r + a;
  };
  auto captured = capture(f);
  for (std::int64_t columns : {1, 7, 63, 64, 65, 1000, 16384 + 33, 50000}) {
    const std::int64_t rows = columns > 1000 ? 2 : 5;
    tensor<T> x = random_tensor<T>({rows, columns}, -2, 2, 30);
    tensor<T> bias = random_tensor<T>({columns}, -2, 2, 31);
    tensor<T> column = random_tensor<T>({rows, 1}, -2, 2, 32);
    for (int call = 0; call < 2; ++call) {
      const std::string context = std::to_string(rows) + " x " + std::to_string(columns) + ", call " + std::to_string(call);
      tensor<T> got = captured(x, bias, column);
      tensor<T> got_kept = kept;
      check_identical(got, f(x, bias, column), context);
      check_identical(got_kept, kept, context + ", the value kept past the call");
    }
  }
  // The second call of each size ran fused, and every op here is one a
  // chain runs.
  CHECK(captured.statistics().ops_chained > 0);
  CHECK(captured.explain().find("run in register chains") != std::string::npos);
}

TEST_CASE("capture: the 8-op chain equals eager when fused, on every tail size") {
  auto captured = capture(chain);
  for (std::int64_t n : tail_sizes) {
    tensor<float> x = random_tensor<float>({n}, -2, 2, 8);
    for (int call = 0; call < 3; ++call)
      check_identical(captured(x), chain(x), "n = " + std::to_string(n) + ", call " + std::to_string(call));
  }
  // At least the two fused calls of the longest size ran all 8 ops in registers.
  CHECK(captured.statistics().ops_chained >= 8 * 2);
}

TEST_CASE("capture: ops chained in registers equal eager in every operand position") {
  check_register_chains<float>();
  check_register_chains<double>();
}

// Chain kernels whose block is four times the real ones', as the AVX-512
// chain's is to the SSE one's: a region of a program built for SSE runs the
// AVX-512 chain where the library's builds are dispatched. It recognizes and
// runs ops as the real kernels do, and counts the runs that are not whole
// blocks of its own.
struct wide_chain_kernels {
  static inline const tandem::detail::chain_kernels* real = nullptr;
  static inline std::atomic<int> runs{0};
  static inline std::atomic<int> partial_runs{0};
  static tandem::detail::register_code code_of(tandem::detail::row_function row) { return real->code_of(row); }
  static std::int64_t block(std::size_t element_size) { return 4 * real->block(element_size); }
  static void run(std::size_t element_size, const tandem::detail::chain_step* steps, std::size_t count,
                  std::int64_t n) {
    ++runs;
    if (n % block(element_size) != 0) ++partial_runs;
    real->run(element_size, steps, count, n);
  }
  static constexpr tandem::detail::chain_kernels kernels{&code_of, &run, &block};
};

TEST_CASE("capture: a region cuts its tiles by the block of the chain kernels it runs, not its own") {
  using namespace tandem::detail;
  auto captured = capture(chain);
  tensor<float> warm = random_tensor<float>({1000}, -2, 2, 9);
  captured(warm);  // installs the chain kernels
  wide_chain_kernels::real = chain_kernels_in_use();
  REQUIRE(wide_chain_kernels::real != nullptr);
  struct restored {
    const chain_kernels* before = dispatched_chain_kernels.exchange(&wide_chain_kernels::kernels);
    ~restored() { dispatched_chain_kernels.store(before); }
  } wide;
  // Tiles are capture_tile (512) elements, the last the rest: 448 is whole
  // blocks of the real kernels (AVX-512: 64 floats, AVX2: 32), not of these.
  for (std::int64_t n : {960, 4544, 20928, 1000003}) {
    tensor<float> x = random_tensor<float>({n}, -2, 2, 10);
    for (int call = 0; call < 2; ++call)
      check_identical(captured(x), chain(x), "n = " + std::to_string(n) + ", call " + std::to_string(call));
  }
  CHECK(wide_chain_kernels::runs > 0);
  CHECK(wide_chain_kernels::partial_runs == 0);
}

TEST_CASE("capture: a second call of the same structure reuses its variant, whatever the scalars") {
  float scale = 0.5f;
  auto f = capture([&](const tensor<float>& x) { return tanh(x * scale) + scale; });
  tensor<float> x = random_tensor<float>({1000}, -3, 3, 1);
  for (float s : {0.5f, 2.0f, -1.0f}) {
    scale = s;
    check_identical(f(x), tanh(x * s) + s, "scale " + std::to_string(s));
  }
  CHECK(f.statistics().variants_recorded == 1);
  CHECK(f.statistics().regions_run == 3);
  // The variant's first run went op by op; the two later, fused, are timed against it.
  CHECK(std::isfinite(f.statistics().seconds_saved));
  CHECK(f.explain().find("1000 elements: mul, tanh, add; keeps 1 of 3 results: run 3 times; first run op by op") !=
        std::string::npos);
  CHECK(f.explain().find("time saved by fusion") != std::string::npos);
}

TEST_CASE("capture: broadcast, strided and one-element operands are gathered per tile") {
  tensor<double> x = random_tensor<double>({300, 17}, -1, 1, 2);
  tensor<double> bias = random_tensor<double>({17}, -1, 1, 3);
  tensor<double> column = random_tensor<double>({300, 1}, -1, 1, 4);
  tensor<double> one = random_tensor<double>({1}, -1, 1, 5);
  auto f = [](const tensor<double>& a, const tensor<double>& b, const tensor<double>& c, const tensor<double>& d) {
    return exp(a * b + c) - d * a;
  };
  auto captured = capture(f);
  for (const auto& [name, layout] : layouts(x)) check_identical(captured(layout, bias, column, one), f(x, bias, column, one), name);
  // Rows longer than a tile: most tiles read the row's bias and the
  // column's value in place, the tiles across two rows gather them.
  tensor<double> wide = random_tensor<double>({3, 2000}, -1, 1, 21);
  tensor<double> wide_bias = random_tensor<double>({2000}, -1, 1, 22);
  tensor<double> wide_column = random_tensor<double>({3, 1}, -1, 1, 23);
  check_identical(captured(wide, wide_bias, wide_column, one), f(wide, wide_bias, wide_column, one), "long rows");
  check_identical(captured(wide.transpose(0, 1), wide_column.reshape({3}), wide_bias.reshape({2000, 1}), one),
                  f(wide.transpose(0, 1), wide_column.reshape({3}), wide_bias.reshape({2000, 1}), one),
                  "short rows of a transposed operand");
  tensor<double> square = random_tensor<double>({64, 64}, -1, 1, 6);
  check_identical(captured(square.transpose(0, 1), square, one, one), f(square.transpose(0, 1), square, one, one),
                  "a transposed operand beside its own storage");
}

TEST_CASE("capture: views of pending values end the region, and read the right values") {
  auto f = capture([](const tensor<float>& x) {
    tensor<float> y = x * 2.0f;                       // pending, [8, 8]
    tensor<float> flat = y.reshape({64}) + 1.0f;      // a contiguous view: stays in the region
    tensor<float> t = y.transpose(0, 1) * x;          // a strided view: the region runs first
    return std::make_pair(flat, t);
  });
  tensor<float> x = random_tensor<float>({8, 8}, -1, 1, 8);
  auto [flat, t] = f(x);
  check_identical(flat, (x * 2.0f).reshape({64}) + 1.0f, "reshaped");
  check_identical(t, (x * 2.0f).transpose(0, 1) * x, "transposed");
  CHECK(f.explain().find("an op reads a pending value through a view or a broadcast") != std::string::npos);
}

TEST_CASE("capture: a tensor written in place after a deferred op read it gives that op the old values") {
  auto f = capture([](tensor<float> x) {
    tensor<float> doubled = x * 2.0f;
    x.fill(100.0f);
    return doubled + x;
  });
  tensor<float> x = random_tensor<float>({33}, -1, 1, 9);
  tensor<float> want = x * 2.0f + 100.0f;
  check_identical(f(x.clone()), want, "fill_ after the read");
  CHECK(f.explain().find("a tensor the region reads is accessed for writing") != std::string::npos);
}

TEST_CASE("capture: a write that bumps the version without asking for writing access throws, not a wrong answer") {
  auto f = capture([](const tensor<float>& x) {
    tensor<float> doubled = x * 2.0f;
    static_cast<float*>(x.storage()->data())[0] = 100.0f;  // no writing access asked for
    x.storage()->bump_version();
    return doubled;
  });
  tensor<float> x = zeros<float>({8});
  CHECK_THROWS_WITH(f(x), doctest::Contains("without asking for writing access first"));
}

TEST_CASE("capture: a value read back splits the call into regions; branches on it record variants") {
  auto f = capture([](const tensor<float>& x) {
    tensor<float> y = sigmoid(x * 3.0f);
    if (y.at(0) > 0.5f) return y * y - 1.0f;  // reads a pending value: a graph break
    return -y;
  });
  tensor<float> positive = full<float>({100}, 1.0f);
  tensor<float> negative = full<float>({100}, -1.0f);
  tensor<float> y_pos = sigmoid(positive * 3.0f);
  tensor<float> y_neg = sigmoid(negative * 3.0f);
  check_identical(f(positive), y_pos * y_pos - 1.0f, "taken");
  check_identical(f(negative), -y_neg, "not taken");
  check_identical(f(positive), y_pos * y_pos - 1.0f, "taken again");
  capture_statistics s = f.statistics();
  CHECK(s.regions_run == 6);
  CHECK(s.variants_recorded == 3);
  std::string text = f.explain();
  CHECK(text.find("a pending value was accessed through a non-const tensor") != std::string::npos);
  CHECK(text.find("call 2, region 2: op 0 is neg, not mul") != std::string::npos);
}

TEST_CASE("capture: a shape change records a variant and says which guard failed") {
  auto f = capture([](const tensor<float>& x) { return x * x + 1.0f; });
  f(zeros<float>({16}));
  f(zeros<float>({17}));
  CHECK(f.explain().find("call 2, region 1: the region runs over 17 elements, not 16") != std::string::npos);
}

TEST_CASE("capture: the variant cache keeps the most recently used, up to its limit") {
  auto f = capture([](const tensor<float>& x) { return x + 1.0f; }, {.cache_limit = 2});
  for (std::int64_t n : {1, 2, 3, 1, 2, 3}) f(zeros<float>({n}));
  capture_statistics s = f.statistics();
  CHECK(s.variants_cached == 2);
  CHECK(s.variants_recorded == 6);
  CHECK(s.variants_evicted == 4);
  f.set_cache_limit(1);
  CHECK(f.statistics().variants_cached == 1);
}

TEST_CASE("capture: results nobody reads are not computed") {
  auto f = capture([](const tensor<float>& x) {
    tensor<float> unused = exp(x) * 3.0f;
    return x + 1.0f;
  });
  check_identical(f(full<float>({5}, 2.0f)), full<float>({5}, 3.0f), "result");
  CHECK(f.statistics().ops_dropped == 2);
}

TEST_CASE("capture: comparisons, where, mixed element types and integer tensors") {
  auto f = [](const tensor<float>& x, const tensor<std::int32_t>& k) {
    tensor<bool> positive = x > 0.0f;
    tensor<float> clipped = where(positive, x, 0.1f * x);
    return std::make_tuple(clipped * k.astype<float>(), k * 3 + 1, positive);
  };
  auto captured = capture(f);
  tensor<float> x = random_tensor<float>({7, 17}, -1, 1, 10);
  tensor<std::int32_t> k = random_tensor<std::int32_t>({17}, -5, 5, 11);
  auto [a, b, c] = captured(x, k);
  auto [ea, eb, ec] = f(x, k);
  check_identical(a, ea, "where");
  check_identical(b, eb, "integers");
  check_identical(c, ec, "comparison");
}

TEST_CASE("capture: non-elementwise ops run eagerly between regions") {
  auto f = [](const tensor<double>& x, const tensor<double>& w) {
    tensor<double> h = relu(matmul(x * 2.0, w) + 1.0);
    return softmax(h - mean(h), -1) * 3.0;
  };
  auto captured = capture(f);
  tensor<double> x = random_tensor<double>({5, 7}, -1, 1, 12);
  tensor<double> w = random_tensor<double>({7, 3}, -1, 1, 13);
  check_identical(captured(x, w), f(x, w), "matmul, mean and softmax between regions");
}

TEST_CASE("capture: multi-threaded kernels reading pending values get them computed first") {
  // Large enough that the matmul and the convolution run on the pool's
  // threads, which read their inputs there.
  auto f = [](const tensor<float>& x, const tensor<float>& w, const tensor<float>& image, const tensor<float>& kernel) {
    tensor<float> product = matmul(x * 0.5f + 1.0f, w);
    tensor<float> features = conv2d(relu(image - 0.25f), kernel * 2.0f);
    return std::make_pair(tanh(product), sigmoid(features));
  };
  auto captured = capture(f);
  tensor<float> x = random_tensor<float>({256, 300}, -1, 1, 17);
  tensor<float> w = random_tensor<float>({300, 64}, -1, 1, 18);
  tensor<float> image = random_tensor<float>({4, 3, 64, 64}, -1, 1, 19);
  tensor<float> kernel = random_tensor<float>({8, 3, 3, 3}, -1, 1, 20);
  auto [product, features] = captured(x, w, image, kernel);
  auto [want_product, want_features] = f(x, w, image, kernel);
  check_identical(product, want_product, "matmul");
  check_identical(features, want_features, "conv2d");
}

TEST_CASE("capture: a reduction of a region's value is reduced as the region computes it, equal to eager") {
  // The gradient benchmark's forward: the product is never written.
  auto f = [](const tensor<float>& x, const tensor<float>& y) { return sum(tanh(x * y + x) * y); };
  auto captured = capture(f);
  // Sizes around the reduction's block (16384) and its shortest deferred row (4096).
  for (std::int64_t n : {4095, 4096, 16383, 16384, 16385, 50000, 1000003}) {
    tensor<float> x = random_tensor<float>({n}, -2, 2, 40);
    tensor<float> y = random_tensor<float>({n}, -2, 2, 41);
    for (int call = 0; call < 3; ++call)
      check_identical(captured(x, y), f(x, y), "n = " + std::to_string(n) + ", call " + std::to_string(call));
  }
  CHECK(captured.explain().find("then sum of op 3 over 1 x 1000003, reduced as computed") != std::string::npos);
  CHECK(captured.explain().find("1 x 4095") == std::string::npos);

  // Over the last axis, with keepdims, a mean, a max, in double; the
  // reduction's result read by the next region.
  auto rows = [](const tensor<double>& x, const tensor<double>& bias) {
    tensor<double> a = exp(x * 0.5 + bias) - 1.0;
    tensor<double> m = mean(square(a), {1}, true);
    return max(a * m, {1}) + m.reshape({-1});
  };
  auto captured_rows = capture(rows);
  for (std::int64_t n : {4096, 20000}) {
    tensor<double> x = random_tensor<double>({3, n}, -1, 1, 42);
    tensor<double> bias = random_tensor<double>({n}, -1, 1, 43);
    for (int call = 0; call < 2; ++call)
      check_identical(captured_rows(x, bias), rows(x, bias), "rows of " + std::to_string(n) + ", call " + std::to_string(call));
  }
  CHECK(captured_rows.explain().find("then mean of op") != std::string::npos);
  CHECK(captured_rows.explain().find("then max of op") != std::string::npos);

  // Over the leading axis (a bias gradient's sum, a column mean, a column
  // max): columns around the deferred minimum, rows around the thread split.
  auto columns = [](const tensor<float>& x, const tensor<float>& bias) {
    tensor<float> a = tanh(x * 2.0f + bias);
    return sum(a * x, {0}) + mean(a, {0}) - max(a - x, {0});
  };
  auto captured_columns = capture(columns);
  for (auto [rows_count, columns_count] : {std::pair<std::int64_t, std::int64_t>{128, 256}, {3, 255}, {1, 300},
                                          {129, 1000}, {40, 5000}}) {
    tensor<float> x = random_tensor<float>({rows_count, columns_count}, -1, 1, 47);
    tensor<float> bias = random_tensor<float>({columns_count}, -1, 1, 48);
    for (int call = 0; call < 2; ++call)
      check_identical(captured_columns(x, bias), columns(x, bias),
                      std::to_string(rows_count) + " x " + std::to_string(columns_count) + ", call " +
                          std::to_string(call));
  }
  CHECK(captured_columns.explain().find("then sum of op") != std::string::npos);
  CHECK(captured_columns.explain().find("then max of op") != std::string::npos);
  CHECK(captured_columns.explain().find("over 255 x 3") == std::string::npos);

  // The reduced value kept past the reduction (a named variable read later):
  // written to memory as it is reduced.
  auto kept = [](const tensor<float>& x) {
    tensor<float> v = x * x - 0.5f;
    tensor<float> total = sum(v);
    return v * total;
  };
  auto captured_kept = capture(kept);
  tensor<float> x = random_tensor<float>({70000}, -1, 1, 44);
  for (int call = 0; call < 2; ++call) check_identical(captured_kept(x), kept(x), "kept, call " + std::to_string(call));

  // Gradients through the fused reduction equal eager's.
  tensor<float> a = random_tensor<float>({20000}, -1, 1, 45);
  tensor<float> b = random_tensor<float>({20000}, -1, 1, 46);
  for (int call = 0; call < 2; ++call) {
    auto grads = grad(captured, all_args)(a, b);
    auto want = grad(f, all_args)(a, b);
    check_identical(std::get<0>(grads), std::get<0>(want), "d/dx");
    check_identical(std::get<1>(grads), std::get<1>(want), "d/dy");
  }
}

TEST_CASE("capture: gradients through a captured function equal eager, and pass finite differences") {
  auto f = [](const tensor<double>& x, const tensor<double>& y) { return tanh(x * y + x) * y; };
  auto captured = capture(f);
  check_gradients([&](const std::vector<tensor<double>>& v) { return captured(v[0], v[1]); },
                  {away_from_zero({3, 5}, 1), away_from_zero({5}, 2)}, "tanh(x*y+x)*y captured");

  tensor<double> x = away_from_zero({4, 6}, 3);
  tensor<double> y = away_from_zero({4, 6}, 4);
  auto grads = grad([&](const tensor<double>& a, const tensor<double>& b) { return sum(captured(a, b)); }, all_args)(x, y);
  auto want = grad([&](const tensor<double>& a, const tensor<double>& b) { return sum(f(a, b)); }, all_args)(x, y);
  check_identical(std::get<0>(grads), std::get<0>(want), "d/dx");
  check_identical(std::get<1>(grads), std::get<1>(want), "d/dy");
}

TEST_CASE("capture: a training step with its backward and update captured equals the eager step") {
  auto run = [](bool captured) {
    generator gen(21);
    tensor<double> w = normal<double>({6, 4}, 0, 0.5, gen);
    tensor<double> x = normal<double>({8, 6}, 0, 1, gen);
    tensor<double> target = normal<double>({8, 4}, 0, 1, gen);
    w.set_requires_grad(true);
    auto step = [&] {
      tensor<double> out = tanh(matmul(x, w));
      tensor<double> loss = mean(square(out - target));
      loss.backward();
      {
        no_grad plain;
        w.assign(w - 0.1 * w.grad());
      }
      w.zero_grad();
      return loss;
    };
    auto captured_step = capture(step);
    std::vector<double> losses;
    for (int i = 0; i < 4; ++i) losses.push_back(captured ? captured_step().item() : step().item());
    return std::make_pair(losses, w.detach().clone());
  };
  auto [eager_losses, eager_w] = run(false);
  auto [captured_losses, captured_w] = run(true);
  CHECK(eager_losses == captured_losses);
  check_identical(captured_w, eager_w, "weights after four steps");
}

TEST_CASE("capture: with jit disabled the function runs eagerly") {
  auto f = capture(chain);
  set_jit_enabled(false);
  tensor<float> x = random_tensor<float>({100}, -1, 1, 14);
  check_identical(f(x), chain(x), "disabled");
  set_jit_enabled(true);
  CHECK(f.statistics().calls == 0);
}

TEST_CASE("capture: a captured function called inside another joins its call") {
  auto inner = capture([](const tensor<float>& x) { return x * 2.0f; });
  auto outer = capture([&](const tensor<float>& x) { return inner(x) + 1.0f; });
  tensor<float> x = random_tensor<float>({50}, -1, 1, 15);
  check_identical(outer(x), x * 2.0f + 1.0f, "nested");
  CHECK(inner.statistics().calls == 0);
  CHECK(outer.statistics().ops_captured == 2);
}

TEST_CASE("capture: values computed before the function throws stay readable") {
  tensor<float> kept;
  auto f = capture([&](const tensor<float>& x) -> tensor<float> {
    kept = x * 3.0f;
    throw std::runtime_error("from the function");
  });
  tensor<float> x = random_tensor<float>({40}, -1, 1, 16);
  CHECK_THROWS_WITH(f(x), "from the function");
  check_identical(kept, x * 3.0f, "kept before the throw");
  CHECK(f.explain().find("the function threw") != std::string::npos);
}

TEST_CASE("capture: one wrapper called from several threads at once") {
  auto f = capture(chain);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        tensor<float> x = random_tensor<float>({100 + t}, -1, 1, static_cast<std::uint64_t>(t * 100 + i));
        tensor<float> got = f(x);
        tensor<float> want = chain(x);
        if (std::memcmp(got.data(), want.data(), static_cast<std::size_t>(got.numel()) * sizeof(float)) != 0)
          ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(mismatches == 0);
  CHECK(f.statistics().calls == 80);
}

TEST_CASE("capture: a pending value read on another thread during the call throws") {
  auto f = capture([](const tensor<float>& x) {
    tensor<float> y = x + 1.0f;
    std::string error;
    std::thread reader([&] {
      try {
        y.item();
      } catch (const tandem::error& e) {
        error = e.what();
      }
    });
    reader.join();
    return error;
  });
  CHECK(f(zeros<float>({1})).find("read on another thread") != std::string::npos);
}

// Random programs over a few inputs of broadcastable shapes: each step
// applies a random elementwise op to earlier values, sometimes through a
// view, sometimes reads a value back or reduces one (a graph break). The
// same program runs eagerly and captured; every output must agree bit for bit.
TEST_CASE("capture: randomized programs equal eager") {
  struct program {
    std::uint64_t seed;
    tensor<double> operator()(const tensor<double>& a, const tensor<double>& b, const tensor<double>& c) const {
      std::mt19937_64 rng(seed);
      std::vector<tensor<double>> values{a, b, c};
      auto pick = [&] { return values[rng() % values.size()]; };
      for (int step = 0; step < 24; ++step) {
        tensor<double> x = pick();
        tensor<double> y = pick();
        switch (rng() % 12) {
          case 0: values.push_back(x + y); break;
          case 1: values.push_back(x * y); break;
          case 2: values.push_back(x - 0.5 * y); break;
          case 3: values.push_back(tanh(x)); break;
          case 4: values.push_back(exp(-square(x))); break;
          case 5: values.push_back(where(x > y, x, y)); break;
          case 6: values.push_back(maximum(x, y) / (1.0 + abs(y))); break;
          case 7: values.push_back(sigmoid(x) * (x.reshape({-1}).at(0) > 0 ? 2.0 : 3.0)); break;
          case 8: values.push_back(x - mean(x)); break;
          case 9: values.push_back(x.dim() == 2 ? x.transpose(0, 1).contiguous().transpose(0, 1) + y : x + y); break;
          case 10: values.push_back(relu(x) + sum(y).item()); break;
          default: values.push_back(sin(x) * cos(y)); break;
        }
      }
      tensor<double> out = values.back();
      for (std::size_t k = 3; k + 1 < values.size(); k += 5) out = out + values[k];
      return out;
    }
  };
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    program p{seed};
    auto captured = capture(p);
    const std::int64_t rows = 1 + static_cast<std::int64_t>(seed % 5) * 7;
    tensor<double> a = random_tensor<double>({rows, 9}, -1, 1, seed);
    tensor<double> b = random_tensor<double>({9}, -1, 1, seed + 1000);
    tensor<double> c = random_tensor<double>({rows, 1}, -1, 1, seed + 2000);
    for (int call = 0; call < 2; ++call)
      check_identical(captured(a, b, c), p(a, b, c), "seed " + std::to_string(seed) + ", call " + std::to_string(call));
  }
}

}  // namespace tandem::test
