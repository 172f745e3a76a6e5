// Tensors of bfloat16 and float16: every op computes in float and rounds its
// result once, so an op on 16-bit tensors equals the same op on their float
// values rounded to the 16-bit type, bit for bit where the float op's order
// of work is the same (elementwise ops, reductions, static graphs), and
// within the type's precision of a double reference everywhere (matrix
// products, whose bfloat16 kernel sums pairs of products).

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "support/check.hpp"
#include "support/kernel_builds.hpp"
#include "support/products.hpp"

using namespace tandem;

namespace {

// One unit in the last place at 1, relative: the precision a 16-bit result
// has when its inputs carry their own rounding.
template <class T>
constexpr double relative_ulp = std::is_same_v<T, bfloat16> ? 0x1p-7 : 0x1p-10;

template <class T>
void check_close(const tensor<T>& got, const std::vector<double>& want, const shape& s, const std::string& what,
                 double ulps = 2) {
  test::check_values(got, s, want, what, ulps * relative_ulp<T>, ulps * relative_ulp<T> * 1e-3);
}

template <class T, class F, class D>
void check_unary(const char* name, F op, D reference, double low, double high) {
  for (std::int64_t n : test::tail_sizes) {
    const tensor<T> x = test::random_tensor<float>({n}, low, high, 7).template astype<T>();
    for (const auto& laid_out : test::layouts(x)) {
      // (Named, not bound: clang 14 cannot capture a structured binding.)
      const std::string& layout = laid_out.first;
      const tensor<T>& view = laid_out.second;
      INFO(std::string(name) << ", " << n << " elements, " << layout);
      const tensor<T> y = op(view);
      // Computed in float and rounded once: the float op on the same values.
      const tensor<T> via_float = op(view.template astype<float>()).template astype<T>();
      CHECK(y.template astype<float>().to_vector() == via_float.template astype<float>().to_vector());
      if (n > 100000) continue;
      std::vector<double> want;
      for (double v : test::values_of(view)) want.push_back(reference(v));
      check_close(y, want, view.shape(), name);
    }
  }
}

template <class T>
void check_ops() {
  check_unary<T>("exp", [](const auto& x) { return exp(x); }, [](double v) { return std::exp(v); }, -4, 4);
  check_unary<T>("log", [](const auto& x) { return log(x); }, [](double v) { return std::log(v); }, 0.01, 50);
  check_unary<T>("tanh", [](const auto& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, -3, 3);
  check_unary<T>("sqrt", [](const auto& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0, 100);
  check_unary<T>("relu", [](const auto& x) { return relu(x); }, [](double v) { return v > 0 ? v : 0; }, -2, 2);
  check_unary<T>("neg", [](const auto& x) { return -x; }, [](double v) { return -v; }, -2, 2);
  check_unary<T>("x * 3", [](const auto& x) { return x * 3.0f; }, [](double v) { return v * 3; }, -2, 2);
  check_unary<T>("0.5 - x", [](const auto& x) { return 0.5f - x; }, [](double v) { return 0.5 - v; }, -2, 2);

  // Two tensors, broadcast: a [5, 1] column against a [1, 17] row.
  const tensor<T> a = test::random_tensor<float>({5, 1}, -3, 3, 1).template astype<T>();
  const tensor<T> b = test::random_tensor<float>({1, 17}, 0.5, 3, 2).template astype<T>();
  const tensor<T> quotient = a / b, product = a * b;
  std::vector<double> want_quotient, want_product;
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 17; ++j) {
      want_quotient.push_back(static_cast<double>(a.at(i, 0)) / static_cast<double>(b.at(0, j)));
      want_product.push_back(static_cast<double>(a.at(i, 0)) * static_cast<double>(b.at(0, j)));
    }
  // Exact operands: products and quotients rounded once, within half an ulp.
  check_close(quotient, want_quotient, {5, 17}, "a / b", 0.5);
  check_close(product, want_product, {5, 17}, "a * b", 0.5);
  const tensor<bool> above = a > b;
  CHECK(above.at(0, 0) == (static_cast<float>(a.at(0, 0)) > static_cast<float>(b.at(0, 0))));
}

template <class T>
void check_reductions() {
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{17}, std::int64_t{1000}}) {
    const tensor<T> x = test::random_tensor<float>({3, n}, 0.5, 2, 3).template astype<T>();
    INFO(n << " columns");
    for (int axis : {0, 1}) {
      const shape out = axis == 0 ? shape{n} : shape{3};
      std::vector<double> sums(static_cast<std::size_t>(numel(out)), 0), largest(sums.size(), 0);
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const double v = static_cast<double>(x.at(i, j));
          auto& s = sums[static_cast<std::size_t>(axis == 0 ? j : i)];
          auto& m = largest[static_cast<std::size_t>(axis == 0 ? j : i)];
          s += v;
          m = std::max(m, v);
        }
      std::vector<double> means;
      for (double s : sums) means.push_back(s / static_cast<double>(axis == 0 ? 3 : n));
      // Accumulated in float, rounded once: within an ulp of the exact sum.
      check_close(sum(x, axis), sums, out, "sum", 1);
      check_close(mean(x, axis), means, out, "mean", 1);
      check_close(max(x, axis), largest, out, "max", 0);
      // Summed as their float values are (the same SIMD order), rounded once.
      CHECK(sum(x, axis).template astype<float>().to_vector() ==
            sum(x.template astype<float>(), axis).template astype<T>().template astype<float>().to_vector());
    }
  }
  // A long span: its 16-bit values widened batch by batch.
  const tensor<T> x = test::random_tensor<float>({test::largest_size}, 0, 1, 4).template astype<T>();
  CHECK(static_cast<float>(sum(x).item()) == static_cast<float>(T(sum(x.template astype<float>()).item())));
  static_assert(std::is_same_v<decltype(sum(std::declval<tensor<T>>())), tensor<T>>);
  static_assert(std::is_same_v<decltype(mean(std::declval<tensor<T>>())), tensor<T>>);
}

