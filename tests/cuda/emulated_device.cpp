// The GPU suite's cases on an emulated GPU: host memory and host loops in
// every slot a CUDA build fills (support/emulated_device.hpp). Every
// machine runs the host side of the GPU paths so: the slots asked for, the
// shapes, strides and offsets handed to them, the compositions, autograd
// through device tensors. This unit installs the emulation and runs the
// ops' cases; emulated_training.cpp runs the training cases, in a unit of
// its own so that the two compile side by side.
#include <string>

#include "support/emulated_device.hpp"

namespace {
const bool emulated_device_installed =
    tandem::detail::device_kernels::install_all<tandem::test::emulated_backend>();
using tandem::test::compile_graph;
}  // namespace

#include "cuda/op_cases.hpp"

TEST_CASE("the emulated GPU stands in for a CUDA build") {
  CHECK(emulated_device_installed);
  CHECK(cuda_is_available());
  CHECK(cuda_device_count() == 1);
  CHECK(std::string(tandem::detail::cuda_runtime_slot().load()->name) == "stand-in");
}
