#pragma once
// A dispatch slot is an atomic pointer to one kernel build's function, next
// to the kernel it replaces; null means the program's own kernel runs
// (kernels/cpu/dispatch.hpp chooses, compiled/kernel_builds.hpp fills).
// call_dispatched is the one way a kernel's entry point reads its slot.

#include <atomic>
#include <utility>

#include "tandem/core/config.hpp"
#include "tandem/kernels/cpu/isa.hpp"

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {

// The slot's function where a build installed one, else Native: one relaxed
// load where the library is linked, none in header-only programs.
template <auto Native, class F, class... A>
TANDEM_ALWAYS_INLINE decltype(auto) call_dispatched([[maybe_unused]] const std::atomic<F>& slot, A&&... args) {
#if !TANDEM_HEADER_ONLY
  if (const F chosen = slot.load(std::memory_order_relaxed)) return chosen(std::forward<A>(args)...);
#endif
  return Native(std::forward<A>(args)...);
}

}  // inline namespace TANDEM_KERNEL_ISA
}  // namespace tandem::detail
