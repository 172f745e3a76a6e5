#pragma once
// The GPU suite's cases: every op that runs on a GPU, on the device,
// against the same op on the CPU; gradients, modules and optimizers through
// device tensors. tests/cuda/device_ops.cu runs them on a GPU (with the
// CUDA kernels of <tandem/cuda.hpp>); tests/cuda/emulated_device.cpp runs
// them on every machine against host loops standing for those kernels
// (support/emulated_device.hpp), which checks everything but the kernels.
// The including file provides the device first, and compile_graph(graph,
// arguments...), which compiles a static graph's kernels for it.

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
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

TEST_CASE_TEMPLATE("logical ops and masks on the GPU, on every element type", T, float, double, std::int32_t,
                   std::int64_t, bool) {
  tensor<T> a = (test::random_tensor<double>({3, 7}, -2, 2, 13) > 0.3).astype<T>();
  tensor<T> b = test::random_tensor<double>({7}, -2, 2, 14).astype<T>();
  auto same = [](const tensor<bool>& on_device, const tensor<bool>& on_host, const char* what) {
    INFO(what);
    CHECK(on_device.device() == gpu);
    CHECK(on_device.to_vector() == on_host.to_vector());
  };
  same(logical_and(a.cuda(), b.cuda()), logical_and(a, b), "logical_and");
  same(logical_or(a.cuda(), b.cuda()), logical_or(a, b), "logical_or");
  same(logical_xor(a.cuda(), b.cuda()), logical_xor(a, b), "logical_xor");
  same(logical_not(a.cuda()), logical_not(a), "logical_not");
  same(a.cuda() == b.cuda(), a == b, "eq");
  same(a.cuda() != b.cuda(), a != b, "ne");
  const tensor<bool> mask = a != b;
  CHECK(where(mask.cuda(), a.cuda(), b.cuda()).to_vector() == where(mask, a, b).to_vector());
}

TEST_CASE("clamp's and relu's gradients combine masks on the GPU") {
  tensor<float> x = test::random_tensor<float>({5, 9}, -2, 2, 15);
  tensor<float> leaf = x.detach().set_requires_grad(), device_leaf = x.cuda().detach().set_requires_grad();
  sum(square(clamp(leaf, -0.5f, 1.0f)) + relu(leaf)).backward();
  sum(square(clamp(device_leaf, -0.5f, 1.0f)) + relu(device_leaf)).backward();
  check_same(device_leaf.grad(), leaf.grad(), "the gradient through clamp and relu");
}

TEST_CASE_TEMPLATE("reductions over any axes on the GPU give the CPU's values", T, float, double, std::int32_t) {
  for (std::int64_t n : test::tail_sizes) {
    tensor<T> x = test::random_tensor<T>({n}, -3, 3, 14);
    check_same(sum(x.cuda()), sum(x), "sum of " + std::to_string(n));
    check_same(mean(x.cuda()), mean(x), "mean of " + std::to_string(n));
    if (n > 0) {
      check_same(max(x.cuda()), max(x), "max of " + std::to_string(n));
      check_same(min(x.cuda()), min(x), "min of " + std::to_string(n));
    }
  }
  tensor<T> grid = test::random_tensor<T>({3, 4, 5, 6}, -2, 2, 15);
  const std::vector<std::vector<std::int64_t>> axis_sets{{0}, {1}, {3}, {0, 2}, {1, 3}, {0, 1, 2, 3}, {-1, 0}};
  for (const auto& set : axis_sets) {
    axes ax(std::span<const std::int64_t>(set.data(), set.size()));
    for (bool keep : {false, true}) {
      std::string context = "axes " + to_string(std::span<const std::int64_t>(set.data(), set.size())) +
                            (keep ? ", kept" : "");
      check_same(sum(grid.cuda(), ax, keep), sum(grid, ax, keep), "sum, " + context);
      check_same(mean(grid.cuda(), ax, keep), mean(grid, ax, keep), "mean, " + context);
      check_same(prod(grid.cuda(), ax, keep), prod(grid, ax, keep), "prod, " + context);
      check_same(max(grid.cuda(), ax, keep), max(grid, ax, keep), "max, " + context);
      check_same(min(grid.cuda(), ax, keep), min(grid, ax, keep), "min, " + context);
    }
  }
  tensor<T> matrix = test::random_tensor<T>({6, 7}, -2, 2, 16);
  for (auto& [layout, on_device] : device_layouts(matrix)) {
    check_same(sum(on_device, 0), sum(matrix, 0), "sum over rows, " + layout);
    check_same(sum(on_device, 1), sum(matrix, 1), "sum over columns, " + layout);
  }
  check_same(sum(matrix.cuda().expand({3, 6, 7}), 0), sum(matrix.expand({3, 6, 7}), 0), "sum of a broadcast view");
}

