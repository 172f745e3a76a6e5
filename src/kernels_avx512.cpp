// tandem::compiled: the kernels' AVX-512 build, compiled with -march=x86-64-v4
// (CMakeLists.txt) and chosen at run time (kernels/cpu/dispatch.hpp).
#include "tandem/compiled/kernel_builds.hpp"