// Float accumulation, one rounding: within an ulp of the double product, and
// (where cancellation makes relative error unbounded) of the terms' scale.
template <class T>
void check_product(const tensor<T>& a, const tensor<T>& b, const std::vector<double>& want) {
  const std::int64_t k = a.shape(1);
  test::check_values(matmul(a, b), {a.shape(0), b.shape(1)}, want, "matmul", relative_ulp<T>,
                     relative_ulp<T> * static_cast<double>(k) * 0.01);
}

template <class T>
void check_matmul() {
  // Shapes that hit the product's tails.
  for (const auto& extents : {std::array<std::int64_t, 3>{1, 1, 1}, {7, 17, 5}, {33, 65, 19}}) {
    const std::int64_t m = extents[0], k = extents[1], n = extents[2];
    const tensor<T> a = test::random_tensor<float>({m, k}, -1, 1, 4).template astype<T>();
    const tensor<T> b = test::random_tensor<float>({k, n}, -1, 1, 5).template astype<T>();
    INFO(m << "x" << k << "x" << n);
    check_product(a, b, test::product_in_double(a, b));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("16-bit float tensors compute in float and round once", T, bfloat16, float16) {
  check_ops<T>();
}

TEST_CASE_TEMPLATE("16-bit float reductions accumulate in float", T, bfloat16, float16) {
  check_reductions<T>();
}

TEST_CASE_TEMPLATE("16-bit float matrix products accumulate in float", T, bfloat16, float16) {
  check_matmul<T>();
}

// Conversions between float and the 16-bit types run blocks on SIMD batches:
// every 16-bit pattern widens to float, and floats round, as the scalar
// conversions do (checked exhaustively in tests/core/reduced_float.cpp),
// contiguous and strided.
TEST_CASE_TEMPLATE("16-bit tensors convert to and from float as their scalars do", T, bfloat16, float16) {
  std::vector<T> patterns;
  for (std::uint32_t bits = 0; bits < 65536; ++bits) patterns.push_back(T::from_bits(static_cast<std::uint16_t>(bits)));
  const tensor<T> all = from_vector(patterns, {65536});
  for (const auto& laid_out : test::layouts(all)) {
    INFO(laid_out.first);
    const std::vector<float> wide = laid_out.second.template astype<float>().to_vector();
    std::int64_t wrong = 0;
    for (std::size_t i = 0; i < patterns.size(); ++i)
      wrong += std::bit_cast<std::uint32_t>(wide[i]) != std::bit_cast<std::uint32_t>(static_cast<float>(patterns[i]));
    CHECK(wrong == 0);
  }
  // Floats around every 16-bit value: each value and the floats just inside
  // and outside the midpoints to its neighbours.
  std::vector<float> floats;
  for (const T& p : patterns) {
    const float v = static_cast<float>(p);
    floats.insert(floats.end(), {v, std::nextafter(v, 0.0f), std::nextafter(v, INFINITY), -v * 1.0001f});
  }
  const tensor<float> sources = from_vector(floats, {static_cast<std::int64_t>(floats.size())});
  for (const auto& laid_out : test::layouts(sources)) {
    INFO(laid_out.first);
    const tensor<T> narrow = laid_out.second.template astype<T>();
    std::int64_t wrong = 0;
    const std::vector<float> back = narrow.template astype<float>().to_vector();
    for (std::size_t i = 0; i < floats.size(); ++i)
      wrong += std::bit_cast<std::uint32_t>(back[i]) != std::bit_cast<std::uint32_t>(static_cast<float>(T(floats[i])));
    CHECK(wrong == 0);
  }
}

// The bfloat16 kernel (vdpbf16ps where the CPU has it, float elsewhere) on
// every build this CPU runs: tiles of 12 rows and 32 columns cut short, odd
// depths (a last pair of one step), and each operand contiguous, at stride 2
// and transposed (B's packing has a path for each).
TEST_CASE("bfloat16 matrix products on every kernel build, in every layout") {
  const test::kernels_restored restore;
  std::vector<instruction_set> levels = test::runnable_levels();
  levels.insert(levels.begin(), instruction_set::generic);
  for (const auto& extents :
       {std::array<std::int64_t, 3>{1, 1, 1}, {2, 3, 31}, {12, 2, 32}, {13, 7, 33}, {25, 130, 65}, {40, 301, 100}}) {
    const std::int64_t m = extents[0], k = extents[1], n = extents[2];
    const tensor<bfloat16> a = test::random_tensor<float>({m, k}, -1, 1, 6).astype<bfloat16>();
    const tensor<bfloat16> b = test::random_tensor<float>({k, n}, -1, 1, 7).astype<bfloat16>();
    const std::vector<double> want = test::product_in_double(a, b);
    for (instruction_set level : levels) {
      set_kernel_instruction_set(level);
      for (const auto& a_laid_out : test::layouts(a))
        for (const auto& b_laid_out : test::layouts(b)) {
          INFO(m << "x" << k << "x" << n << ", build " << to_string(kernel_instruction_set()) << ", A "
                 << a_laid_out.first << ", B " << b_laid_out.first);
          check_product(a_laid_out.second, b_laid_out.second, want);
        }
    }
  }
}

TEST_CASE_TEMPLATE("a static graph on 16-bit tensors computes its fused chain in float and rounds each output once",
                   T, bfloat16, float16) {
  auto f = jit([](const auto& x, const auto& y) { return sigmoid(x * y + 0.5f) - tanh(x); });
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{17}, std::int64_t{1000}}) {
    INFO(n << " elements");
    const tensor<T> x = test::random_tensor<float>({n}, -2, 2, 8).template astype<T>();
    const tensor<T> y = test::random_tensor<float>({n}, -2, 2, 9).template astype<T>();
    const tensor<T> got = f(x, y);
    // Without rounding between the ops: the float graph, rounded at the end.
    const tensor<T> want = f(x.template astype<float>(), y.template astype<float>()).template astype<T>();
    CHECK(got.template astype<float>().to_vector() == want.template astype<float>().to_vector());
  }
}