// Few outputs, each over many elements (a loss, batch statistics): each
// output is spread over several blocks, whose partials a second pass adds.
TEST_CASE("reductions with few outputs over many elements, plain and fused, on the GPU") {
  tensor<float> x = test::random_tensor<float>({64, 3, 1031}, 0, 1, 17);
  tensor<float> y = test::random_tensor<float>({3, 1}, 0.5, 1, 18);
  const axes spatial{0, 2};
  check_same(sum(x.cuda(), spatial), sum(x, spatial), "sum over the batch and space");
  check_same(mean(x.cuda(), spatial, true), mean(x, spatial, true), "mean over the batch and space");
  check_same(max(x.cuda().transpose(0, 2), {0, 2}), max(x.transpose(0, 2), {0, 2}), "max of a transposed view");
  check_same(min(x.cuda()), min(x), "min of everything");
  auto statistics = jit([](const auto& u, const auto& v) { return mean(square(u * v - 0.5f), {0, 2}); });
  compile_graph(statistics, x, y);
  check_same(statistics(x.cuda(), y.cuda()), statistics(x, y), "a fused mean over the batch and space");
  auto total = jit([](const auto& u, const auto& v) { return sum(tanh(u * v) + u); });
  compile_graph(total, x, y);
  check_same(total(x.cuda(), y.cuda()), total(x, y), "a fused sum of everything");
  check_same(grad(total)(x.cuda(), y.cuda()), grad(total)(x, y), "its gradient");
}

namespace {

void check_same_indices(const tensor<std::int64_t>& on_device, const tensor<std::int64_t>& on_host,
                        const std::string& context) {
  INFO(context);
  CHECK(on_device.device() == gpu);
  CHECK(on_device.shape() == on_host.shape());
  CHECK(on_device.cpu().to_vector() == on_host.to_vector());
}

}  // namespace

TEST_CASE_TEMPLATE("argmax and argmin on the GPU: ties and NaN go as on the host", T, float, double, std::int32_t) {
  // Whole numbers in [-2, 2]: many ties.
  tensor<T> grid = test::random_tensor<T>({3, 4, 5}, -2, 2, 50).template astype<std::int32_t>().template astype<T>();
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<T> values = grid.to_vector();
    values[7] = values[9] = values[33] = std::numeric_limits<T>::quiet_NaN();
    grid = from_vector<T>(values, grid.shape());
  }
  const std::vector<std::vector<std::int64_t>> axis_sets{{0}, {1}, {2}, {0, 2}, {0, 1, 2}};
  for (const auto& set : axis_sets) {
    axes ax(std::span<const std::int64_t>(set.data(), set.size()));
    for (bool keep : {false, true}) {
      std::string context = "axes " + to_string(std::span<const std::int64_t>(set.data(), set.size())) +
                            (keep ? ", kept" : "");
      check_same_indices(argmax(grid.cuda(), ax, keep), argmax(grid, ax, keep), "argmax, " + context);
      check_same_indices(argmin(grid.cuda(), ax, keep), argmin(grid, ax, keep), "argmin, " + context);
    }
  }
  tensor<T> matrix = grid.reshape({6, 10});
  for (auto& [layout, on_device] : device_layouts(matrix)) {
    check_same_indices(argmax(on_device, 1), argmax(matrix, 1), "argmax along rows, " + layout);
    check_same_indices(argmin(on_device, 0), argmin(matrix, 0), "argmin along columns, " + layout);
  }
  CHECK_THROWS_AS(argmax(zeros<T>({0, 3}).cuda(), 0), value_error);
}

