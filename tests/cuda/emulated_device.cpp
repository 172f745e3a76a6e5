// The GPU suite's cases (device_cases.hpp) on an emulated GPU: host memory
// and host loops in every slot a CUDA build fills (support/
// emulated_device.hpp). Every machine runs the host side of the GPU paths
// so: the slots asked for, the shapes, strides and offsets handed to them,
// the compositions, autograd through device tensors.
#include <string>

#include "support/emulated_device.hpp"

#include "cuda/device_cases.hpp"

TEST_CASE("the emulated GPU stands in for a CUDA build") {
  CHECK(cuda_is_available());
  CHECK(cuda_device_count() == 1);
  CHECK(std::string(tandem::detail::cuda_runtime_slot().load()->name) == "stand-in");
}
