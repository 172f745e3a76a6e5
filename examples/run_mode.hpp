#pragma once
// How the demos run a training step: eagerly, op by op; as one static graph
// call per step (jit, or mode::graph); or as the eager step under capture(),
// its elementwise ops fused at run time.

#include <optional>
#include <string>

enum class run_mode { eager, graph, capture };

inline std::string mode_name(run_mode m) {
  return m == run_mode::eager ? "eager" : m == run_mode::graph ? "graph" : "capture";
}

inline std::optional<run_mode> parse_mode(const std::string& name) {
  for (run_mode m : {run_mode::eager, run_mode::graph, run_mode::capture})
    if (mode_name(m) == name) return m;
  return std::nullopt;
}