TEST_CASE_TEMPLATE("index_select, gather, index_add and scatter_add on the GPU, with their gradients", T, float, double,
                   std::int32_t, std::int64_t) {
  tensor<T> x = test::random_tensor<T>({4, 5, 3}, -3, 3, 51);
  const tensor<std::int64_t> rows{3, 0, 3, -1, 1};
  for (std::int64_t axis : {0, 1, 2, -1}) {
    INFO("axis " << axis);
    const tensor<std::int64_t> picks = axis == 0 || axis == 1 ? rows : tensor<std::int64_t>{2, 0, 2, -1};
    check_same(index_select(x.cuda(), axis, picks), index_select(x, axis, picks), "index_select");
    check_same(index_select(x.cuda(), axis, picks.cuda()), index_select(x, axis, picks), "an index on the GPU");
    tensor<T> source = test::random_tensor<T>(index_select(x, axis, picks).shape(), -3, 3, 52);
    check_same(index_add(x.cuda(), axis, picks, source.cuda()), index_add(x, axis, picks, source),
               "index_add, with repeated rows");
  }
  for (auto& [layout, on_device] : device_layouts(x.reshape({20, 3}))) {
    tensor<T> host = on_device.cpu();
    check_same(index_select(on_device, 0, rows), index_select(host, 0, rows), "index_select, " + layout);
    check_same(index_select(on_device, 1, tensor<std::int64_t>{2, 2, 0}), index_select(host, 1, tensor<std::int64_t>{2, 2, 0}),
               "index_select along columns, " + layout);
  }
  // gather and scatter_add: a full-rank index, smaller than x off the axis.
  tensor<std::int64_t> index = test::random_tensor<std::int64_t>({3, 4, 2}, 0, 4, 53);
  for (std::int64_t axis : {0, 1}) {
    INFO("axis " << axis);
    check_same(gather(x.cuda(), axis, index), gather(x, axis, index), "gather");
    tensor<T> source = test::random_tensor<T>(index.shape(), -3, 3, 54);
    check_same(scatter_add(x.cuda(), axis, index, source.cuda()), scatter_add(x, axis, index, source),
               "scatter_add, with repeated positions");
  }
  CHECK_THROWS_AS(index_select(x.cuda(), 0, tensor<std::int64_t>{4}), index_error);
  CHECK_THROWS_AS(gather(x.cuda(), 1, full<std::int64_t>({1, 1, 1}, 5)), index_error);
  CHECK_THROWS_AS(index_add(x.cuda(), 0, rows, index_select(x, 0, rows)), device_error);

  if constexpr (std::is_floating_point_v<T>) {
    tensor<T> leaf = x.detach().set_requires_grad(), device_leaf = x.cuda().detach().set_requires_grad();
    auto loss = [&](const tensor<T>& v) {
      return sum(square(index_select(v, 1, rows))) + sum(gather(v, 0, index) * T(3));
    };
    loss(leaf).backward();
    loss(device_leaf).backward();
    check_same(device_leaf.grad(), leaf.grad(), "the gradients of index_select and gather");
    tensor<T> base = test::random_tensor<T>({4, 5, 3}, -1, 1, 55);
    tensor<T> source = test::random_tensor<T>(index_select(x, 0, rows).shape(), -1, 1, 56);
    tensor<T> host_source = source.detach().set_requires_grad(), device_source = source.cuda().detach().set_requires_grad();
    sum(square(index_add(base, 0, rows, host_source))).backward();
    sum(square(index_add(base.cuda(), 0, rows, device_source))).backward();
    check_same(device_source.grad(), host_source.grad(), "the gradient of index_add's source");
  }
}

TEST_CASE("concat, stack, split and layer norm on the GPU, with their gradients") {
  tensor<float> a = test::random_tensor<float>({2, 3}, -1, 1, 57), b = test::random_tensor<float>({2, 4}, -1, 1, 58);
  check_same(concat(std::vector{a.cuda(), b.cuda()}, 1), concat(std::vector{a, b}, 1), "concat");
  check_same(stack(std::vector{a.cuda(), a.cuda().transpose(0, 1).transpose(0, 1)}, 0), stack(std::vector{a, a}, 0),
             "stack");
  std::vector<tensor<float>> pieces = split(b.cuda(), 3, 1);
  REQUIRE(pieces.size() == 2);
  check_same(pieces[1], split(b, 3, 1)[1], "split");
  CHECK_THROWS_AS(concat(std::vector{a.cuda(), a}, 0), device_error);

  nn::layer_norm<float> host_norm(shape{4}), gpu_norm(shape{4});
  gpu_norm.to(gpu);
  tensor<float> leaf = b.detach().set_requires_grad(), device_leaf = b.cuda().detach().set_requires_grad();
  tensor<float> host_out = host_norm(concat(std::vector{leaf, leaf}, 0));
  tensor<float> device_out = gpu_norm(concat(std::vector{device_leaf, device_leaf}, 0));
  check_same(device_out, host_out, "layer norm of a concatenation");
  sum(square(host_out)).backward();
  sum(square(device_out)).backward();
  check_same(device_leaf.grad(), leaf.grad(), "the gradient through layer norm and concat");
}

