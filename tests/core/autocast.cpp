// autocast: within a scope, the products of float tensors (matmul, its
// static-graph form with an epilogue, conv2d, and their gradients) multiply
// operands rounded to bfloat16 or float16 with float sums; nothing else
// changes, and a recorded op's backward runs under its forward's scope.

#include <array>
#include <cmath>
#include <thread>

#include "support/check.hpp"
#include "support/kernel_builds.hpp"
#include "support/products.hpp"

using namespace tandem;

namespace {

template <class R>
tensor<float> rounded(const tensor<float>& x) {
  return x.detach().astype<R>().template astype<float>();
}

// The double products a layout of a and b is checked against: of the
// operands rounded to R, and of the operands as they are.
struct references {
  std::vector<double> rounded, exact;
};

template <class R>
references references_of(const tensor<float>& a, const tensor<float>& b) {
  return {test::product_in_double(rounded<R>(a), rounded<R>(b)), test::product_in_double(a, b)};
}

// Float sums of the rounded operands: within float's error of the double
// product of the rounded values, and measurably off the unrounded one.
template <class R>
void check_rounded_product(const tensor<float>& a, const tensor<float>& b, const references& want,
                           const std::string& where) {
  const shape out{a.shape(0), b.shape(1)};
  const double k = static_cast<double>(a.shape(1));
  tensor<float> got;
  {
    const autocast scope(dtype_of<R>);
    got = matmul(a, b);
  }
  test::check_values(got, out, want.rounded, "rounded operands, " + where, 1e-5, 1e-6 * k);
  if (a.shape(1) >= 7 && out[0] * out[1] >= 4) {
    const std::vector<float> values = got.to_vector();
    double off = 0;
    for (std::size_t i = 0; i < want.exact.size(); ++i)
      off = std::max(off, std::abs(static_cast<double>(values[i]) - want.exact[i]));
    INFO(where);
    CHECK(off > 1e-5);
  }
}

}  // namespace

TEST_CASE("autocast scopes nest, end with their scope, and belong to their thread") {
  CHECK(autocast_dtype() == dtype::float32);
  {
    const autocast outer(dtype::bfloat16);
    CHECK(autocast_dtype() == dtype::bfloat16);
    {
      const autocast off(dtype::float32);
      CHECK(autocast_dtype() == dtype::float32);
      const autocast inner(dtype::float16);
      CHECK(autocast_dtype() == dtype::float16);
    }
    CHECK(autocast_dtype() == dtype::bfloat16);
    dtype elsewhere = dtype::boolean;
    std::thread([&] { elsewhere = autocast_dtype(); }).join();
    CHECK(elsewhere == dtype::float32);
  }
  CHECK(autocast_dtype() == dtype::float32);
  CHECK_THROWS_WITH_AS(autocast{dtype::float64},
                       "tandem::autocast: products round to bfloat16 or float16 (or float32, which is off), not "
                       "float64",
                       value_error);
}

// The bfloat16 kernel with float sums (vdpbf16ps where the CPU has it) and
// the float kernel on widened operands, on every build this CPU runs, with
// each operand contiguous, at stride 2 and transposed.
TEST_CASE("under autocast, float products multiply rounded operands on every kernel build") {
  const test::kernels_restored restore;
  std::vector<instruction_set> levels = test::runnable_levels();
  levels.insert(levels.begin(), instruction_set::generic);
  for (const auto& extents : {std::array<std::int64_t, 3>{1, 1, 1}, {2, 3, 31}, {13, 7, 33}, {40, 301, 100}}) {
    const std::int64_t m = extents[0], k = extents[1], n = extents[2];
    const tensor<float> a = test::random_tensor<float>({m, k}, -1, 1, 11);
    const tensor<float> b = test::random_tensor<float>({k, n}, -1, 1, 12);
    const references bfloat16_want = references_of<bfloat16>(a, b), float16_want = references_of<float16>(a, b);
    for (instruction_set level : levels) {
      set_kernel_instruction_set(level);
      for (const auto& a_laid_out : test::layouts(a))
        for (const auto& b_laid_out : test::layouts(b)) {
          const std::string where = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + ", build " +
                                    std::string(to_string(kernel_instruction_set())) + ", A " + a_laid_out.first + ", B " +
                                    b_laid_out.first;
          check_rounded_product<bfloat16>(a_laid_out.second, b_laid_out.second, bfloat16_want, where);
          check_rounded_product<float16>(a_laid_out.second, b_laid_out.second, float16_want, where);
        }
    }
  }
}

