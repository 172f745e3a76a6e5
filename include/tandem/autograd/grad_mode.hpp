#pragma once
// Whether ops record themselves for autograd, per thread. no_grad turns
// recording off for a scope (parameter updates, evaluation); enable_grad turns
// it back on inside such a scope (the functional grad does, so that it works
// wherever it is called).

namespace tandem {
namespace detail {
inline bool& grad_mode_flag() {
  thread_local bool enabled = true;
  return enabled;
}
}  // namespace detail

inline bool is_grad_enabled() { return detail::grad_mode_flag(); }

class grad_mode_guard {
 public:
  explicit grad_mode_guard(bool enabled) : previous_(detail::grad_mode_flag()) { detail::grad_mode_flag() = enabled; }
  grad_mode_guard(const grad_mode_guard&) = delete;
  grad_mode_guard& operator=(const grad_mode_guard&) = delete;
  ~grad_mode_guard() { detail::grad_mode_flag() = previous_; }

 private:
  bool previous_;
};

// { tandem::no_grad scope; ... }: nothing in the scope is recorded.
class no_grad : public grad_mode_guard {
 public:
  no_grad() : grad_mode_guard(false) {}
};

class enable_grad : public grad_mode_guard {
 public:
  enable_grad() : grad_mode_guard(true) {}
};

}  // namespace tandem
