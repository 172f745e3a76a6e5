// The demo's GPU support (built with -DTANDEM_CUDA=ON): the CUDA runtime and
// the GPU kernels, for every translation unit of the program, and the
// kernels of both models' training steps, so that in graph mode a step on
// the GPU runs as one static graph of fused kernels.
#include <tandem/cuda.hpp>

#include <cstdint>

#include "fashion_models.hpp"

namespace {

template <class Model>
bool compile_training_step() {
  tandem::cuda::compile_graph<fashion::classification_loss<Model>, tandem::tensor<float>,
                              tandem::tensor<std::int64_t>>();
  return true;
}

const bool steps_compiled = compile_training_step<fashion::mlp>() && compile_training_step<fashion::cnn>();

}  // namespace
