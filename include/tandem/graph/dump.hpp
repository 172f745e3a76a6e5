#pragma once
// A traced graph as text and as Graphviz dot, forward and backward, with the
// fusion groups the compile-time passes found. The dump walks the traced
// values, so every runtime instance is one line (two nodes of one type that
// hold different scalars are two lines), and reads the passes' answers for
// each class: which values get a buffer, which are computed in registers
// inside a group's loop.

#include <cstddef>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tandem/graph/execute.hpp"
#include "tandem/graph/sharing.hpp"
#include "tandem/graph/structure.hpp"

namespace tandem {
namespace detail {

// A sub-graph of a control-flow construct (a branch, a loop body), as the
// dumps print it under the graph that holds the construct.
struct subgraph_dump {
  std::string name;  // "true branch", "body"
  std::string text;
  // Its forward as a dot cluster whose names start with `prefix`, with a
  // dashed edge from each of its outputs to the construct's node.
  std::function<void(std::ostream& out, const std::string& prefix, const std::string& construct)> dot;
};

// One traced value, as the dumps print it.
struct dump_value {
  std::string op;              // "mul", "input 0", "constant 0.5", "sum"...
  std::string dtype;           // "float32"
  std::vector<std::size_t> operands;
  bool buffer = false;         // materialized: an output, or a group's or kernel's result
  bool eager_kernel = false;   // a non-elementwise op run by its eager kernel
  bool host = false;           // of those, a host call (graph/host.hpp): a graph break
  bool construct = false;      // a control-flow construct (graph/control.hpp)
  bool construct_output = false;
  std::vector<subgraph_dump> subgraphs;  // a construct's
  bool reduces = false;        // a sum or mean computed inside its group's loop
  bool epilogue = false;       // a matmul running its reader's group on each finished block
  std::size_t epilogue_group = 0;
  bool leaf = false;           // an input, a captured tensor or a scalar
  bool takes_gradient = false; // floating, and not a scalar of the program
  std::vector<std::size_t> groups;  // the fused loops computing it (a pure value may be recomputed in several)
};

// One step of the backward: the gradient of a buffer sent on to the values
// it was computed from, by one fused adjoint loop or by an eager backward.
struct dump_step {
  std::size_t from;
  std::vector<std::size_t> to;
};

template <class Root>
class graph_dumper {
 public:
  std::vector<dump_value> values;
  std::vector<std::size_t> outputs;
  std::size_t group_count = 0;
  std::vector<dump_step> backward;  // in the order they run

  explicit graph_dumper(const Root& root) {
    apply_operands([&](const auto&... out) { (outputs.push_back(visit(out)), ...); }, root.children);
    for (std::size_t v = 0; v < values.size(); ++v)
      if (values[v].buffer && !values[v].eager_kernel) mark_group(v, group_count++);
    for (std::size_t u = 0; u < values.size(); ++u)
      for (std::size_t c : values[u].operands)
        if (values[c].epilogue) values[c].epilogue_group = values[u].groups.front();
    for (std::size_t v = values.size(); v-- > 0;)
      if (values[v].buffer && values[v].takes_gradient) backward.push_back({v, gradient_targets(v)});
  }

  bool in_group(std::size_t v, std::size_t group) const {
    for (std::size_t g : values[v].groups)
      if (g == group) return true;
    return false;
  }

 private:
  std::unordered_map<const void*, std::size_t> seen_;

  template <class N>
  std::size_t visit(const sym<N>& s) {
    const void* key = key_of(s);
    if (auto found = seen_.find(key); found != seen_.end()) return found->second;
    dump_value v;
    v.dtype = std::string(dtype_name(dtype_of<value_of_t<N>>));
    v.takes_gradient = std::is_floating_point_v<value_of_t<N>> && !node_traits<N>::is_constant;
    if constexpr (node_traits<N>::is_input) {
      v.op = "input " + std::to_string(node_traits<N>::index);
      v.leaf = true;
    } else if constexpr (node_traits<N>::is_captured) {
      v.op = "captured " + to_string(s.node().value.shape());
      v.leaf = true;
    } else if constexpr (node_traits<N>::is_constant) {
      std::ostringstream text;
      text << "constant " << +s.node().value;
      v.op = text.str();
      v.leaf = true;
    } else {
      apply_operands([&](const auto&... c) { (v.operands.push_back(visit(c)), ...); }, s.node().children);
      if constexpr (fused_summation<Root, N>()) {
        v.op = s.node().name;
        v.buffer = v.reduces = true;
      } else if constexpr (is_control_node<N>) {
        v.op = s.node().name;
        v.buffer = v.eager_kernel = v.construct = true;
        // Its outputs' gradients pass through it to its operands.
        v.takes_gradient = true;
        s.node().fn.impl.describe(v.subgraphs);
      } else if constexpr (is_control_output_node<N>) {
        v.op = std::string(s.node().name) + " output " + std::to_string(N::fn_type::index);
        v.buffer = v.eager_kernel = v.construct_output = true;
      } else if constexpr (node_traits<N>::is_apply) {
        v.op = s.node().name;
        v.buffer = v.eager_kernel = true;
        v.host = is_host_call<typename N::fn_type>;
        v.epilogue = runs_epilogue<Root, N>();
      } else {
        v.op = node_traits<N>::op::name;
        v.buffer = materialized_v<Root, N>;
      }
    }
    values.push_back(std::move(v));
    seen_.emplace(key, values.size() - 1);
    return values.size() - 1;
  }

