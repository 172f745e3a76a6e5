#pragma once
// The choice among kernel builds (declared in kernels/cpu/dispatch.hpp).
// Only tandem::compiled holds builds; it compiles this once (src/core.cpp).
// Header-only, the program's own kernels are all there is.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

#include "tandem/kernels/cpu/dispatch.hpp"

#if TANDEM_HEADER_ONLY

namespace tandem {

inline instruction_set kernel_instruction_set() { return compiled_instruction_set; }
inline instruction_set set_kernel_instruction_set(instruction_set) { return compiled_instruction_set; }
inline std::vector<instruction_set> kernel_builds() { return {}; }
inline bool detail::add_graph_kernel_builds(std::initializer_list<kernel_build>) { return true; }

}  // namespace tandem

#else

namespace tandem::detail {

// The builds CMake compiled into the library (TANDEM_KERNEL_BUILD_*), each
// with its installer (compiled/kernel_builds.hpp).
void install_kernels_isa_sse4_2(bool clear);
void install_kernels_isa_avx2(bool clear);
void install_kernels_isa_avx512(bool clear);

inline constexpr kernel_build kernel_build_list[] = {
#if defined(TANDEM_KERNEL_BUILD_SSE4_2)
    {instruction_set::sse4_2, &install_kernels_isa_sse4_2},
#endif
#if defined(TANDEM_KERNEL_BUILD_AVX2)
    {instruction_set::avx2, &install_kernels_isa_avx2},
#endif
#if defined(TANDEM_KERNEL_BUILD_AVX512)
    {instruction_set::avx512, &install_kernels_isa_avx512},
#endif
    {instruction_set::generic, nullptr},
};

inline std::atomic<instruction_set>& running_kernels() {
  static std::atomic<instruction_set> level{compiled_instruction_set};
  return level;
}

// The builds' choice, made under one lock: the level chosen among the
// library's builds (none where the program's own kernels run), and the
// program's builds of its graph kernels, which follow that choice. A
// function's static, so that a program's builds may register from static
// initializers in any order with the choice at load.
struct build_choice {
  std::mutex lock;
  bool chosen = false;
  instruction_set level = instruction_set::generic;
  std::vector<kernel_build> graph_builds;
};

inline build_choice& the_build_choice() {
  static build_choice choice;
  return choice;
}

// TANDEM_ISA's ceiling; a value naming no level is reported, not obeyed.
inline instruction_set ceiling_from_environment() {
  const char* value = std::getenv("TANDEM_ISA");
  instruction_set ceiling = instruction_set::avx512;
  if (value && !instruction_set_named(value, ceiling)) {
    std::fprintf(stderr,
                 "tandem: TANDEM_ISA=%s names no instruction set (generic, sse2, sse4_2, avx2, avx512); "
                 "running the highest this CPU supports\n",
                 value);
  }
  return ceiling;
}

}  // namespace tandem::detail

namespace tandem {

instruction_set kernel_instruction_set() { return detail::running_kernels().load(std::memory_order_relaxed); }

instruction_set set_kernel_instruction_set(instruction_set ceiling) {
  using detail::kernel_build;
  const instruction_set limit = std::min(ceiling, cpu_instruction_set());
  const kernel_build* chosen = nullptr;
  for (const kernel_build& build : detail::kernel_build_list)
    if (build.install && build.isa <= limit && (!chosen || build.isa > chosen->isa)) chosen = &build;
  // The program's own kernels run on this CPU already; a build is chosen
  // only where it is higher, or where the ceiling is below them.
  if (chosen && chosen->isa <= compiled_instruction_set && compiled_instruction_set <= limit) chosen = nullptr;
  detail::build_choice& choice = detail::the_build_choice();
  const std::lock_guard<std::mutex> lock(choice.lock);
  for (const kernel_build& build : detail::kernel_build_list)
    if (build.install && &build != chosen) build.install(true);
  if (chosen) chosen->install(false);
  choice.chosen = chosen != nullptr;
  choice.level = chosen ? chosen->isa : instruction_set::generic;
  for (const kernel_build& build : choice.graph_builds)
    if (!choice.chosen || build.isa != choice.level) build.install(true);
  for (const kernel_build& build : choice.graph_builds)
    if (choice.chosen && build.isa == choice.level) build.install(false);
  const instruction_set running = chosen ? chosen->isa : compiled_instruction_set;
  detail::running_kernels().store(running, std::memory_order_relaxed);
  return running;
}

std::vector<instruction_set> kernel_builds() {
  std::vector<instruction_set> levels;
  for (const detail::kernel_build& build : detail::kernel_build_list)
    if (build.install) levels.push_back(build.isa);
  return levels;
}

namespace detail {

bool add_graph_kernel_builds(std::initializer_list<kernel_build> builds) {
  build_choice& choice = the_build_choice();
  const std::lock_guard<std::mutex> lock(choice.lock);
  for (const kernel_build& build : builds) {
    choice.graph_builds.push_back(build);
    if (choice.chosen && build.isa == choice.level) build.install(false);
  }
  return true;
}

// The choice at load, before main: this file is compiled in one source of
// the library only (src/core.cpp).
[[maybe_unused]] const instruction_set kernels_at_load = set_kernel_instruction_set(ceiling_from_environment());
}  // namespace detail

}  // namespace tandem

#endif
