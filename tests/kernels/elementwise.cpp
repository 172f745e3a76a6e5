// The elementwise loop's streaming writes (kernels/cpu/elementwise.hpp):
// the same bits as cached writes for every length and placement of the
// output, and for ops that write several outputs; which loops stream.
#include <doctest/doctest.h>

#include <tandem/tandem.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "support/check.hpp"

namespace {

using tandem::detail::output_writes;

struct multiply_add_one {
  template <class V>
  V operator()(const V& x, const V& y) const {
    return x * y + V(1);
  }
};

struct sum_and_difference {
  template <class V>
  std::array<V, 2> operator()(const V& x, const V& y) const {
    return {x + y, x - y};
  }
};

// The 8-op polynomial chain's arithmetic (bench/chain.hpp).
struct eight_instructions {
  static constexpr int instructions_per_batch = 8;
};

template <class T>
std::vector<T> inputs(std::int64_t n, T scale) {
  std::vector<T> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<T>(i % 97) * scale - T(3);
  return x;
}

// Runs the flat loop of multiply_add_one over x and y (y broadcast where
// `broadcast`) into out, written as `writes` says.
template <class T>
void run_multiply_add(const std::vector<T>& x, const std::vector<T>& y, bool broadcast, T* out, std::int64_t n,
                      output_writes writes) {
  using namespace tandem::detail;
  const multiply_add_one op;
  void* outs[] = {out};
  const void* ins[] = {x.data(), y.data()};
  const std::int64_t strides[] = {1, broadcast ? 0 : 1};
  run_flat({native_row_function<T, T, multiply_add_one, T*, T, T>(), &op, outs, ins, 2, writes}, n, strides);
}

template <class T>
void check_streaming_matches_cached() {
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{17}, std::int64_t{511}, std::int64_t{512},
                           std::int64_t{2053}, std::int64_t{70001}, tandem::test::largest_size}) {
    const std::vector<T> x = inputs<T>(n, T(0.37)), y = inputs<T>(n + 1, T(-0.11));
    for (bool broadcast : {false, true}) {
      // Outputs starting at every element of a line, and one past it.
      std::vector<T> cached(static_cast<std::size_t>(n) + 32), streamed(static_cast<std::size_t>(n) + 32);
      for (std::int64_t shift : {0, 1, 3, 8, 15, 16, 17}) {
        INFO("n = " << n << ", broadcast = " << broadcast << ", output shifted by " << shift);
        run_multiply_add(x, y, broadcast, cached.data() + shift, n, output_writes::cached);
        run_multiply_add(x, y, broadcast, streamed.data() + shift, n, output_writes::streaming);
        bool same = std::memcmp(cached.data() + shift, streamed.data() + shift, static_cast<std::size_t>(n) * sizeof(T)) == 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const double want = static_cast<double>(x[static_cast<std::size_t>(i)]) *
                                  static_cast<double>(y[static_cast<std::size_t>(broadcast ? 0 : i)]) +
                              1.0;
          same = same && std::abs(static_cast<double>(streamed[static_cast<std::size_t>(shift + i)]) - want) <=
                             1e-6 * (1 + std::abs(want));
        }
        CHECK(same);
      }
    }
  }
}

}  // namespace

TEST_CASE("streaming writes give the bits of cached writes, for any length and placement of the output") {
  check_streaming_matches_cached<float>();
  check_streaming_matches_cached<double>();
}

TEST_CASE("streaming writes in place: the output is the first input (an optimizer's update)") {
  using namespace tandem::detail;
  const multiply_add_one op;
  for (std::int64_t n : {std::int64_t{17}, std::int64_t{2053}, tandem::test::largest_size}) {
    INFO("n = " << n);
    const std::vector<float> y = inputs<float>(n, 0.75f);
    std::vector<float> cached = inputs<float>(n + 3, 0.5f), streamed = cached;
    auto run = [&](std::vector<float>& x, output_writes writes) {
      void* outs[] = {x.data() + 3};
      const void* ins[] = {x.data() + 3, y.data()};
      const std::int64_t strides[] = {1, 1};
      run_flat({native_row_function<float, float, multiply_add_one, float*, float, float>(), &op, outs, ins, 2, writes},
               n, strides);
    };
    const std::vector<float> before = cached;
    run(cached, output_writes::cached);
    run(streamed, output_writes::streaming);
    bool same = std::memcmp(cached.data(), streamed.data(), cached.size() * sizeof(float)) == 0;
    for (std::int64_t i = 0; i < n && same; ++i) {
      const double want = static_cast<double>(before[static_cast<std::size_t>(i + 3)]) * y[static_cast<std::size_t>(i)] + 1.0;
      same = std::abs(streamed[static_cast<std::size_t>(i + 3)] - want) <= 1e-6 * (1 + std::abs(want));
    }
    CHECK(same);
  }
}