  // The values outside v's group (or v's operands, for an eager kernel)
  // that take a gradient from it.
  std::vector<std::size_t> gradient_targets(std::size_t v) const {
    std::vector<std::size_t> targets;
    auto add = [&](std::size_t c) {
      bool takes = values[c].takes_gradient;
      for (std::size_t t : targets) takes = takes && t != c;
      if (takes) targets.push_back(c);
    };
    if (values[v].eager_kernel) {
      for (std::size_t c : values[v].operands) add(c);
      return targets;
    }
    std::size_t group = values[v].groups.front();
    for (std::size_t u = 0; u < values.size(); ++u)
      if (in_group(u, group))
        for (std::size_t c : values[u].operands)
          if (!in_group(c, group)) add(c);
    return targets;
  }

  // The group rooted at buffer v: v and the unbuffered elementwise values
  // it reads, transitively.
  void mark_group(std::size_t v, std::size_t group) {
    values[v].groups.push_back(group);
    for (std::size_t c : values[v].operands) {
      const dump_value& child = values[c];
      if (!child.buffer && !child.leaf && (child.groups.empty() || child.groups.back() != group))
        mark_group(c, group);
    }
  }
};

inline std::string value_name(std::size_t v) { return "%" + std::to_string(v); }

inline std::string value_list_text(const std::vector<std::size_t>& values) {
  std::string text;
  for (std::size_t v : values) text += (text.empty() ? " " : ", ") + value_name(v);
  return text;
}

template <class Root>
std::string dump_text(const graph_dumper<Root>& d) {
  std::ostringstream out;
  out << "forward\n";
  for (std::size_t v = 0; v < d.values.size(); ++v) {
    const dump_value& x = d.values[v];
    out << "  " << value_name(v) << " = " << x.op << value_list_text(x.operands) << " : " << x.dtype;
    if (x.epilogue) out << "    [eager kernel, group " << x.epilogue_group << " as its epilogue]";
    else if (x.host) out << "    [host call: graph break, buffer]";
    else if (x.construct) out << "    [control flow: runs the sub-graphs below]";
    else if (x.construct_output) out << "    [the construct's output, buffer]";
    else if (x.eager_kernel) out << "    [eager kernel, buffer]";
    else if (x.reduces) out << "    [group " << x.groups.front() << ": fused loop with " << x.op << ", buffer]";
    else if (x.buffer) out << "    [group " << x.groups.front() << ": fused loop, buffer]";
    else if (!x.groups.empty()) {
      out << "    [in group";
      for (std::size_t g : x.groups) out << " " << g;
      out << "]";
    }
    out << "\n";
  }
  out << "  return" << value_list_text(d.outputs) << "\nbackward\n";
  for (const dump_step& step : d.backward) {
    const dump_value& x = d.values[step.from];
    out << "  d" << value_name(step.from) << " ->" << value_list_text(step.to);
    if (x.construct) out << "    [backward through the runs of " << x.op << "'s sub-graphs]\n";
    else if (x.construct_output) out << "    [to its construct]\n";
    else if (x.eager_kernel) out << "    [eager backward of " << x.op << "]\n";
    else out << "    [group " << x.groups.front() << ": one fused adjoint loop]\n";
  }
  for (std::size_t v = 0; v < d.values.size(); ++v)
    for (const subgraph_dump& sub : d.values[v].subgraphs) {
      out << "sub-graph " << sub.name << " of " << value_name(v) << " (" << d.values[v].op << ")\n";
      std::istringstream lines(sub.text);
      for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
    }
  return out.str();
}

// The forward of a dumped graph as dot statements, every name starting
// with `prefix`; each construct's sub-graphs are clusters inside it, drawn
// the same way.
template <class Root>
void dot_forward(std::ostream& out, const graph_dumper<Root>& d, const std::string& prefix) {
  auto label = [&](std::size_t v) { return value_name(v) + "\\n" + d.values[v].op + " : " + d.values[v].dtype; };
  for (std::size_t g = 0; g < d.group_count; ++g) {
    out << "  subgraph cluster_" << prefix << "group" << g << " {\n    label=\"group " << g
        << ": one fused loop\";\n    style=filled; color=lightblue;\n";
    for (std::size_t v = 0; v < d.values.size(); ++v)
      if (d.in_group(v, g) && (d.values[v].buffer || d.values[v].groups.front() == g))
        out << "    " << prefix << "v" << v << " [label=\"" << label(v) << "\""
            << (d.values[v].buffer ? ", style=bold" : "") << "];\n";
    out << "  }\n";
  }
  for (std::size_t v = 0; v < d.values.size(); ++v) {
    const dump_value& x = d.values[v];
    if (!x.groups.empty()) continue;
    out << "  " << prefix << "v" << v << " [label=\"" << label(v);
    if (x.epilogue) out << "\\nepilogue: group " << x.epilogue_group;
    if (x.host) out << "\\ngraph break";
    out << "\"";
    if (x.leaf) out << ", shape=ellipse";
    if (x.host) out << ", style=filled, color=orange";
    else if (x.construct) out << ", style=filled, color=palegreen";
    else if (x.eager_kernel) out << ", style=filled, color=lightyellow";
    out << "];\n";
  }
  for (std::size_t v = 0; v < d.values.size(); ++v)
    for (std::size_t c : d.values[v].operands) out << "  " << prefix << "v" << c << " -> " << prefix << "v" << v << ";\n";
  for (std::size_t v = 0; v < d.values.size(); ++v)
    for (std::size_t k = 0; k < d.values[v].subgraphs.size(); ++k) {
      const subgraph_dump& sub = d.values[v].subgraphs[k];
      std::string inner = prefix + "v" + std::to_string(v) + "s" + std::to_string(k) + "_";
      out << "  subgraph cluster_" << inner << " {\n  label=\"" << sub.name << " of " << value_name(v) << " ("
          << d.values[v].op << ")\";\n  style=dashed;\n";
      sub.dot(out, inner, prefix + "v" + std::to_string(v));
      out << "  }\n";
    }
}

template <class Root>
std::string dump_dot(const graph_dumper<Root>& d) {
  std::ostringstream out;
  out << "digraph tandem {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  out << "  subgraph cluster_forward {\n  label=\"forward\";\n";
  dot_forward(out, d, "");
  out << "  }\n  subgraph cluster_backward {\n  label=\"backward\";\n";
  for (std::size_t k = 0; k < d.backward.size(); ++k) {
    const dump_step& step = d.backward[k];
    const dump_value& x = d.values[step.from];
    std::string what = x.construct          ? "through the runs of " + x.op + "'s sub-graphs"
                       : x.construct_output ? "to its construct"
                       : x.eager_kernel     ? "eager backward of " + x.op
                                            : "group " + std::to_string(x.groups.front()) + " adjoint loop";
    out << "  b" << k << " [label=\"d" << value_name(step.from) << "\\n" << what
        << "\", style=filled, color=" << (x.eager_kernel ? "lightyellow" : "lightpink") << "];\n";
  }
  for (std::size_t k = 0; k < d.backward.size(); ++k)
    for (std::size_t to : d.backward[k].to) {
      std::size_t next = k;
      for (std::size_t j = k + 1; j < d.backward.size() && next == k; ++j)
        if (d.backward[j].from == to) next = j;
      if (next != k) out << "  b" << k << " -> b" << next << ";\n";
      else out << "  b" << k << " -> g" << to << ";\n  g" << to << " [shape=ellipse, label=\"d" << value_name(to) << "\"];\n";
    }
  out << "  }\n}\n";
  return out.str();
}

// A graph that runs eagerly (sharing.hpp) is dumped as traced, under a
// first line that says so.
inline constexpr const char* runs_eagerly =
    "eager: two values of one type hold different scalars, so this call runs op by op\n";

template <class Root>
std::string graph_text(const Root& root) {
  std::string text = dump_text(graph_dumper<Root>(root));
  return one_value_per_shared_class(root) ? text : runs_eagerly + text;
}

// A construct's sub-graph `name`, traced as `root`, for the dumps.
template <class Root>
subgraph_dump describe_subgraph(std::string name, const Root& root) {
  return {std::move(name), graph_text(root),
          [&root](std::ostream& out, const std::string& prefix, const std::string& construct) {
            graph_dumper<Root> d(root);
            dot_forward(out, d, prefix);
            for (std::size_t v : d.outputs) out << "  " << prefix << "v" << v << " -> " << construct << " [style=dashed];\n";
          }};
}

template <class Root>
std::string graph_dot(const Root& root) {
  std::string dot = dump_dot(graph_dumper<Root>(root));
  return one_value_per_shared_class(root) ? dot : "// " + (runs_eagerly + dot);
}

}  // namespace detail
}  // namespace tandem
