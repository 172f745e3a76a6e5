// The GPU suite's training cases on the emulated GPU that
// emulated_device.cpp installs (support/emulated_device.hpp).
#include "support/emulated_device.hpp"

namespace {
using tandem::test::compile_graph;
}  // namespace

#include "cuda/training_cases.hpp"