TEST_CASE_TEMPLATE("matmul on the GPU: every layout, batches that broadcast, vectors", T, float, double) {
  const double rel = std::is_same_v<T, float> ? 1e-4 : 1e-11;
  for (auto [m, k, n] : {std::tuple{1, 1, 1}, {7, 17, 5}, {33, 1, 9}, {64, 128, 32}, {3, 0, 4}, {0, 5, 2}}) {
    tensor<T> a = test::random_tensor<T>({m, k}, -1, 1, 17), b = test::random_tensor<T>({k, n}, -1, 1, 18);
    for (auto& [a_layout, a_device] : device_layouts(a))
      for (auto& [b_layout, b_device] : device_layouts(b))
        test::check_values(matmul(a_device, b_device).cpu(), matmul(a, b), a_layout + " by " + b_layout, rel, rel);
  }
  tensor<T> batched = test::random_tensor<T>({2, 1, 4, 6}, -1, 1, 19), shared = test::random_tensor<T>({3, 6, 5}, -1, 1, 20);
  test::check_values(matmul(batched.cuda(), shared.cuda()).cpu(), matmul(batched, shared), "broadcast batches", rel, rel);
  tensor<T> v = test::random_tensor<T>({6}, -1, 1, 21);
  test::check_values(matmul(v.cuda(), shared.cuda()).cpu(), matmul(v, shared), "vector by batch", rel, rel);
  test::check_values(matmul(shared.cuda(), test::random_tensor<T>({5}, -1, 1, 22).cuda()).cpu(),
                     matmul(shared, test::random_tensor<T>({5}, -1, 1, 22)), "batch by vector", rel, rel);
  test::check_values(matmul(v.cuda(), v.cuda()).cpu(), matmul(v, v), "dot", rel, rel);
}

TEST_CASE_TEMPLATE("softmax, log_softmax, one_hot and cross-entropy on the GPU", T, float, double) {
  tensor<T> logits = test::random_tensor<T>({5, 7}, -6, 6, 25);
  for (std::int64_t axis : {0, 1, -1}) {
    check_same(softmax(logits.cuda(), axis), softmax(logits, axis), "softmax along " + std::to_string(axis));
    check_same(log_softmax(logits.cuda(), axis), log_softmax(logits, axis), "log_softmax along " + std::to_string(axis));
  }
  tensor<std::int64_t> target{0, 6, 3, 3, 1};
  check_same(one_hot<T>(target.cuda(), 7), one_hot<T>(target, 7), "one_hot");
  for (reduction how : {reduction::mean, reduction::sum, reduction::none})
    check_same(cross_entropy(logits.cuda(), target.cuda(), how), cross_entropy(logits, target, how), "cross_entropy");
  CHECK_THROWS_AS(cross_entropy(logits.cuda(), tensor<std::int64_t>{0, 7, 0, 0, 0}.cuda()), index_error);
  CHECK_THROWS_AS(cross_entropy(logits.cuda(), target), device_error);

  tensor<T> leaf = logits.cuda().set_requires_grad();
  cross_entropy(leaf, target.cuda()).backward();
  tensor<T> host_leaf = logits.detach().set_requires_grad();
  cross_entropy(host_leaf, target).backward();
  check_same(leaf.grad(), host_leaf.grad(), "gradient of cross_entropy");
}

TEST_CASE_TEMPLATE("conv2d, pooling and batch normalization on the GPU, with their gradients", T, float, double) {
  // cuBLAS sums a product's terms in another order than the host's GEMM.
  const double rel = std::is_same_v<T, float> ? 1e-4 : 1e-11, abs = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  auto close_on_host = [&](const tensor<T>& on_device, const tensor<T>& on_host, const std::string& context) {
    INFO(context);
    CHECK(on_device.device() == gpu);
    test::check_values(on_device.cpu(), on_host, context, rel, abs);
  };
  tensor<T> x = test::random_tensor<T>({2, 4, 9, 8}, -1, 1, 30);
  tensor<T> w = test::random_tensor<T>({6, 2, 3, 3}, -1, 1, 31);
  tensor<T> bias = test::random_tensor<T>({6}, -1, 1, 32);
  const conv2d_options o{.stride = {2, 1}, .padding = {1, 1}, .groups = 2};
  tensor<T> hx = x.detach().set_requires_grad(), hw = w.detach().set_requires_grad(), hb = bias.detach().set_requires_grad();
  tensor<T> dx = x.cuda().set_requires_grad(), dw = w.cuda().set_requires_grad(), db = bias.cuda().set_requires_grad();
  tensor<T> host_out = conv2d(hx, hw, hb, o), device_out = conv2d(dx, dw, db, o);
  close_on_host(device_out, host_out, "conv2d");
  sum(square(host_out)).backward();
  sum(square(device_out)).backward();
  close_on_host(dx.grad(), hx.grad(), "conv2d's input gradient");
  close_on_host(dw.grad(), hw.grad(), "conv2d's kernel gradient");
  close_on_host(db.grad(), hb.grad(), "conv2d's bias gradient");

  for (const pool2d_options& p : {pool2d_options{}, pool2d_options{.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}}) {
    tensor<T> hp = x.detach().set_requires_grad(), dp = x.cuda().set_requires_grad();
    tensor<T> host_max = max_pool2d(hp, p), device_max = max_pool2d(dp, p);
    close_on_host(device_max, host_max, "max_pool2d");
    tensor<T> host_avg = avg_pool2d(hp, p), device_avg = avg_pool2d(dp, p);
    close_on_host(device_avg, host_avg, "avg_pool2d");
    sum(square(host_max) + host_avg * 3).backward();
    sum(square(device_max) + device_avg * 3).backward();
    close_on_host(dp.grad(), hp.grad(), "pooling's gradients");
  }

  tensor<T> weight = test::random_tensor<T>({4}, 0.5, 2, 33), shift = test::random_tensor<T>({4}, -1, 1, 34);
  tensor<T> hn = x.detach().set_requires_grad(), dn = x.cuda().set_requires_grad();
  tensor<T> host_mean, host_var, device_mean, device_var;
  tensor<T> host_norm = batch_normalize(hn, weight, shift, 1e-5, &host_mean, &host_var);
  tensor<T> device_norm = batch_normalize(dn, weight.cuda(), shift.cuda(), 1e-5, &device_mean, &device_var);
  close_on_host(device_norm, host_norm, "batch_normalize");
  close_on_host(device_mean, host_mean, "batch_normalize's mean");
  close_on_host(device_var, host_var, "batch_normalize's variance");
  sum(square(host_norm) * host_norm).backward();
  sum(square(device_norm) * device_norm).backward();
  close_on_host(dn.grad(), hn.grad(), "batch_normalize's input gradient");
  close_on_host(batch_variance(x.cuda()), batch_variance(x), "batch_variance");
}

