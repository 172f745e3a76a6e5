#pragma once
// What the tests of kernel builds share (kernels/cpu/dispatch.hpp): the
// builds this CPU runs, and the choice at load put back after a test case.

#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::test {

// The levels a test can run here: each build the library holds that this
// CPU supports.
inline std::vector<instruction_set> runnable_levels() {
  std::vector<instruction_set> levels;
  for (instruction_set level : kernel_builds())
    if (level <= cpu_instruction_set()) levels.push_back(level);
  return levels;
}

// Puts the kernels chosen at load back when a test case ends.
struct kernels_restored {
  instruction_set at_start = kernel_instruction_set();
  ~kernels_restored() { set_kernel_instruction_set(at_start); }
};

}  // namespace tandem::test
