// The demo's GPU support (built with -DTANDEM_CUDA=ON): the CUDA runtime and
// the GPU kernels, for every translation unit of the program.
#include <tandem/cuda.hpp>
