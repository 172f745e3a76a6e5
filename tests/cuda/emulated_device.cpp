// The GPU suite's cases (device_cases.hpp) on an emulated GPU: host memory
// and host loops in every slot a CUDA build fills (support/
// emulated_device.hpp). Every machine runs the host side of the GPU paths
// so: the slots asked for, the shapes, strides and offsets handed to them,
// the compositions, autograd through device tensors.
#include <string>

#include "support/emulated_device.hpp"

namespace {

// tandem::cuda::compile's work, with the emulated kernels.
template <class F, class... A>
void compile_graph(const tandem::static_graph<F>&, const A&...) {
  tandem::detail::device_kernels::install_graph<tandem::test::emulated_backend, F, A...>();
}
template <class Loss, class... A>
void compile_graph(const tandem::nn::train_step<Loss>& step, const A&... a) {
  compile_graph(step.graph(), a...);
}

}  // namespace

#include "cuda/device_cases.hpp"

TEST_CASE("the emulated GPU stands in for a CUDA build") {
  CHECK(cuda_is_available());
  CHECK(cuda_device_count() == 1);
  CHECK(std::string(tandem::detail::cuda_runtime_slot().load()->name) == "stand-in");
}