namespace {
// Convolution, batch norm, relu, pooling and a linear layer: the CNN's ops.
struct small_cnn : nn::module<small_cnn> {
  nn::conv2d<float> conv;
  nn::batch_norm2d<float> norm{4};
  nn::max_pool2d pool;
  nn::linear<float> out;
  explicit small_cnn(generator& gen) : conv(1, 4, {3, 3}, gen, {.padding = {1, 1}}, false), out(4 * 4 * 4, 3, gen) {
    register_module("conv", conv);
    register_module("norm", norm);
    register_module("out", out);
  }
  auto forward(const auto& images) const {
    return out(flatten(pool(relu(norm(conv(images)))), 1));
  }
};
}  // namespace

TEST_CASE("a CNN moved to the GPU trains as it does on the host") {
  generator host_gen(35), gpu_gen(35);
  small_cnn host_model(host_gen), gpu_model(gpu_gen);
  gpu_model.to(gpu);
  tensor<float> images = test::random_tensor<float>({5, 1, 8, 8}, -1, 1, 36);
  tensor<std::int64_t> labels{0, 2, 1, 1, 0};
  nn::adam host_adam(host_model.named_parameters(), {.lr = 0.01});
  nn::adam gpu_adam(gpu_model.named_parameters(), {.lr = 0.01});
  for (int step = 0; step < 3; ++step) {
    host_model.zero_grad();
    gpu_model.zero_grad();
    cross_entropy(host_model(images), labels).backward();
    cross_entropy(gpu_model(images.cuda()), labels.cuda()).backward();
    host_adam.step();
    gpu_adam.step();
  }
  test::check_values(gpu_model.conv.weight.cpu(), host_model.conv.weight, "conv weights after 3 Adam steps", 1e-4, 1e-5);
  test::check_values(gpu_model.norm.running_var.cpu(), host_model.norm.running_var, "running variance", 1e-4, 1e-5);
}

TEST_CASE_TEMPLATE("random draws on the GPU are the host's numbers from the same seed", T, float, double) {
  CHECK(bool(detail::cuda_random_slot<T, detail::uniform_law<T>>.load()));
  for (std::int64_t n : {0, 1, 7, 17, 1000003}) {
    INFO("n = " << n);
    generator host_gen(41), gpu_gen(41);
    tensor<T> host_uniform = uniform<T>({n}, -2, 3, host_gen);
    tensor<T> gpu_uniform = uniform<T>({n}, -2, 3, gpu_gen, gpu);
    CHECK(gpu_uniform.device() == gpu);
    CHECK(gpu_uniform.to_vector() == host_uniform.to_vector());
    check_same(normal<T>({n, 2}, 1, 0.5, gpu_gen, gpu), normal<T>({n, 2}, 1, 0.5, host_gen), "normal");
    tensor<std::int64_t> host_integers = integers<std::int64_t>({n}, -5, 9, host_gen);
    tensor<std::int64_t> gpu_integers = integers<std::int64_t>({n}, -5, 9, gpu_gen, gpu);
    CHECK(gpu_integers.to_vector() == host_integers.to_vector());
    CHECK(integers<std::int32_t>({3, n}, 0, 1 << 30, gpu_gen, gpu).to_vector() ==
          integers<std::int32_t>({3, n}, 0, 1 << 30, host_gen).to_vector());
    CHECK(uniform<T>({2}, 0, 1, gpu_gen, gpu).to_vector() == uniform<T>({2}, 0, 1, host_gen).to_vector());
  }
}

