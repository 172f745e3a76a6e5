#pragma once
// host(fn, x...): an ordinary function on tensors, called from a static
// graph at run time, as MindSpore's JIT Fallback hands what graph mode
// cannot compile back to the interpreter. Inside a trace it is a graph
// break: an apply node that runs fn on its operands' values on every call,
// while the code before and after it stays fused. fn runs under eager
// recording when the call needs gradients, so gradients flow through it as
// far as it uses tandem's differentiable ops. On tensors, and with jit
// disabled, host(fn, x...) is fn(x...).
//
// fn is called with `const tensor<T>&` for each operand (a static graph's
// value, or a tensor: a tensor the traced function holds is read on every
// call, as a captured one) and returns one tensor. It is called only at run
// time, never while the graph is traced, so it may print, log, branch on
// values and loop as long as the data says.

#include <type_traits>
#include <utility>

#include "tandem/core/tensor.hpp"
#include "tandem/graph/ops.hpp"

namespace tandem {
namespace detail {

template <class X>
struct host_operand {
  static constexpr bool valid = false;
};
template <class T>
struct host_operand<tensor<T>> {
  static constexpr bool valid = true;
  using type = tensor<T>;
};
template <class N>
struct host_operand<sym<N>> {
  static constexpr bool valid = true;
  using type = tensor<typename N::value_type>;
};

// The function of a host node: the user's, under a type the dumps know, so
// that they show the graph break as one.
struct host_tag {};
template <class Fn>
using host_call = tagged_function<host_tag, Fn>;
template <class Fn>
inline constexpr bool is_host_call<tagged_function<host_tag, Fn>> = true;

template <class Fn, class... X>
constexpr bool host_returns_tensor() {
  if constexpr (!std::is_invocable_v<const Fn&, const typename host_operand<X>::type&...>) return false;
  else return is_tensor_v<std::invoke_result_t<const Fn&, const typename host_operand<X>::type&...>>;
}

}  // namespace detail

template <class Fn, class... X>
auto host(Fn fn, const X&... x) {
  static_assert((detail::host_operand<X>::valid && ...),
                "tandem::host: every operand must be a tensor or a value of the static graph being traced");
  if constexpr ((detail::host_operand<X>::valid && ...)) {
    static_assert(detail::host_returns_tensor<Fn, X...>(),
                  "tandem::host: the function must be callable (as const) with a const tensor<T>& per operand and "
                  "return one tensor");
    if constexpr (detail::host_returns_tensor<Fn, X...>())
      return detail::call_or_trace("host", detail::host_call<Fn>{std::move(fn)}, x...);
  }
}

}  // namespace tandem
