#pragma once
// The shapes of symbolic values while a static graph traces its function.
// A graph is traced on every call with the call's tensors at hand, so a
// value's shape is known then: an input's is its tensor's, an elementwise
// op's the broadcast of its operands', and another op's the shape rule of
// its function (`result_shape(operand shapes...)`, graph/ops.hpp). Nothing
// is computed unless asked: `x.shape()` inside the traced function walks
// back from x, and remembers what it found for the rest of the trace, so a
// trace that never asks pays one pointer swap per call.
//
// Shapes taken at trace time become runtime values of the graph's nodes
// (the extents of a reshape, say), read again on every call like scalars:
// a call with other shapes traces again and finds the new ones.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "tandem/core/error.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/graph/symbol.hpp"

namespace tandem::detail {

// The shapes of the arguments of the trace under way on this thread (null
// for a scalar argument), and what has been worked out from them.
struct trace_inputs {
  const shape* const* shapes = nullptr;
  std::size_t count = 0;
  std::unique_ptr<std::unordered_map<const void*, shape>> known;
};

inline thread_local trace_inputs* current_trace_inputs = nullptr;

// Makes the arguments' shapes those of the trace in scope (no shapes, for a
// trace whose inputs have none yet: a branch or loop body traced on its own
// inputs).
class trace_inputs_scope {
 public:
  trace_inputs_scope(const shape* const* shapes, std::size_t count) : saved_(current_trace_inputs) {
    inputs_.shapes = shapes;
    inputs_.count = count;
    current_trace_inputs = &inputs_;
  }
  trace_inputs_scope(const trace_inputs_scope&) = delete;
  trace_inputs_scope& operator=(const trace_inputs_scope&) = delete;
  ~trace_inputs_scope() { current_trace_inputs = saved_; }

 private:
  trace_inputs inputs_;
  trace_inputs* saved_;
};

template <class A>
const shape* argument_shape(const A& a) {
  if constexpr (is_tensor_v<A>) return &a.shape();
  else return nullptr;
}

[[noreturn]] inline void throw_unknown_shape(const std::string& what) {
  throw error("tandem::jit: the shape of " + what +
              " is not known while tracing: shapes are known for the arguments of a static graph, the tensors it "
              "captures and what ops with shape rules make of them");
}

inline trace_inputs& trace_in_scope(const char* what) {
  if (!current_trace_inputs || !current_trace_inputs->shapes) throw_unknown_shape(what);
  return *current_trace_inputs;
}

// Which arguments a pure node reads, one bit each (the graph's first 64).
template <class N>
inline constexpr std::uint64_t input_bits = 0;
template <std::size_t I, class T>
inline constexpr std::uint64_t input_bits<input_node<I, T>> = I < 64 ? std::uint64_t{1} << I : 0;
template <class Op, class... C>
inline constexpr std::uint64_t input_bits<map_node<Op, C...>> = (input_bits<C> | ... | 0);

// A shape per operand (a class, not an alias: nvcc's front end drops a
// pack expansion whose pattern an alias has made independent of the pack).
template <class>
struct operand_shape {
  using type = const shape&;
};
template <class Fn, class... C>
concept has_shape_rule = requires(const Fn& fn) {
  { fn.result_shape(std::declval<typename operand_shape<C>::type>()...) } -> std::convertible_to<shape>;
};

template <class N>
shape traced_shape(const sym<N>& x);

template <class Fn, class T, class... C>
shape apply_node_shape(const apply_node<Fn, T, C...>& node) {
  if constexpr (has_shape_rule<Fn, C...>)
    return apply_operands([&](const auto&... c) -> shape { return node.fn.result_shape(traced_shape(c)...); },
                          node.children);
  else throw_unknown_shape(std::string("the result of ") + node.name + ", which has no shape rule");
}

template <class N>
shape node_shape(const sym<N>& x) {
  using traits = node_traits<N>;
  if constexpr (traits::is_input) {
    trace_inputs& in = trace_in_scope("an argument");
    const std::size_t i = traits::index;
    if (i >= in.count || !in.shapes[i]) throw_unknown_shape("argument " + std::to_string(i));
    return *in.shapes[i];
  } else if constexpr (traits::is_constant) {
    return shape{};
  } else if constexpr (traits::is_captured) {
    return x.node().value.shape();
  } else if constexpr (traits::is_map && is_pure<N>) {
    // An elementwise function of arguments alone: the broadcast of theirs
    // (walking the type would visit a value read twice twice, per level).
    trace_inputs& in = trace_in_scope("an elementwise value");
    shape out;
    for (std::size_t i = 0; i < in.count && i < 64; ++i)
      if ((input_bits<N> >> i) & 1) out = broadcast_shapes(out, *in.shapes[i], traits::op::name);
    return out;
  } else if constexpr (traits::is_map) {
    return apply_operands(
        [](const auto&... c) {
          shape out;
          ((out = broadcast_shapes(out, traced_shape(c), traits::op::name)), ...);
          return out;
        },
        x.node().children);
  } else if constexpr (traits::is_apply) {
    return apply_node_shape(x.node());
  } else {
    throw_unknown_shape("this value");
  }
}

// The shape of x in the trace under way, worked out once per node that
// holds data (a pure node's is a broadcast of arguments' shapes).
template <class N>
shape traced_shape(const sym<N>& x) {
  if constexpr (is_pure<N> || node_traits<N>::is_constant || node_traits<N>::is_captured) {
    return node_shape(x);
  } else {
    trace_inputs* in = current_trace_inputs;
    if (!in) return node_shape(x);
    if (!in->known) in->known = std::make_unique<std::unordered_map<const void*, shape>>();
    if (auto found = in->known->find(x.identity()); found != in->known->end()) return found->second;
    shape s = node_shape(x);
    in->known->emplace(x.identity(), s);
    return s;
  }
}

}  // namespace tandem::detail
