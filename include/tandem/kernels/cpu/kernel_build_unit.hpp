#pragma once
// What a translation unit compiled for one instruction set, to be chosen at
// run time (a kernel build: compiled/kernel_builds.hpp, graph/kernel_build.hpp),
// must see before anything else.
//
// xsimd's sine and cosine reduce large arguments with two scalar functions
// that are plain inline functions: one symbol in every unit that uses them,
// of which the linker keeps any copy, a build's AVX-512 code included.
// Renamed before xsimd is read, each build's copies are its own.
// (tests/kernels/build_symbols.cmake checks that a build defines nothing
// another unit could take.)

#if defined(XSIMD_HPP)
#error "tandem: a kernel build must include tandem/kernels/cpu/kernel_build_unit.hpp before xsimd"
#endif

#include "tandem/kernels/cpu/isa.hpp"

#define TANDEM_KERNEL_PASTE_EXPANDED(a, b) a##b
#define TANDEM_KERNEL_PASTE(a, b) TANDEM_KERNEL_PASTE_EXPANDED(a, b)
#define __ieee754_rem_pio2 TANDEM_KERNEL_PASTE(ieee754_rem_pio2_, TANDEM_KERNEL_ISA)
#define __kernel_rem_pio2 TANDEM_KERNEL_PASTE(kernel_rem_pio2_, TANDEM_KERNEL_ISA)
