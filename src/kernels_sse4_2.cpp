// tandem::compiled: the kernels' SSE4.2 build, compiled with -march=x86-64-v2
// (CMakeLists.txt) and chosen at run time (kernels/cpu/dispatch.hpp).
#include "tandem/compiled/kernel_builds.hpp"