TEST_CASE("dropout draws its mask on the GPU: the host's mask, and its gradient") {
  nn::dropout host_drop(0.3, 44), gpu_drop(0.3, 44);
  tensor<float> x = test::random_tensor<float>({6, 33}, -1, 1, 45);
  tensor<float> host_x = x.clone().set_requires_grad(), gpu_x = x.cuda().set_requires_grad();
  for (int call = 0; call < 2; ++call) {
    tensor<float> host_out = host_drop(host_x), gpu_out = gpu_drop(gpu_x);
    check_same(gpu_out, host_out, "dropout in training, call " + std::to_string(call));
    sum(host_out * host_out).backward();
    sum(gpu_out * gpu_out).backward();
  }
  check_same(gpu_x.grad(), host_x.grad(), "dropout's gradient");
  gpu_drop.eval();
  check_same(gpu_drop(gpu_x), x, "dropout in evaluation");
}

// capture() fuses host kernels only: on GPU tensors its ops run one by one
// on the device; a host value it deferred is computed before it moves.
TEST_CASE("a captured function runs on GPU tensors, and its deferred host values move there computed") {
  tensor<float> x = test::random_tensor<float>({17}, -1, 1, 48), y = test::random_tensor<float>({17}, -1, 1, 49);
  auto loss = capture([](const tensor<float>& a, const tensor<float>& b) { return sum(tanh(a * b + a) * b); });
  CHECK(loss(x.cuda(), y.cuda()).device() == gpu);
  CHECK(loss(x.cuda(), y.cuda()).item() == doctest::Approx(loss(x, y).item()).epsilon(1e-5));
  auto [host_dx, host_dy] = grad(loss, all_args)(x, y);
  auto [dx, dy] = grad(loss, all_args)(x.cuda(), y.cuda());
  check_same(dx, host_dx, "a captured function's gradient on the GPU");
  check_same(dy, host_dy, "a captured function's gradient on the GPU");
  auto mixed = capture([&](const tensor<float>& a) {
    tensor<float> pending = a * 3.0f + 1.0f;
    return (pending.to(gpu) * y.cuda()).cpu() + pending;
  });
  test::check_values(mixed(x), (x * 3.0f + 1.0f) * y + (x * 3.0f + 1.0f), "host values deferred, then moved", 1e-6, 1e-6);
  auto across = capture([&](const tensor<float>& a) { return a * 2.0f + y.cuda(); });
  CHECK_THROWS_AS(across(x), device_error);
}

TEST_CASE("a module moved to the GPU runs forward and backward there") {
  generator gen(26);
  nn::linear<float> layer(6, 4, gen);
  tensor<float> x = test::random_tensor<float>({3, 6}, -1, 1, 27);
  tensor<float> host_out = layer(x);
  sum(square(host_out)).backward();
  tensor<float> host_grad = layer.weight.grad();
  layer.zero_grad();
  layer.to(gpu);
  CHECK(layer.weight.device() == gpu);
  tensor<float> out = layer(x.cuda());
  check_same(out, host_out, "linear forward");
  sum(square(out)).backward();
  check_same(layer.weight.grad(), host_grad, "linear weight gradient");
}

