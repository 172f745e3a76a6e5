// The GPU suite: every op that has a GPU kernel, on the device, against the
// same op on the CPU; the runtime (copies, the caching allocator, errors);
// gradients through device tensors. Built wherever nvcc is; without a GPU
// the program reports itself skipped (exit 77) with the reason.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <tandem/cuda.hpp>

#include <cstdio>
#include <tuple>

#include "support/check.hpp"

using namespace tandem;

namespace {

const device gpu = device::cuda(0);

template <class T>
struct gpu_tolerance {
  // The device's libm (CUDA's exp, erf, tanh...) and the host's round
  // differently within a few ulp.
  static constexpr double rel = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  static constexpr double abs = std::is_same_v<T, float> ? 2e-6 : 1e-13;
};

// The CPU tensor `base` on the GPU in the layouts of check.hpp: dense, every
// other element at an odd offset, and transposed.
template <class T>
std::vector<std::pair<std::string, tensor<T>>> device_layouts(const tensor<T>& base) {
  std::vector<std::pair<std::string, tensor<T>>> out{{"contiguous", base.to(gpu)}};
  if (base.dim() >= 1) {
    shape wide = base.shape();
    wide.back() = 2 * wide.back() + 1;
    tensor<T> buffer = zeros<T>(wide);
    buffer.slice(-1, 1, {}, 2).assign(base);
    out.emplace_back("stride 2, odd offset", buffer.to(gpu).slice(-1, 1, {}, 2));
  }
  if (base.dim() >= 2) {
    tensor<T> flipped = base.transpose(0, 1).contiguous();
    out.emplace_back("transposed", flipped.to(gpu).transpose(0, 1));
  }
  return out;
}

template <class T>
void check_same(const tensor<T>& on_device, const tensor<T>& on_host, const std::string& context) {
  INFO(context);
  CHECK(on_device.device() == gpu);
  test::check_values(on_device.cpu(), on_host, context, gpu_tolerance<T>::rel, gpu_tolerance<T>::abs);
}

// Inputs inside every unary op's domain (log, sqrt, rsqrt need x > 0).
template <class T>
tensor<T> positive_inputs(const shape& s, std::uint64_t seed) {
  return test::random_tensor<T>(s, 0.05, 4, seed);
}

}  // namespace

TEST_CASE("copies to and from the GPU keep every value") {
  for (std::int64_t n : test::tail_sizes) {
    tensor<float> x = test::random_tensor<float>({n}, -5, 5, 1);
    tensor<float> there = x.to(gpu);
    CHECK(there.device() == gpu);
    CHECK(there.cpu().to_vector() == x.to_vector());
    CHECK(there.to(gpu).storage() == there.storage());
  }
  tensor<std::int64_t> grid = arange<std::int64_t>(24).reshape({2, 3, 4});
  CHECK(grid.permute({2, 0, 1}).cuda().cpu().to_vector() == grid.permute({2, 0, 1}).to_vector());
  CHECK(tensor<double>{2.5}.cuda().item() == 2.5);
  CHECK(to_string(tensor<float>{{1, 2}, {3, 4}}.cuda()) == "[[1. 2.]\n [3. 4.]]");
}

TEST_CASE("the caching allocator reuses freed blocks and counts") {
  synchronize(gpu);
  release_cached_memory(gpu);
  device_memory_stats before = memory_stats(gpu);
  CHECK(before.cached_bytes == 0);
  { tensor<float> a({1 << 20}, gpu); }
  device_memory_stats freed = memory_stats(gpu);
  CHECK(freed.live_blocks == before.live_blocks);
  CHECK(freed.cached_bytes >= 4 << 20);
  CHECK(freed.device_mallocs == before.device_mallocs + 1);
  { tensor<float> b({1 << 20}, gpu); }
  CHECK(memory_stats(gpu).device_mallocs == freed.device_mallocs);
  CHECK(memory_stats(gpu).allocations == freed.allocations + 1);
  release_cached_memory(gpu);
  CHECK(memory_stats(gpu).cached_bytes == 0);
}

TEST_CASE("a GPU that does not exist, or operands on two devices, are errors") {
  int count = cuda_device_count();
  CHECK_THROWS_AS(tensor<float>({1}).to(device::cuda(count)), device_error);
  tensor<float> host{1, 2, 3};
  CHECK_THROWS_AS(host + host.cuda(), device_error);
  CHECK_THROWS_WITH_AS(host.cuda().data(),
                       "tandem: the elements of a tensor on cuda:0 were read on the host by an op that has no cuda:0 "
                       "kernel; copy the tensor with .cpu() first",
                       device_error);
}

