// Devices on the host side: a tensor's device, to() / cpu(), the errors of a
// program without a CUDA runtime, of operands on two devices and of host
// reads of device memory, on a stand-in for the GPU (support/
// stand_in_device.hpp); tests/cuda runs the real thing.

#include "support/check.hpp"
#include "support/stand_in_device.hpp"

using namespace tandem;


TEST_CASE("devices are values with PyTorch's names") {
  CHECK(device::cpu.is_cpu());
  CHECK(device::cuda(1).is_cuda());
  CHECK(device::cuda().index() == 0);
  CHECK(device::cuda(0) == device::cuda());
  CHECK(device::cuda(0) != device::cuda(1));
  CHECK(device::cuda(0) != device::cpu);
  CHECK(to_string(device::cpu) == "cpu");
  CHECK(to_string(device::cuda(3)) == "cuda:3");
}

TEST_CASE("tensors live on the host unless moved; moving to their own device is free") {
  tensor<float> x{1, 2, 3};
  CHECK(x.device() == device::cpu);
  CHECK(x.to(device::cpu).storage() == x.storage());
  CHECK(x.cpu().storage() == x.storage());
  CHECK((x + 1).device() == device::cpu);
  synchronize(device::cpu);
}

TEST_CASE("a program without a CUDA runtime says how to get one") {
  REQUIRE(detail::cuda_runtime_slot().load() == nullptr);
  CHECK(cuda_device_count() == 0);
  CHECK_FALSE(cuda_is_available());
  CHECK_FALSE(cuda_is_compiled());
  const std::string how =
      " is not reachable: this program has no CUDA runtime (configure with -DTANDEM_CUDA=ON and include "
      "<tandem/cuda.hpp> in a translation unit compiled by nvcc)";
  tensor<float> x{1, 2, 3};
  CHECK_THROWS_WITH_AS(x.to(device::cuda(0)), ("tandem::to: cuda:0" + how).c_str(), device_error);
  CHECK_THROWS_WITH_AS(x.cuda(), ("tandem::to: cuda:0" + how).c_str(), device_error);
  CHECK_THROWS_WITH_AS((tensor<float>(shape{2}, device::cuda(1))), ("tandem::allocate: cuda:1" + how).c_str(), device_error);
  CHECK_THROWS_WITH_AS(synchronize(device::cuda(0)), ("tandem::synchronize: cuda:0" + how).c_str(), device_error);
  CHECK_THROWS_AS(memory_stats(device::cuda(0)), device_error);
  CHECK_THROWS_WITH_AS(memory_stats(device::cpu),
                       "tandem::memory_stats: the host's allocator is counted by tandem::memory_stats() with no device",
                       device_error);
}

TEST_CASE("to() copies to a device and back, from any layout") {
  test::with_stand_in_device runtime;
  CHECK(cuda_device_count() == 1);
  CHECK_THROWS_WITH_AS(tensor<float>(shape{2}, device::cuda(1)),
                       "tandem::allocate: cuda:1 does not exist (1 CUDA device is present)", device_error);
  for (std::int64_t n : test::tail_sizes) {
    if (n > 1000) continue;
    tensor<double> x = arange<double>(static_cast<double>(n));
    tensor<double> on_device = x.to(device::cuda(0));
    CHECK(on_device.device() == device::cuda(0));
    CHECK(on_device.shape() == x.shape());
    CHECK(on_device.cpu().to_vector() == x.to_vector());
  }
  tensor<float> grid = arange<float>(12).reshape({3, 4});
  tensor<float> transposed = grid.transpose(0, 1).cuda();
  CHECK(transposed.shape() == shape{4, 3});
  CHECK(transposed.is_contiguous());
  CHECK(transposed.cpu().to_vector() == grid.transpose(0, 1).to_vector());
  CHECK_THROWS_AS(transposed.at(0, 0), device_error);
}