TEST_CASE("under autocast, batched products round each operand once and double products are left alone") {
  const tensor<float> x = test::random_tensor<float>({3, 5, 7}, -1, 1, 21);
  const tensor<float> w = test::random_tensor<float>({7, 4}, -1, 1, 22);
  const tensor<float> batch_of_w = test::random_tensor<float>({3, 7, 4}, -1, 1, 23);
  const autocast scope(dtype::bfloat16);
  const tensor<float> shared = matmul(x, w), batched = matmul(x, batch_of_w);
  const autocast off(dtype::float32);
  CHECK(shared.shape() == shape{3, 5, 4});
  test::check_values(shared, matmul(rounded<bfloat16>(x), rounded<bfloat16>(w)), "a weight shared by the batches",
                     1e-5, 1e-5);
  test::check_values(batched, matmul(rounded<bfloat16>(x), rounded<bfloat16>(batch_of_w)), "a batch of weights", 1e-5,
                     1e-5);
  const tensor<float> v = test::random_tensor<float>({7}, -1, 1, 24);
  const autocast again(dtype::bfloat16);
  const tensor<float> vector_product = matmul(x, v);
  const tensor<double> wide = matmul(x.astype<double>(), w.astype<double>());
  const autocast off_again(dtype::float32);
  test::check_values(vector_product, matmul(rounded<bfloat16>(x), rounded<bfloat16>(v)), "a vector operand", 1e-5,
                     1e-5);
  CHECK(wide.to_vector() == matmul(x.astype<double>(), w.astype<double>()).to_vector());
  // float16 tensors multiply their own values: autocast rounds float ones.
  const tensor<float16> h = x.astype<float16>(), hw = w.astype<float16>();
  tensor<float16> in_scope;
  {
    const autocast rounding(dtype::bfloat16);
    in_scope = matmul(h, hw);
  }
  CHECK(in_scope.astype<float>().to_vector() == matmul(h, hw).astype<float>().to_vector());
}

// d/dA sum(A B * S) = S B^T and d/dB = A^T S, each product of rounded
// operands (the sensitivity S rounded too), whether backward() runs inside
// the scope or after it.
TEST_CASE("a product recorded under autocast runs its backward under it") {
  const tensor<float> a0 = test::random_tensor<float>({9, 13}, -1, 1, 31);
  const tensor<float> b0 = test::random_tensor<float>({13, 6}, -1, 1, 32);
  const tensor<float> s = test::random_tensor<float>({9, 6}, -1, 1, 33);
  auto gradients = [&](bool backward_in_scope) {
    tensor<float> a = a0.detach(), b = b0.detach();
    a.set_requires_grad(true), b.set_requires_grad(true);
    {
      const autocast scope(dtype::bfloat16);
      tensor<float> loss = sum(matmul(a, b) * s);
      if (backward_in_scope) loss.backward();
      else {
        const autocast off(dtype::float32);
        loss.backward();
      }
    }
    return std::pair{a.grad(), b.grad()};
  };
  const auto [ga, gb] = gradients(false);
  const auto [ga_in, gb_in] = gradients(true);
  CHECK(ga.to_vector() == ga_in.to_vector());
  CHECK(gb.to_vector() == gb_in.to_vector());
  const tensor<float> ar = rounded<bfloat16>(a0), br = rounded<bfloat16>(b0), sr = rounded<bfloat16>(s);
  test::check_values(ga, matmul(sr, br.transpose(0, 1)), "dA", 1e-5, 1e-5);
  test::check_values(gb, matmul(ar.transpose(0, 1), sr), "dB", 1e-5, 1e-5);
  // Not the float gradient: the rounding shows.
  CHECK(max(abs(ga - matmul(s, b0.transpose(0, 1)))).item() > 1e-5f);
}