TEST_CASE("streaming writes of an op with two outputs: equally placed ones stream, others are written cached") {
  using namespace tandem::detail;
  const std::int64_t n = 100003;
  const std::vector<float> x = inputs<float>(n, 0.5f), y = inputs<float>(n, -0.25f);
  const sum_and_difference op;
  for (std::int64_t second_shift : {0, 16, 5}) {
    INFO("second output shifted by " << second_shift);
    std::vector<float> cached(2 * static_cast<std::size_t>(n) + 64), streamed(2 * static_cast<std::size_t>(n) + 64);
    auto run = [&](std::vector<float>& buffer, output_writes writes) {
      output_set<float, 2> outs{{buffer.data() + 3, buffer.data() + n + 32 + second_shift}};
      void* erased[] = {outs.data[0], outs.data[1]};
      const void* ins[] = {x.data(), y.data()};
      const std::int64_t strides[] = {1, 1};
      run_flat({native_row_function<float, float, sum_and_difference, output_set<float, 2>, float, float>(), &op,
                erased, ins, 2, writes},
               n, strides);
      return outs;
    };
    const output_set<float, 2> want = run(cached, output_writes::cached);
    const output_set<float, 2> got = run(streamed, output_writes::streaming);
    bool same = true;
    for (std::int64_t i = 0; i < n; ++i)
      same = same && got.data[0][i] == x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)] &&
             got.data[1][i] == x[static_cast<std::size_t>(i)] - y[static_cast<std::size_t>(i)] &&
             std::memcmp(&got.data[0][i], &want.data[0][i], sizeof(float)) == 0 &&
             std::memcmp(&got.data[1][i], &want.data[1][i], sizeof(float)) == 0;
    CHECK(same);
  }
}

TEST_CASE("streaming writes through the strided loop: rows broadcast from a row and from a column") {
  using namespace tandem::detail;
  const multiply_add_one op;
  for (std::int64_t cols : {7, 517, 2053}) {
    const std::int64_t rows = 37;
    const std::vector<float> x = inputs<float>(rows * cols, 0.25f), column = inputs<float>(rows, -0.5f),
                             row = inputs<float>(cols, 0.125f);
    for (bool from_row : {false, true}) {
      INFO("cols = " << cols << ", broadcast from a " << (from_row ? "row" : "column"));
      std::vector<float> cached(static_cast<std::size_t>(rows * cols) + 16),
          streamed(static_cast<std::size_t>(rows * cols) + 16);
      auto run = [&](std::vector<float>& buffer, output_writes writes) {
        void* outs[] = {buffer.data() + 5};
        const void* ins[] = {x.data(), from_row ? row.data() : column.data()};
        const dims out_strides{cols, 1}, x_strides{cols, 1}, y_strides = from_row ? dims{0, 1} : dims{1, 0};
        const dims* strides[] = {&out_strides, &x_strides, &y_strides};
        run_strided({native_row_function<float, float, multiply_add_one, float*, float, float>(), &op, outs, ins, 2,
                     writes},
                    tandem::shape{rows, cols}, strides);
      };
      run(cached, output_writes::cached);
      run(streamed, output_writes::streaming);
      bool same = std::memcmp(cached.data(), streamed.data(), cached.size() * sizeof(float)) == 0;
      for (std::int64_t i = 0; i < rows && same; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
          const double y = from_row ? row[static_cast<std::size_t>(j)] : column[static_cast<std::size_t>(i)];
          const double want = static_cast<double>(x[static_cast<std::size_t>(i * cols + j)]) * y + 1.0;
          same = same && std::abs(streamed[static_cast<std::size_t>(5 + i * cols + j)] - want) <= 1e-6 * (1 + std::abs(want));
        }
      CHECK(same);
    }
  }
}

