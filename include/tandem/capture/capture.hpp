#pragma once
// capture(fn): fused execution of ordinary eager code, found at run time
// (MindSpore's PIJit, for C++). `fn` is any callable on concrete tensors:
// no templates, no symbolic values, no compile time per function. Each call
// runs fn's own code, so whatever it reads (a module's parameters, a
// learning rate, a value it branches on) is read as eager code reads it;
// only its elementwise kernels are deferred and run fused, region by region
// (capture/session.hpp). A region's structure is its guard: the plan of a
// structure seen before is reused, a new one records a variant (bounded,
// least recently used first out). C++ cannot see what a closure reads, so
// capture does not skip running fn's code as PIJit skips Python bytecode:
// replaying a graph without it could use a stale learning rate or a
// replaced tensor, a wrong answer given quietly. Running fn costs what its
// C++ costs, without the kernels: about 0.1 us per op.
//
// With jit disabled (TANDEM_DISABLE_JIT=1, set_jit_enabled(false)) fn runs
// eagerly. A captured function called inside another's call joins it.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "tandem/autograd/engine.hpp"
#include "tandem/capture/session.hpp"
#include "tandem/capture/variant_cache.hpp"
#include "tandem/graph/mode.hpp"

namespace tandem {

struct capture_options {
  // Region structures kept with their plans.
  std::size_t cache_limit = 64;
};

namespace detail {
// The engine's runner for the backward of captured ops
// (autograd/engine.hpp): under a capture with variants of its own.
inline void run_backward_under_capture(void (*body)(void*), void* context) {
  static variant_cache backward_variants(64);
  capture_session session(backward_variants);
  body(context);
  session.finish();
}
}  // namespace detail

template <class F>
class captured {
 public:
  explicit captured(F f, capture_options options = {})
      : f_(std::move(f)), cache_(std::make_shared<detail::variant_cache>(options.cache_limit)) {
    detail::backward_capture_runner().store(&detail::run_backward_under_capture, std::memory_order_release);
    detail::install_chain_kernels();
  }

  template <class... A>
    requires std::invocable<const F&, A&&...>
  auto operator()(A&&... a) const {
    using result = std::invoke_result_t<const F&, A&&...>;
    if (!jit_enabled() || detail::active_deferred_work()) return static_cast<result>(std::invoke(f_, std::forward<A>(a)...));
    detail::capture_session session(*cache_);
    if constexpr (std::is_void_v<result>) {
      std::invoke(f_, std::forward<A>(a)...);
      session.finish();
    } else {
      // fn's locals are gone by now: only what it returned (and what it
      // stored elsewhere) is kept in memory.
      result out = std::invoke(f_, std::forward<A>(a)...);
      session.finish();
      return out;
    }
  }

  // Calls, regions, variants with their structure and use, why regions
  // ended, the guards that failed, and what fusion kept out of memory.
  std::string explain() const { return cache_->explain(); }
  capture_statistics statistics() const { return cache_->statistics(); }
  void set_cache_limit(std::size_t limit) { cache_->set_limit(limit); }
  const F& function() const { return f_; }

 private:
  F f_;
  std::shared_ptr<detail::variant_cache> cache_;
};

template <class F>
captured<std::decay_t<F>> capture(F&& f, capture_options options = {}) {
  return captured<std::decay_t<F>>(std::forward<F>(f), options);
}

}  // namespace tandem
