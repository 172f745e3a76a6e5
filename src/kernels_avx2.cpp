// tandem::compiled: the kernels' AVX2 and FMA build, compiled with -march=x86-64-v3
// (CMakeLists.txt) and chosen at run time (kernels/cpu/dispatch.hpp).
#include "tandem/compiled/kernel_builds.hpp"