TEST_CASE("16-bit floats promote as in PyTorch and carry no gradients") {
  static_assert(std::is_same_v<promote_t<bfloat16, float>, float>);
  static_assert(std::is_same_v<promote_t<bfloat16, float16>, float>);
  static_assert(std::is_same_v<promote_t<float16, std::int64_t>, float16>);
  static_assert(std::is_same_v<promote_t<bool, bfloat16>, bfloat16>);
  static_assert(std::is_same_v<promote_t<float16, double>, double>);
  const tensor<bfloat16> h = ones<bfloat16>({3});
  const tensor<std::int32_t> i = full<std::int32_t>({3}, 2);
  static_assert(std::is_same_v<decltype(h * 2.0), tensor<bfloat16>>);
  static_assert(std::is_same_v<decltype(h + i), tensor<bfloat16>>);
  static_assert(std::is_same_v<decltype(i * bfloat16(0.5f)), tensor<float>>);
  static_assert(std::is_same_v<decltype(exp(h)), tensor<bfloat16>>);
  CHECK(dtype_name(dtype_of<bfloat16>) == "bfloat16");
  CHECK(dtype_name(dtype_of<float16>) == "float16");
  CHECK((h + i).to_vector() == std::vector<bfloat16>(3, bfloat16(3)));

  tensor<float> x = ones<float>({3});
  x.set_requires_grad(true);
  CHECK_THROWS_AS(x.astype<bfloat16>(), value_error);
  CHECK_THROWS_WITH_AS(x.astype<float16>(),
                       "tandem::cast: a float16 result cannot carry a gradient, but an input requires one; compute "
                       "in float or double, or detach() the input",
                       value_error);
  CHECK(x.detach().astype<float16>().at(0) == float16(1.0f));
}

