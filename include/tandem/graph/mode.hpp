#pragma once
// The switches of static graphs. mode::graph makes modules run their forward
// as a static graph (MindSpore's GRAPH_MODE). Disabling jit (the
// TANDEM_DISABLE_JIT=1 environment variable, or set_jit_enabled(false)) runs
// every static graph eagerly, op by op, with the same results, so that a
// debugger can step through it.

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace tandem {

enum class mode { eager, graph };

namespace detail {
inline std::atomic<mode>& current_mode() {
  static std::atomic<mode> value{mode::eager};
  return value;
}
inline std::atomic<bool>& jit_switch() {
  static std::atomic<bool> enabled{[] {
    const char* disabled = std::getenv("TANDEM_DISABLE_JIT");
    return !(disabled && std::strcmp(disabled, "0") != 0 && *disabled != '\0');
  }()};
  return enabled;
}
}  // namespace detail

inline void set_mode(mode m) { detail::current_mode().store(m); }
inline mode get_mode() { return detail::current_mode().load(); }

inline void set_jit_enabled(bool enabled) { detail::jit_switch().store(enabled); }
inline bool jit_enabled() { return detail::jit_switch().load(); }

}  // namespace tandem
