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
// the namespace were not there. A unit's name is the highest level all of
// whose features its flags enable, and a dispatched unit is compiled for
// exactly its level, so where two units share a name, the dispatched one
// uses nothing the other's program may not.

// Each level needs every feature of its x86-64 level (x86-64-v2, -v3, -v4),
// the ones a kernel build may emit: a unit compiled with -mavx2 -mfma alone
// is named sse4_2, below the AVX2 build, whose code may use BMI2.
#if defined(__SSE4_2__) && defined(__SSE4_1__) && defined(__SSSE3__) && defined(__SSE3__) && defined(__POPCNT__) && \
    defined(__LAHF_SAHF__) && defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
#define TANDEM_FLAGS_REACH_X86_64_V2 1
#else
#define TANDEM_FLAGS_REACH_X86_64_V2 0
#endif
#if TANDEM_FLAGS_REACH_X86_64_V2 && defined(__AVX2__) && defined(__FMA__) && defined(__BMI__) && defined(__BMI2__) && \
    defined(__LZCNT__) && defined(__MOVBE__) && defined(__F16C__)
#define TANDEM_FLAGS_REACH_X86_64_V3 1
#else
#define TANDEM_FLAGS_REACH_X86_64_V3 0
#endif

#if TANDEM_FLAGS_REACH_X86_64_V3 && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512CD__) && defined(__AVX512VL__)
#define TANDEM_FLAGS_REACH_X86_64_V4 1
#else
#define TANDEM_FLAGS_REACH_X86_64_V4 0
#endif

#if TANDEM_FLAGS_REACH_X86_64_V4
#define TANDEM_KERNEL_ISA isa_avx512
#define TANDEM_KERNEL_ISA_ENUM avx512
#elif TANDEM_FLAGS_REACH_X86_64_V3
#define TANDEM_KERNEL_ISA isa_avx2
#define TANDEM_KERNEL_ISA_ENUM avx2
#elif TANDEM_FLAGS_REACH_X86_64_V2
#define TANDEM_KERNEL_ISA isa_sse4_2
#define TANDEM_KERNEL_ISA_ENUM sse4_2
#elif defined(__SSE2__) || defined(_M_X64)
#define TANDEM_KERNEL_ISA isa_sse2
#define TANDEM_KERNEL_ISA_ENUM sse2
#else
#define TANDEM_KERNEL_ISA isa_generic
#define TANDEM_KERNEL_ISA_ENUM generic
#endif

// Reads no xsimd header: compiled/kernel_builds.hpp renames two of xsimd's
// functions after this one and before xsimd.
#include <initializer_list>
#include <string_view>

#if !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TANDEM_CPUID 1
#include <cpuid.h>
#else
#define TANDEM_CPUID 0
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

namespace detail {

#if TANDEM_CPUID
// Every feature `-march=x86-64-v2`, `-v3` and `-v4` let the compiler use (a
// kernel build may emit any of them, not only the vector ones: LZCNT,
// MOVBE, BMI2...), and for AVX and AVX-512 the register state the operating
// system saves (XCR0): a CPU that has AVX-512 under an OS that does not
// save its registers must not run it.
inline instruction_set detect_instruction_set() {
  auto has = [](unsigned reg, std::initializer_list<int> bits) {
    for (int bit : bits)
      if (!(reg >> bit & 1u)) return false;
    return true;
  };
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !has(d, {26})) return instruction_set::generic;
  const unsigned basic_c = c;
  const unsigned extended_c = __get_cpuid(0x80000001u, &a, &b, &c, &d) ? c : 0;
  // SSE3, SSSE3, CMPXCHG16B, SSE4.1, SSE4.2, POPCNT; LAHF in 64-bit mode.
  if (!has(basic_c, {0, 9, 13, 19, 20, 23}) || !has(extended_c, {0})) return instruction_set::sse2;
  unsigned structured_b = 0;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    structured_b = b;
  }
  unsigned long long saved_state = 0;
  if (has(basic_c, {27})) {  // OSXSAVE: XGETBV may be asked
    unsigned low = 0, high = 0;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    saved_state = (static_cast<unsigned long long>(high) << 32) | low;
  }
  // FMA, MOVBE, AVX, F16C; BMI1, AVX2, BMI2; LZCNT; SSE and AVX state.
  if (!has(basic_c, {12, 22, 28, 29}) || !has(structured_b, {3, 5, 8}) || !has(extended_c, {5}) ||
      (saved_state & 0x6) != 0x6)
    return instruction_set::sse4_2;
  // AVX-512 F, DQ, CD, BW, VL; opmask and upper ZMM state.
  if (!has(structured_b, {16, 17, 28, 30, 31}) || (saved_state & 0xe0) != 0xe0) return instruction_set::avx2;
  return instruction_set::avx512;
}

// Whether the CPU is Intel's (cpuid's vendor string "GenuineIntel"), asked
// once.
inline bool intel_cpu() {
  static const bool intel = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
  }();
  return intel;
}
#else
inline instruction_set detect_instruction_set() { return instruction_set::generic; }
inline bool intel_cpu() { return false; }
#endif

}  // namespace detail

// The highest level the running CPU and operating system support.
inline instruction_set cpu_instruction_set() {
  static const instruction_set level = detail::detect_instruction_set();
  return level;
}

}  // namespace tandem
