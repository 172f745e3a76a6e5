#pragma once
// The x86 instruction sets tandem's CPU kernels are built for, which one a
// translation unit is compiled for, and which ones the running CPU has.
//
// tandem::compiled can hold its eager kernels several times, each compiled
// for one instruction set in a translation unit of its own, and choose among
// them at run time (kernels/cpu/dispatch.hpp). A kernel template
// instantiated in two such units would be one symbol with two bodies, of
// which the linker keeps either: AVX-512 code on an AVX2 machine. So the
// kernels live in an inline namespace named after the instruction set of the
// unit that compiles them (TANDEM_KERNEL_ISA); code outside names them as if
// the namespace were not there. A unit's name is the highest level its flags
// reach, and a dispatched unit is compiled for exactly its level, so two
// units that share a name differ only in what every unit of the program may
// use anyway.

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512CD__) && \
    defined(__AVX512VL__)
#define TANDEM_KERNEL_ISA isa_avx512
#define TANDEM_KERNEL_ISA_ENUM avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define TANDEM_KERNEL_ISA isa_avx2
#define TANDEM_KERNEL_ISA_ENUM avx2
#elif defined(__SSE4_2__)
#define TANDEM_KERNEL_ISA isa_sse4_2
#define TANDEM_KERNEL_ISA_ENUM sse4_2
#elif defined(__SSE2__) || defined(_M_X64)
#define TANDEM_KERNEL_ISA isa_sse2
#define TANDEM_KERNEL_ISA_ENUM sse2
#else
#define TANDEM_KERNEL_ISA isa_generic
#define TANDEM_KERNEL_ISA_ENUM generic
#endif

// After the level's name: a kernel build may rename what xsimd defines
// (compiled/kernel_builds.hpp).
#include <string_view>

#if !defined(__CUDA_ARCH__)
#include <xsimd/xsimd.hpp>
#endif

namespace tandem {

// In increasing order: each level runs everything the one before it runs.
// avx2 means AVX2 with FMA (x86-64-v3), avx512 AVX-512 F, CD, DQ, BW and VL
// (x86-64-v4); generic is what a CPU without any of them (or not an x86)
// runs.
enum class instruction_set { generic, sse2, sse4_2, avx2, avx512 };

constexpr std::string_view to_string(instruction_set isa) {
  switch (isa) {
    case instruction_set::sse2: return "sse2";
    case instruction_set::sse4_2: return "sse4_2";
    case instruction_set::avx2: return "avx2";
    case instruction_set::avx512: return "avx512";
    case instruction_set::generic: break;
  }
  return "generic";
}

// The level that `name` spells (to_string's names), false if none does.
constexpr bool instruction_set_named(std::string_view name, instruction_set& isa) {
  for (instruction_set level : {instruction_set::generic, instruction_set::sse2, instruction_set::sse4_2,
                                instruction_set::avx2, instruction_set::avx512})
    if (to_string(level) == name) {
      isa = level;
      return true;
    }
  return false;
}

// The level the including translation unit is compiled for.
inline constexpr instruction_set compiled_instruction_set = instruction_set::TANDEM_KERNEL_ISA_ENUM;

// The highest level the running CPU supports (cpuid, once).
inline instruction_set cpu_instruction_set() {
#if !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(_M_X64) || defined(__i386__))
  const auto cpu = xsimd::available_architectures();
  if (cpu.avx512f && cpu.avx512cd && cpu.avx512dq && cpu.avx512bw) return instruction_set::avx512;
  if (cpu.avx2 && cpu.fma3_avx2) return instruction_set::avx2;
  if (cpu.sse4_2) return instruction_set::sse4_2;
  if (cpu.sse2) return instruction_set::sse2;
#endif
  return instruction_set::generic;
}

}  // namespace tandem