TEST_CASE_TEMPLATE("every unary op on the GPU gives the CPU's values", T, float, double) {
  auto each = [&]<class Op>(Op op) {
    for (std::int64_t n : test::tail_sizes) {
      tensor<T> x = std::is_same_v<Op, log_op> || std::is_same_v<Op, sqrt_op> || std::is_same_v<Op, rsqrt_op> ||
                            std::is_same_v<Op, log1p_op>
                        ? positive_inputs<T>({n}, 3)
                        : test::random_tensor<T>({n}, -4, 4, 3);
      check_same(elementwise(op, x.cuda()), elementwise(op, x), std::string(Op::name) + " of " + std::to_string(n));
    }
    tensor<T> grid = positive_inputs<T>({5, 6}, 4);
    for (auto& [layout, on_device] : device_layouts(grid))
      check_same(elementwise(op, on_device), elementwise(op, grid), std::string(Op::name) + ", " + layout);
  };
  std::apply([&](auto... op) { (each(op), ...); }, detail::builtin_unary_ops{});
}

TEST_CASE_TEMPLATE("every binary op on the GPU broadcasts like the CPU", T, float, double) {
  auto each = [&]<class Op>(Op op) {
    for (std::int64_t n : test::tail_sizes) {
      tensor<T> a = positive_inputs<T>({n}, 5), b = test::random_tensor<T>({n}, -2, 2, 6);
      check_same(elementwise(op, a.cuda(), b.cuda()), elementwise(op, a, b),
                 std::string(Op::name) + " of " + std::to_string(n));
    }
    tensor<T> column = positive_inputs<T>({4, 1}, 7), row = test::random_tensor<T>({1, 5}, -2, 2, 8);
    check_same(elementwise(op, column.cuda(), row.cuda()), elementwise(op, column, row),
               std::string(Op::name) + ", [4, 1] by [1, 5]");
    check_same(elementwise(op, column.cuda(), T(1.5)), elementwise(op, column, T(1.5)),
               std::string(Op::name) + ", tensor by scalar");
    check_same(elementwise(op, T(0.5), row.cuda()), elementwise(op, T(0.5), row),
               std::string(Op::name) + ", scalar by tensor");
    tensor<T> grid = positive_inputs<T>({5, 6}, 9), other = test::random_tensor<T>({5, 6}, -2, 2, 10);
    for (auto& [layout, on_device] : device_layouts(grid))
      check_same(elementwise(op, on_device, other.cuda()), elementwise(op, grid, other),
                 std::string(Op::name) + ", " + layout);
  };
  std::apply([&](auto... op) { (each(op), ...); }, detail::builtin_binary_ops{});
}

TEST_CASE("where, clamp, fill, assign and conversions run on the GPU") {
  tensor<float> x = test::random_tensor<float>({3, 7}, -3, 3, 11);
  tensor<float> y = test::random_tensor<float>({7}, -3, 3, 12);
  check_same(where(x.cuda() > 0, x.cuda(), y.cuda()), where(x > 0, x, y), "where");
  check_same(clamp(x.cuda(), -1.0f, 1.0f), clamp(x, -1.0f, 1.0f), "clamp");
  check_same(x.cuda().astype<double>(), x.astype<double>(), "float to double");
  check_same(x.cuda().astype<std::int32_t>(), x.astype<std::int32_t>(), "float to int32");
  check_same((x.cuda() > 0).astype<float>(), (x > 0).astype<float>(), "bool to float");
  tensor<float> target = zeros<float>({3, 7}).cuda();
  target.slice(1, 1, {}, 2).fill(2.5f);
  tensor<float> want = zeros<float>({3, 7});
  want.slice(1, 1, {}, 2).fill(2.5f);
  check_same(target, want, "fill of a strided view");
  target.assign(y.cuda());
  check_same(target, y.expand({3, 7}).contiguous(), "assign with broadcasting");
  check_same(x.cuda().transpose(0, 1).contiguous(), x.transpose(0, 1).contiguous(), "contiguous of a transpose");
}

TEST_CASE("gradients of elementwise ops flow on the GPU and back through to()") {
  tensor<double> x = test::random_tensor<double>({9}, -2, 2, 13).set_requires_grad();
  auto f = [](const tensor<double>& t) { return exp(t) * t + sigmoid(t) * 3; };
  tensor<double> on_device = x.cuda();
  tensor<double> y = f(on_device);
  y.backward(ones<double>({9}).cuda());
  tensor<double> host_x = x.detach().set_requires_grad();
  f(host_x).backward(ones<double>({9}));
  CHECK(x.grad().device() == device::cpu);
  test::check_values(x.grad(), host_x.grad(), "gradient through the GPU", 1e-12, 1e-13);
}

int main(int argc, char** argv) {
  if (!cuda_is_available()) {
    std::puts("skipped: no CUDA device is present (the GPU suite compiled and linked only)");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
