#pragma once
// How the demos run a training step: eagerly, op by op; as one static graph
// call per step (jit, or mode::graph); or as the eager step under capture(),
// its elementwise ops fused at run time. And in which precision its
// products run (--precision: tandem::autocast).

#include <optional>
#include <string>

#include <tandem/core/dtype.hpp>

enum class run_mode { eager, graph, capture };

inline std::string mode_name(run_mode m) {
  return m == run_mode::eager ? "eager" : m == run_mode::graph ? "graph" : "capture";
}

inline std::optional<run_mode> parse_mode(const std::string& name) {
  for (run_mode m : {run_mode::eager, run_mode::graph, run_mode::capture})
    if (mode_name(m) == name) return m;
  return std::nullopt;
}

// --precision fp32 | bf16 | fp16: the type products round their operands to.
inline std::optional<tandem::dtype> parse_precision(const std::string& name) {
  if (name == "fp32") return tandem::dtype::float32;
  if (name == "bf16") return tandem::dtype::bfloat16;
  if (name == "fp16") return tandem::dtype::float16;
  return std::nullopt;
}