TEST_CASE("reading a device tensor copies it to the host; host kernels never touch it") {
  test::with_stand_in_device runtime;
  tensor<float> x = tensor<float>{{1, 2}, {3, 4}}.cuda();
  CHECK(x.to_vector() == std::vector<float>{1, 2, 3, 4});
  CHECK(x.select(0, 1).select(0, 0).item() == 3);
  CHECK(to_string(x) == "[[1. 2.]\n [3. 4.]]");
  const std::string host_read =
      "tandem: the elements of a tensor on cuda:0 were read on the host by an op that has no cuda:0 kernel; copy the "
      "tensor with .cpu() first";
  CHECK_THROWS_WITH_AS(x.data(), host_read.c_str(), device_error);
  // An op whose GPU kernel this program lacks (no nvcc unit here) says so.
  CHECK_THROWS_WITH_AS(argmax(x),
                       "tandem::argmax: no CUDA kernel for argmax or argmin of these elements in this program (a "
                       "translation unit compiled by nvcc that includes <tandem/cuda.hpp> compiles them)",
                       device_error);
  CHECK_THROWS_WITH_AS(x.at(0, 1), host_read.c_str(), device_error);
}

TEST_CASE("operands on two devices are an error naming both") {
  test::with_stand_in_device runtime;
  tensor<float> host{1, 2, 3};
  tensor<float> gpu = tensor<float>{{1, 2, 3}}.cuda();
  CHECK_THROWS_WITH_AS(host + gpu,
                       "tandem::add: operands [3] on cpu, [1, 3] on cuda:0 are on different devices; move them to one "
                       "with to()",
                       device_error);
  CHECK_THROWS_WITH_AS(where(host > 1, gpu, 2.0f),
                       "tandem::where: operands [3] on cpu, [1, 3] on cuda:0 are on different devices; move them to "
                       "one with to()",
                       device_error);
}

TEST_CASE("assign copies across devices") {
  test::with_stand_in_device runtime;
  tensor<float> gpu = tensor<float>{{1, 2, 3}}.cuda();
  tensor<float> host = zeros<float>({2, 3});
  host.assign(gpu);
  CHECK(host.to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3});
  tensor<float> target = tensor<float>{{0, 0, 0}}.cuda();
  target.assign(tensor<float>{{4, 5, 6}});
  CHECK(target.to_vector() == std::vector<float>{4, 5, 6});
  CHECK(target.device() == device::cuda(0));
}

