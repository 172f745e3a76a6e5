#pragma once
// Which build of the CPU kernels runs.
//
// A header-only program runs the kernels its own flags compile. The compiled
// library (tandem::compiled, built with TANDEM_DISPATCH, the default on
// x86-64) also holds builds of its hot kernels for SSE4.2, AVX2 + FMA and
// AVX-512 (src/kernels_*.cpp, compiled/kernel_builds.hpp): every built-in
// elementwise op's row, the matrix product, the reductions' inner loops,
// softmax, batch normalization's moments and capture's register chains.
// When the program starts, the highest build the CPU supports runs, or the
// program's own kernels where they are at least as high; the environment
// variable TANDEM_ISA (sse2, sse4_2, avx2, avx512) sets a lower ceiling. So
// a binary compiled for plain x86-64 runs AVX2 or AVX-512 code on machines
// that have it.
//
// A program's static graphs' fused kernels are its own code: it may build
// them for the same levels (graph/kernel_build.hpp, CMake's
// tandem_graph_kernels), and those builds are chosen with the library's.
// What no build holds (optimizers' updates, the fused kernels of graphs
// without a build) runs as the program's flags compile it.

#include <initializer_list>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/kernels/cpu/isa.hpp"

namespace tandem {

// The level of the kernels running now.
instruction_set kernel_instruction_set();

// Runs the highest build at or below `ceiling` that the CPU supports, or the
// program's own kernels where none is higher than them within the ceiling
// (they run on this CPU anyway); returns the level now running. Changing it
// while another thread runs kernels leaves that thread's op on either build.
// Header-only, nothing changes: the program's own level is returned.
instruction_set set_kernel_instruction_set(instruction_set ceiling);

// The levels the library holds builds of, besides the program's own.
std::vector<instruction_set> kernel_builds();

namespace detail {

// One level's build of kernels: its installer points the dispatch slots at
// its kernels, or clears them.
struct kernel_build {
  instruction_set isa;
  void (*install)(bool clear);
};

// Builds of a program's graph kernels (graph/kernel_build.hpp), chosen from
// now on with the library's builds of the same level; installed at once
// where that level runs. Returns true (for a static initializer).
bool add_graph_kernel_builds(std::initializer_list<kernel_build> builds);

}  // namespace detail

}  // namespace tandem

#if TANDEM_HEADER_ONLY
#include "tandem/kernels/cpu/dispatch-inl.hpp"
#endif