// A static graph's product runs its reader's group as an epilogue; under
// autocast it is the same product of rounded operands as the eager one,
// and so is its backward.
TEST_CASE("a static graph's products round under autocast as eager ones do") {
  auto layer = [](const auto& x, const auto& w, const auto& bias) { return relu(matmul(x, w) + bias); };
  auto graph = jit(layer);
  const tensor<float> x = test::random_tensor<float>({2, 17, 33}, -1, 1, 41);
  const tensor<float> w = test::random_tensor<float>({33, 19}, -1, 1, 42);
  const tensor<float> bias = test::random_tensor<float>({19}, -0.2, 0.2, 43);
  const tensor<float> s = test::random_tensor<float>({2, 17, 19}, -1, 1, 44);
  for (dtype products : {dtype::bfloat16, dtype::float16}) {
    INFO(dtype_name(products));
    auto run = [&](const auto& f) {
      tensor<float> xs = x.detach(), ws = w.detach();
      xs.set_requires_grad(true), ws.set_requires_grad(true);
      const autocast scope(products);
      tensor<float> y = f(xs, ws, bias);
      sum(y * s).backward();
      return std::array{y, xs.grad(), ws.grad()};
    };
    const auto eager = run(layer);
    const auto fused = run(graph);
    const char* names[] = {"value", "dx", "dw"};
    for (int i = 0; i < 3; ++i) {
      INFO(names[i]);
      CHECK(fused[i].to_vector() == eager[i].to_vector());
    }
    const auto rounded_operand = [&](const tensor<float>& v) {
      return products == dtype::bfloat16 ? rounded<bfloat16>(v) : rounded<float16>(v);
    };
    test::check_values(eager[0], relu(matmul(rounded_operand(x), rounded_operand(w)) + bias),
                       "value against rounded operands", 1e-5, 1e-5);
  }
}

TEST_CASE("conv2d under autocast convolves rounded operands, forward and backward") {
  const tensor<float> x0 = test::random_tensor<float>({2, 3, 9, 8}, -1, 1, 51);
  const tensor<float> w0 = test::random_tensor<float>({5, 3, 3, 3}, -1, 1, 52);
  const tensor<float> s = test::random_tensor<float>({2, 5, 7, 6}, -1, 1, 53);
  tensor<float> x = x0.detach(), w = w0.detach();
  x.set_requires_grad(true), w.set_requires_grad(true);
  tensor<float> y;
  {
    const autocast scope(dtype::bfloat16);
    y = conv2d(x, w);
  }
  sum(y * s).backward();
  // The same convolution of rounded values, with a rounded sensitivity.
  tensor<float> xr = rounded<bfloat16>(x0), wr = rounded<bfloat16>(w0);
  xr.set_requires_grad(true), wr.set_requires_grad(true);
  const tensor<float> want = conv2d(xr, wr);
  sum(want * rounded<bfloat16>(s)).backward();
  CHECK(y.to_vector() == want.to_vector());
  CHECK(x.grad().to_vector() == xr.grad().to_vector());
  CHECK(w.grad().to_vector() == wr.grad().to_vector());
}

// capture() records a step once and replays it: the products read the scope
// of the call that runs them, recorded or replayed.
TEST_CASE("a captured function's products round under the autocast of each call") {
  const tensor<float> x = test::random_tensor<float>({16, 40}, -1, 1, 61);
  const tensor<float> w = test::random_tensor<float>({40, 24}, -1, 1, 62);
  auto f = [](const tensor<float>& a, const tensor<float>& b) { return relu(matmul(a, b)) * 2.0f + 1.0f; };
  auto captured = capture(f);
  const tensor<float> in_float = f(x, w);
  tensor<float> in_bfloat16;
  {
    const autocast scope(dtype::bfloat16);
    in_bfloat16 = f(x, w);
    for (int call = 0; call < 3; ++call) test::check_values(captured(x, w), in_bfloat16, "captured, bfloat16", 1e-6, 1e-6);
  }
  CHECK(max(abs(in_bfloat16 - in_float)).item() > 1e-5f);
  test::check_values(captured(x, w), in_float, "captured, float", 1e-6, 1e-6);
}
