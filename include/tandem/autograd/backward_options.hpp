#pragma once

namespace tandem {

struct backward_options {
  // Keep saved values so that backward can run through the graph again.
  bool retain_graph = false;
  // Record the backward itself, for gradients of gradients (implies retain_graph).
  bool create_graph = false;
};

}  // namespace tandem