TEST_CASE("an op whose output is larger than the streaming threshold is written streamed, and right") {
  const std::int64_t n = tandem::detail::streaming_output_bytes() / static_cast<std::int64_t>(sizeof(float)) + 17;
  tandem::tensor<float> x = tandem::arange<float>(0, static_cast<double>(n)) * 0.001f;
  std::vector<float> y = (x * 2.0f + 1.0f).to_vector();
  const float* px = x.data();
  bool right = static_cast<std::int64_t>(y.size()) == n;
  for (std::int64_t i = 0; i < n && right; ++i) {
    const double want = 2.0 * px[i] + 1.0;
    right = std::abs(y[static_cast<std::size_t>(i)] - want) <= 1e-7 * std::abs(want) + 1e-7;
  }
  CHECK(right);

  // The same size through the strided loop: a row broadcast over rows.
  const std::int64_t cols = 1031, rows = n / cols + 1;
  tandem::tensor<float> bias = tandem::arange<float>(0, static_cast<double>(cols)) * 0.5f;
  tandem::tensor<float> grid = tandem::arange<float>(0, static_cast<double>(rows * cols)).reshape({rows, cols});
  std::vector<float> sum = (grid + bias).to_vector();
  const float* pg = grid.data();
  right = static_cast<std::int64_t>(sum.size()) == grid.numel();
  for (std::int64_t i = 0; i < grid.numel() && right; ++i)
    right = sum[static_cast<std::size_t>(i)] == pg[i] + 0.5f * static_cast<float>(i % cols);
  CHECK(right);
}

TEST_CASE("a loop streams its output where it waits on memory, not where it waits on its arithmetic") {
  using namespace tandem::detail;
  CHECK(op_instructions_per_batch<tandem::add_op>() == 1);
  CHECK(op_instructions_per_batch<tandem::tanh_op>() == transcendental_instructions);
  CHECK(op_instructions_per_batch<tandem::softplus_op>() == 2 * transcendental_instructions);

  // Only a batch's size matters: a line's worth (AVX-512's floats), half a
  // line (AVX2's). A bound of 12 per line is a Zen 4's.
  using line_batch = std::array<float, 16>;
  using half_line_batch = std::array<float, 8>;
  const std::array<std::int64_t, 1> one_input{1};
  CHECK(streaming_pays<tandem::add_op, half_line_batch, 1>(std::array<std::int64_t, 2>{1, 1}, 12));
  CHECK(streaming_pays<tandem::neg_op, half_line_batch, 1>(one_input, 12));
  CHECK(streaming_pays<eight_instructions, half_line_batch, 1>(one_input, 12));
  CHECK_FALSE(streaming_pays<eight_instructions, half_line_batch, 1>(one_input, 6));
  CHECK_FALSE(streaming_pays<tandem::exp_op, line_batch, 1>(one_input, 12));
  CHECK_FALSE(streaming_pays<tandem::tanh_op, line_batch, 1>(one_input, 12));
  CHECK(streaming_pays<tandem::tanh_op, line_batch, 1>(one_input, std::int64_t{1} << 40));
  // Every line a row moves counts, outputs too; a broadcast operand moves none.
  CHECK(streaming_pays<tandem::tanh_op, line_batch, 1>(std::array<std::int64_t, 3>{1, 1, 1}, 12));
  CHECK(streaming_pays<tandem::tanh_op, line_batch, 2>(std::array<std::int64_t, 2>{1, 1}, 12));
  CHECK_FALSE(streaming_pays<tandem::tanh_op, line_batch, 1>(std::array<std::int64_t, 3>{1, 1, 0}, 12));
  CHECK(streamed_instructions_per_line(1) >= 12);
  // Intel's bound is per batch: AVX2's half-line batches may do as much per
  // batch as AVX-512's whole-line ones.
  if (intel_cpu()) CHECK(streamed_instructions_per_line(2) == 2 * streamed_instructions_per_line(1));

  // A fused group's arithmetic is its ops': tanh(x * x) + x, and its
  // backward about as much again.
  auto f = tandem::jit([](auto x) { return tanh(x * x) + x; });
  tandem::tensor<float> x{1, 2, 3};
  using root = decltype(f.trace(x));
  using value = std::remove_cvref_t<decltype(operand_at<0>(f.trace(x).children))>::node_type;
  using kernel = group_kernel<root, value>;
  static_assert(kernel::instructions_per_batch == transcendental_instructions + 2);
  static_assert(gather_adjoints<kernel, 0>::instructions_per_batch == 2 * kernel::instructions_per_batch);
}
