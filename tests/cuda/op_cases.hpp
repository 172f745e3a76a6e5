#pragma once
// The GPU suite's cases for the ops: each on the device against the same op
// on the CPU (sizes that hit the tails, broadcasting, strided and
// transposed views, every axis set), gradients where it has one, random
// draws against the host's (device_testing.hpp says who runs them).

#include "cuda/device_testing.hpp"

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
  // Batch [2, 3]: a's offsets step unevenly (0 0 0 24 24 24), which takes
  // cuBLAS's call through arrays of pointers; an even step (a dense batch,
  // one broadcast matrix) takes the strided call.
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

TEST_CASE_TEMPLATE("scaled_dot_product_attention on the GPU is the fused op, forward and backward", T, float, double) {
  // Sums run in another order than the CPU kernel's tiles.
  const double rel = std::is_same_v<T, float> ? 1e-4 : 1e-11, abs = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  struct problem {
    std::string name;
    std::int64_t batch, heads, key_heads, tq, tk, d, dv;
    attention_options options;
  };
  tensor<bool> hides_a_row = ones<bool>({5, 9});
  hides_a_row.slice(0, 2, 3).fill(false);  // query 2 sees nothing: a NaN row, zero gradients
  hides_a_row.slice(1, 4, 5).fill(false);
  const std::vector<problem> problems{
      {"plain", 2, 3, 3, 17, 17, 16, 16, {}},
      {"causal, widths 40 and 24", 1, 2, 2, 33, 33, 40, 24, {.causal = true}},
      {"causal, fewer queries than keys", 2, 2, 2, 3, 10, 8, 8, {.causal = true, .scale = 0.3}},
      {"keys and values shared by the heads", 2, 4, 1, 9, 9, 8, 8, {.causal = true}},
      {"a mask", 1, 2, 2, 5, 9, 8, 8, {.mask = hides_a_row}},
      {"dropout", 2, 2, 2, 12, 12, 8, 8, {.causal = true, .dropout = 0.25, .seed = 7}},
      {"heads 100 wide", 1, 2, 2, 6, 6, 100, 100, {}},
      {"no keys", 1, 2, 2, 4, 0, 8, 8, {}},
  };
  for (const problem& pr : problems) {
    INFO(pr.name);
    // Heads split from [B, T, H, D] by a transpose, as a model's are.
    auto operand = [&](std::int64_t heads, std::int64_t rows, std::int64_t width, std::uint64_t seed) {
      return test::random_tensor<T>({pr.batch, rows, heads, width}, -1, 1, seed);
    };
    const tensor<T> q = operand(pr.heads, pr.tq, pr.d, 60), k = operand(pr.key_heads, pr.tk, pr.d, 61),
                    v = operand(pr.key_heads, pr.tk, pr.dv, 62);
    const tensor<T> weights = test::random_tensor<T>({pr.batch, pr.heads, pr.tq, pr.dv}, -1, 1, 63);
    attention_options on_device = pr.options;
    if (on_device.mask) on_device.mask = on_device.mask->cuda();
    tensor<T> hq = q.detach().set_requires_grad(), hk = k.detach().set_requires_grad(),
              hv = v.detach().set_requires_grad();
    tensor<T> dq = q.cuda().set_requires_grad(), dk = k.cuda().set_requires_grad(), dv = v.cuda().set_requires_grad();
    tensor<T> host_out = scaled_dot_product_attention(hq.transpose(1, 2), hk.transpose(1, 2), hv.transpose(1, 2),
                                                      pr.options);
    tensor<T> device_out = scaled_dot_product_attention(dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2),
                                                        on_device);
    test::check_values(device_out.cpu(), host_out, "the output", rel, abs);
    // The fused kernel lays the result out as [B, T, H, D].
    CHECK(device_out.transpose(1, 2).is_contiguous());
    auto loss = [&](const tensor<T>& out, const tensor<T>& w) { return sum(where(isnan(out), T(0), out) * w); };
    loss(host_out, weights).backward();
    loss(device_out, weights.cuda()).backward();
    test::check_values(dq.grad().cpu(), hq.grad(), "dq", rel, abs);
    test::check_values(dk.grad().cpu(), hk.grad(), "dk", rel, abs);
    test::check_values(dv.grad().cpu(), hv.grad(), "dv", rel, abs);
  }
  // Wider heads than a GPU thread holds run the composed form, same values.
  tensor<T> wide = test::random_tensor<T>({1, 3, 130}, -1, 1, 64);
  tensor<T> composed = scaled_dot_product_attention(wide.cuda(), wide.cuda(), wide.cuda(), {.causal = true});
  test::check_values(composed.cpu(), scaled_dot_product_attention(wide, wide, wide, {.causal = true}), "130 wide", rel,
                     abs);
}