TEST_CASE("a GPU op whose kernel this program did not compile says so") {
  test::with_stand_in_device runtime;
  tensor<float> gpu = tensor<float>{1, 2, 3}.cuda();
  const std::string missing =
      ": no CUDA kernel for these element types in this program (a translation unit compiled by nvcc that includes "
      "<tandem/cuda.hpp> compiles the built-in ops' kernels; tandem::cuda::compile_elementwise<Op, T...>() compiles "
      "another op's)";
  CHECK_THROWS_WITH_AS(gpu * 2, ("tandem::mul" + missing).c_str(), device_error);
  CHECK_THROWS_WITH_AS(exp(gpu), ("tandem::exp" + missing).c_str(), device_error);
  CHECK_THROWS_WITH_AS(gpu.fill(1), ("tandem::fill" + missing).c_str(), device_error);
  CHECK_THROWS_WITH_AS(gpu.astype<double>(), ("tandem::astype" + missing).c_str(), device_error);
  const std::string compiled_by =
      " in this program (a translation unit compiled by nvcc that includes <tandem/cuda.hpp> compiles them)";
  CHECK_THROWS_WITH_AS(sum(gpu), ("tandem::sum: no CUDA kernel for this reduction of these elements" + compiled_by).c_str(),
                       device_error);
  CHECK_THROWS_WITH_AS(mean(gpu, 0), ("tandem::mean: no CUDA kernel for this reduction of these elements" + compiled_by).c_str(),
                       device_error);
  tensor<float> matrix = tensor<float>{{1, 2}, {3, 4}}.cuda();
  CHECK_THROWS_WITH_AS(matmul(matrix, matrix), ("tandem::matmul: no CUDA kernel for matrix products" + compiled_by).c_str(),
                       device_error);
  CHECK_THROWS_WITH_AS(matmul(matrix, tensor<float>{1, 2}),
                       "tandem::matmul: operands [2, 2] on cuda:0, [2, 1] on cpu are on different devices; move them to "
                       "one with to()",
                       device_error);
  tensor<double> logits = tensor<double>{{1, 2}, {3, 4}}.cuda();
  CHECK_THROWS_WITH_AS(softmax(logits), ("tandem::softmax: no CUDA kernel for softmax of these elements" + compiled_by).c_str(),
                       device_error);
  CHECK_THROWS_WITH_AS(
      cross_entropy(logits, tensor<std::int64_t>{0, 1}.cuda()),
      ("tandem::cross_entropy: no CUDA kernel for cross-entropy of these elements" + compiled_by).c_str(), device_error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, tensor<std::int64_t>{0, 2}.cuda()),
                       "tandem::cross_entropy: target 2 at position 1 is outside [0, 2) for logits of shape [2, 2]",
                       index_error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, tensor<std::int64_t>{0, 1}),
                       "tandem::cross_entropy: logits [2, 2] on cuda:0 and targets [2] on cpu are on different "
                       "devices; move them to one with to()",
                       device_error);
  CHECK_THROWS_WITH_AS(one_hot(tensor<std::int64_t>{0, 1}.cuda(), 2),
                       ("tandem::one_hot: no CUDA kernel for one_hot of these elements" + compiled_by).c_str(),
                       device_error);
  CHECK_THROWS_WITH_AS(one_hot(tensor<std::int64_t>{0, 2}.cuda(), 2), "tandem::one_hot: index 2 is outside [0, 2)",
                       index_error);
  tensor<float> images = zeros<float>({1, 2, 4, 4}).cuda(), kernel = zeros<float>({3, 2, 3, 3}).cuda();
  CHECK_THROWS_WITH_AS(conv2d(images, kernel),
                       ("tandem::conv2d: no CUDA kernel for convolutions of these elements" + compiled_by).c_str(),
                       device_error);
  CHECK_THROWS_WITH_AS(conv2d(images, zeros<float>({3, 2, 3, 3})),
                       "tandem::conv2d: operands [1, 2, 4, 4] on cuda:0, [3, 2, 3, 3] on cpu are on different "
                       "devices; move them to one with to()",
                       device_error);
  CHECK_THROWS_WITH_AS(max_pool2d(images),
                       ("tandem::max_pool2d: no CUDA kernel for pooling of these elements" + compiled_by).c_str(),
                       device_error);
  tensor<float> channels = ones<float>({2}).cuda();
  CHECK_THROWS_WITH_AS(
      batch_normalize(images, channels, channels, 1e-5),
      ("tandem::batch_normalize: no CUDA kernel for batch normalization of these elements" + compiled_by).c_str(),
      device_error);
  CHECK_THROWS_WITH_AS(batch_normalize(images, ones<float>({2}), channels, 1e-5),
                       "tandem::batch_normalize: operands [1, 2, 4, 4] on cuda:0, [2] on cpu, [2] on cuda:0 are on "
                       "different devices; move them to one with to()",
                       device_error);
  CHECK_THROWS_WITH_AS(matmul(tensor<std::int32_t>{{1}}.cuda(), tensor<std::int32_t>{{1}}.cuda()),
                       "tandem::matmul: the GPU multiplies float and double matrices; convert these int32 operands with "
                       "astype<float>() first",
                       device_error);
}

TEST_CASE("gradients flow back through to()") {
  test::with_stand_in_device runtime;
  tensor<double> x = tensor<double>{1, -2, 3}.set_requires_grad();
  tensor<double> round_trip = x.cuda().cpu();
  CHECK(round_trip.device() == device::cpu);
  sum(round_trip * round_trip).backward();
  CHECK(x.grad().device() == device::cpu);
  CHECK(x.grad().to_vector() == std::vector<double>{2, -4, 6});
}