TEST_CASE("16-bit float tensors print their shortest round-trip digits, as NumPy prints float16") {
  // str(np.array([0.1, 65504, 1e-5, -2.5], dtype=np.float16)), and the rest,
  // with NumPy's print options legacy='2.2' as for every type (from 2.3 on,
  // NumPy switches to scientific notation at 10^precision: 1000 for float16).
  CHECK(test::printed(tensor<float>{0.1f, 65504.f, 1e-5f, -2.5f}.astype<float16>()) ==
        "[ 1.00e-01  6.55e+04  1.00e-05 -2.50e+00]");
  CHECK(test::printed(tensor<float>{0.1f, 0.2f, 0.3f}.astype<float16>()) == "[0.1 0.2 0.3]");
  CHECK(test::printed(tensor<float>{1.0f / 3, 2.0f, 1000.f}.astype<float16>()) == "[3.333e-01 2.000e+00 1.000e+03]");
  CHECK(test::printed(tensor<float>{65504.f, -1.f}.astype<float16>()) == "[ 6.55e+04 -1.00e+00]");
  CHECK(test::printed(tensor<float>{65504.f, 1000.f}.astype<float16>()) == "[65504.  1000.]");
  // bfloat16 by the same rule (NumPy has no bfloat16): 0.334 is the
  // shortest decimal that rounds to bfloat16(1 / 3) = 0.333984375.
  CHECK(test::printed(tensor<float>{1.0f / 3, 1.5f}.astype<bfloat16>()) == "[0.334 1.5  ]");
  CHECK(test::printed(full<float16>({}, 0.1f)) == "0.1");
  CHECK(test::printed(tensor<float>{-std::numeric_limits<float>::infinity(), std::nanf(""), 2.f}.astype<bfloat16>()) ==
        "[-inf  nan   2.]");
}
