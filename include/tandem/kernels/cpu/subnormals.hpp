#pragma once
// Subnormal numbers flushed to zero for the span of one loop, for the ops
// that ask for it (an optimizer's update).
//
// On x86 cores an instruction whose input or result is subnormal (below
// 1.2e-38 in float, 2.2e-308 in double) takes a microcode assist of about a
// hundred cycles. An optimizer's state decays geometrically wherever the
// gradient is small or zero (Adam's second moment by 0.999 a step), so it
// spends thousands of steps in that range, and a training step's update ran
// 14x slower there (docs/benchmarks/training.md). The MXCSR's flush-to-zero
// and denormals-are-zero bits make such values 0 instead, which is what
// the update rule would do with them to within 1.2e-38; a loop that asks
// for it sets them while it runs and restores the caller's register after,
// on whichever thread runs it. Other architectures keep their own modes.

#include "tandem/kernels/cpu/isa.hpp"

#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#define TANDEM_FLUSHES_SUBNORMALS 1
#else
#define TANDEM_FLUSHES_SUBNORMALS 0
#endif

namespace tandem::detail {

// An op asks for it with `static constexpr bool flushes_subnormals = true`.
template <class Op>
constexpr bool op_flushes_subnormals() {
  if constexpr (requires { Op::flushes_subnormals; }) return Op::flushes_subnormals;
  else return false;
}

inline namespace TANDEM_KERNEL_ISA {

class subnormals_flushed {
 public:
#if TANDEM_FLUSHES_SUBNORMALS
  static constexpr unsigned flush_to_zero = 0x8000, denormals_are_zero = 0x0040;
  subnormals_flushed() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | flush_to_zero | denormals_are_zero); }
  ~subnormals_flushed() { _mm_setcsr(saved_); }
#else
  subnormals_flushed() = default;
#endif
  subnormals_flushed(const subnormals_flushed&) = delete;
  subnormals_flushed& operator=(const subnormals_flushed&) = delete;

 private:
#if TANDEM_FLUSHES_SUBNORMALS
  unsigned saved_;
#endif
};

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace tandem::detail