TEST_CASE("device memory goes back to its runtime") {
  test::stand_in_counts() = {};
  {
    test::with_stand_in_device runtime;
    {
      tensor<float> a = zeros<float>({64}).cuda();
      tensor<float> b = a.cpu().cuda();
      CHECK(memory_stats(device::cuda(0)).live_blocks == 2);
    }
    CHECK(test::stand_in_counts().allocations == 2);
    CHECK(test::stand_in_counts().deallocations == 2);
    CHECK(test::stand_in_counts().copies == 3);
  }
}

TEST_CASE("creation functions take a device; the *_like ones keep their model's") {
  test::with_stand_in_device runtime;
  const device gpu = device::cuda(0);
  // A braced list gives values, as without a device; a shape says so.
  CHECK(tensor<float>({1, 2, 3}, gpu).device() == gpu);
  CHECK(tensor<float>({2}, gpu).to_vector() == std::vector<float>{2});
  CHECK(tensor<float>(shape{2}, gpu).numel() == 2);
  CHECK(tensor<float>({1, 2, 3}, gpu).to_vector() == std::vector<float>{1, 2, 3});
  CHECK(tensor<double>({{1, 2}, {3, 4}}, gpu).shape() == shape{2, 2});
  CHECK(empty<float>({2, 3}, gpu).device() == gpu);
  CHECK(arange<float>(4, gpu).to_vector() == std::vector<float>{0, 1, 2, 3});
  CHECK(arange<float>(1, 2, 0.5, gpu).device() == gpu);
  CHECK(linspace<double>(0, 1, 3, gpu).to_vector() == std::vector<double>{0, 0.5, 1});
  CHECK(eye<float>(2, 2, gpu).to_vector() == std::vector<float>{1, 0, 0, 1});
  CHECK(from_vector(std::vector<float>{5, 6}, gpu).device() == gpu);
  CHECK(empty_like(arange<float>(3, gpu)).device() == gpu);
  CHECK(tensor<float>(shape{2}).device() == device::cpu);
}

TEST_CASE("a static graph on GPU tensors runs its function eagerly, on the device") {
  test::with_stand_in_device runtime;
  auto twice = jit([](const auto& a) { return a * 2; });
  tensor<float> gpu = tensor<float>{1, 2}.cuda();
  // Eager: the op's own GPU kernel is looked for (and is missing here),
  // rather than a host loop reading the device's memory.
  CHECK_THROWS_WITH_AS(twice(gpu),
                       "tandem::mul: no CUDA kernel for these element types in this program (a translation unit "
                       "compiled by nvcc that includes <tandem/cuda.hpp> compiles the built-in ops' kernels; "
                       "tandem::cuda::compile_elementwise<Op, T...>() compiles another op's)",
                       device_error);
  CHECK(twice(tensor<float>{1, 2}).to_vector() == std::vector<float>{2, 4});
  CHECK(cuda_is_compiled());
}

TEST_CASE("random draws for a device are the host's numbers") {
  test::with_stand_in_device runtime;
  generator host_gen(11), device_gen(11);
  CHECK(uniform<float>({5}, -1, 1, device_gen, device::cuda(0)).to_vector() ==
        uniform<float>({5}, -1, 1, host_gen).to_vector());
  CHECK(normal<double>({4}, 0, 1, device_gen, device::cuda(0)).to_vector() ==
        normal<double>({4}, 0, 1, host_gen).to_vector());
  tensor<std::int64_t> picks = integers<std::int64_t>({6}, 0, 10, device_gen, device::cuda(0));
  CHECK(picks.device() == device::cuda(0));
  CHECK(picks.to_vector() == integers<std::int64_t>({6}, 0, 10, host_gen).to_vector());
}