TEST_CASE("optimizers update GPU parameters as they update host ones") {
  generator gen(28);
  nn::linear<float> host_layer(5, 3, gen);
  nn::linear<float> gpu_layer = host_layer;
  gpu_layer.to(gpu);
  tensor<float> x = test::random_tensor<float>({4, 5}, -1, 1, 29);
  nn::adam host_adam(host_layer.named_parameters(), {.lr = 0.01, .weight_decay = 0.1});
  nn::adam gpu_adam(gpu_layer.named_parameters(), {.lr = 0.01, .weight_decay = 0.1});
  for (int step = 0; step < 3; ++step) {
    host_layer.zero_grad();
    gpu_layer.zero_grad();
    sum(square(host_layer(x))).backward();
    sum(square(gpu_layer(x.cuda()))).backward();
    host_adam.step();
    gpu_adam.step();
  }
  check_same(gpu_layer.weight, host_layer.weight, "Adam, 3 steps");
  nn::sgd host_sgd(host_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  nn::sgd gpu_sgd(gpu_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  for (int step = 0; step < 2; ++step) {
    host_layer.zero_grad();
    gpu_layer.zero_grad();
    sum(square(host_layer(x))).backward();
    sum(square(gpu_layer(x.cuda()))).backward();
    host_sgd.step();
    gpu_sgd.step();
  }
  check_same(gpu_layer.bias, host_layer.bias, "SGD with Nesterov momentum, 2 steps");
}

TEST_CASE("gradients of a small network's loss flow on the GPU") {
  tensor<double> w = test::random_tensor<double>({6, 3}, -1, 1, 23);
  tensor<double> x = test::random_tensor<double>({4, 6}, -1, 1, 24);
  auto loss = [&](const tensor<double>& weight, const tensor<double>& input) {
    return mean(square(tanh(matmul(input, weight)) - 0.5));
  };
  auto [host_value, host_grad] = value_and_grad(loss)(w, x);
  auto [device_value, device_grad] = value_and_grad(loss)(w.cuda(), x.cuda());
  CHECK(device_grad.device() == gpu);
  CHECK(device_value.item() == doctest::Approx(host_value.item()).epsilon(1e-12));
  test::check_values(device_grad.cpu(), host_grad, "gradient of the loss", 1e-11, 1e-12);
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


namespace {

bool planned_on_gpu(const plan_statistics& statistics) {
  for (const std::string& s : statistics.signatures)
    if (s.find("@cuda:0") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE_TEMPLATE("a static graph on the GPU runs its fused kernels, forward and backward", T, float, double) {
  auto chain = jit([](const auto& x, const auto& y) {
    auto a = x + x;
    auto b = a * y;
    return square(tanh(b * T(0.5) + T(1)) * x - T(0.25));
  });
  auto loss = jit([](const auto& x, const auto& y) { return sum(tanh(x * y + x) * y); });
  tensor<T> x = test::random_tensor<T>({5, 7}, -1, 1, 40), y = test::random_tensor<T>({7}, -1, 1, 41);
  // Not compiled for the GPU: the function eagerly, on the device.
  check_same(chain(x.cuda(), y.cuda()), chain(x, y), "the chain, eagerly on the GPU");
  CHECK_FALSE(planned_on_gpu(chain.statistics()));

  compile_graph(chain, x, y);
  compile_graph(loss, x, y);
  check_same(chain(x.cuda(), y.cuda()), chain(x, y), "the chain's fused kernel");
  CHECK(planned_on_gpu(chain.statistics()));
  // A broadcast view: the kernel reads operands through their strides.
  tensor<T> wide = test::random_tensor<T>({7, 5}, -1, 1, 42);
  check_same(chain(wide.cuda().transpose(0, 1), y.cuda()), chain(wide.transpose(0, 1), y), "a transposed operand");

  // A captured host tensor in a graph run on the GPU: an error, not a read
  // of host memory by a kernel.
  tensor<T> host_shift = test::random_tensor<T>({7}, -1, 1, 46);
  auto shifted = jit([&](const auto& v) { return v * T(2) + host_shift; });
  compile_graph(shifted, x);
  CHECK_THROWS_AS(shifted(x.cuda()), device_error);

  auto [host_dx, host_dy] = grad(loss, all_args)(x, y);
  auto [dx, dy] = grad(loss, all_args)(x.cuda(), y.cuda());
  check_same(dx, host_dx, "the fused backward's gradient of x");
  check_same(dy, host_dy, "the fused backward's gradient of y (summed over the broadcast axis)");
  CHECK(planned_on_gpu(loss.statistics()));
  // value_and_grad reads the value: the summation's kernel, then the
  // backward (grad above ran the backward alone).
  auto [host_value, host_gradient] = value_and_grad(loss)(x, y);
  auto [value, gradient] = value_and_grad(loss)(x.cuda(), y.cuda());
  CHECK(value.item() == doctest::Approx(host_value.item()).epsilon(gpu_tolerance<T>::rel));
  check_same(gradient, host_gradient, "value_and_grad's gradient");
  auto average = jit([](const auto& u, const auto& v) { return mean(exp(u * v) - u); });
  compile_graph(average, x, y);
  check_same(grad(average)(x.cuda(), y.cuda()), grad(average)(x, y), "the gradient of a fused mean, backward alone");
  // The run grad makes: the backward alone leaves the unread value NaN.
  const tensor<T> on_x = x.cuda().detach().set_requires_grad();
  CHECK(std::isnan(average.call_with_unit_seed(std::tuple{on_x, y.cuda()}, false).item()));

  // Fused summations over some axes: one pass each, a broadcast and a
  // transposed operand read through their strides.
  auto partial_sums = jit([](const auto& u, const auto& v) { return sum(tanh(u * v) + u, 1, true) + mean(u * v, 0); });
  compile_graph(partial_sums, x, y);
  check_same(partial_sums(x.cuda(), y.cuda()), partial_sums(x, y), "a sum over axis 1 (kept) and a mean over axis 0");
  check_same(partial_sums(wide.cuda().transpose(0, 1), y.cuda()), partial_sums(wide.transpose(0, 1), y),
             "the same of a transposed operand");
  auto [host_px, host_py] = grad([&](const auto& u, const auto& v) { return sum(partial_sums(u, v)); }, all_args)(x, y);
  auto [px, py] =
      grad([&](const auto& u, const auto& v) { return sum(partial_sums(u, v)); }, all_args)(x.cuda(), y.cuda());
  check_same(px, host_px, "the gradient of x through the partial sums");
  check_same(py, host_py, "the gradient of y through the partial sums");
  CHECK(planned_on_gpu(partial_sums.statistics()));
}

TEST_CASE("into() on the GPU: the fused kernel writes into the tensor given, views included") {
  auto chain = jit([](const auto& x, const auto& y) { return tanh(x * y + x) * y; });
  tensor<float> x = test::random_tensor<float>({5, 7}, -1, 1, 50), y = test::random_tensor<float>({7}, -1, 1, 51);
  const tensor<float> want = chain(x, y);
  const tensor<float> on_x = x.cuda(), on_y = y.cuda();
  tensor<float> eager_out = zeros<float>({5, 7}, gpu);
  chain.into(eager_out, on_x, on_y);
  check_same(eager_out, want, "into() before the graph is compiled: eagerly, then copied");

  compile_graph(chain, x, y);
  tensor<float> out = zeros<float>({5, 7}, gpu);
  const std::int64_t before = memory_stats(gpu).allocations;
  chain.into(out, on_x, on_y);
  CHECK(memory_stats(gpu).allocations == before);
  check_same(out, want, "into() by the fused kernel");
  CHECK(planned_on_gpu(chain.statistics()));
  tensor<float> wide = zeros<float>({7, 5}, gpu);
  chain.into(wide.transpose(0, 1), on_x, on_y);
  check_same(wide.transpose(0, 1).contiguous(), want, "into() a transposed view");
  CHECK_THROWS_AS(chain.into(zeros<float>({5, 6}, gpu), on_x, on_y), shape_error);
}

TEST_CASE("a jit training step runs as one static graph on the GPU") {
  generator host_gen(43), gpu_gen(43);
  nn::linear<float> host_layer(6, 4, host_gen), gpu_layer(6, 4, gpu_gen);
  gpu_layer.to(gpu);
  nn::sgd host_sgd(host_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  nn::sgd gpu_sgd(gpu_layer.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  auto host_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return mean(square(relu(host_layer(x)) - t)); }, host_sgd));
  auto gpu_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return mean(square(relu(gpu_layer(x)) - t)); }, gpu_sgd));
  tensor<float> x = test::random_tensor<float>({8, 6}, -1, 1, 44), t = test::random_tensor<float>({8, 4}, 0, 1, 45);
  compile_graph(gpu_step, x, t);
  for (int step = 0; step < 3; ++step) {
    float host_loss = host_step(x, t).item();
    float gpu_loss = gpu_step(x.cuda(), t.cuda()).item();
    CHECK(gpu_loss == doctest::Approx(host_loss).epsilon(1e-5));
  }
  CHECK(planned_on_gpu(gpu_step.graph().statistics()));
  test::check_values(gpu_layer.weight.cpu(), host_layer.weight, "weights after 3 steps", 1e-5, 1e-6);
  test::check_values(gpu_layer.bias.cpu(), host_layer.bias, "bias after 3 steps", 1e-5, 1e-6);
}

// Every op a graph runs through an eager kernel (convolution, batch norm,
// pooling, cross-entropy), inside one training step compiled for the GPU.
TEST_CASE("a jit training step of a CNN with cross-entropy runs as one static graph on the GPU") {
  generator host_gen(47), gpu_gen(47);
  small_cnn host_model(host_gen), gpu_model(gpu_gen);
  gpu_model.to(gpu);
  nn::adam host_adam(host_model.named_parameters(), {.lr = 1e-2});
  nn::adam gpu_adam(gpu_model.named_parameters(), {.lr = 1e-2});
  auto host_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return nn::cross_entropy(host_model(x), t); }, host_adam));
  auto gpu_step = jit(nn::train_step(
      [&](const auto& x, const auto& t) { return nn::cross_entropy(gpu_model(x), t); }, gpu_adam));
  tensor<float> x = test::random_tensor<float>({6, 1, 8, 8}, -1, 1, 48);
  tensor<std::int64_t> t{0, 2, 1, 1, 0, 2};
  compile_graph(gpu_step, x, t);
  for (int step = 0; step < 3; ++step) {
    float host_loss = host_step(x, t).item();
    float gpu_loss = gpu_step(x.cuda(), t.cuda()).item();
    CHECK(gpu_loss == doctest::Approx(host_loss).epsilon(1e-4));
  }
  CHECK(planned_on_gpu(gpu_step.graph().statistics()));
  test::check_values(gpu_model.conv.weight.cpu(), host_model.conv.weight, "convolution weights after 3 steps", 1e-4,
                     1e-5);
  test::check_values(gpu_model.norm.running_var.cpu(), host_model.norm.running_var, "running variance after 3 steps",
                     1e-4, 1e-5);
  test::check_values(gpu_model.out.weight.cpu(), host_model.out.weight, "output weights after 3 steps", 1e-4, 1e-5);
}
