#pragma once
// Symbolic values and the nodes of a static graph. A graph is a C++ type:
// sym<map_node<mul_op, input_node<0, float>, constant_node<float>>> is
// "input 0 times a scalar". The type is the structure (what the
// compile-time passes read); the object holds only what is known at run
// time: scalars, captured tensors, the arguments of shape ops.
//
// A node that holds nothing (an input, or an elementwise op over such nodes)
// is *pure*: its type alone says what it computes, so two pure nodes of the
// same type are the same value and are computed once. Every other node is
// held by shared ownership (node_ref), so a graph in memory is as large as
// the program that built it, however often a value is reused.

#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tandem/core/tensor.hpp"
#include "tandem/graph/fwd.hpp"
#include "tandem/graph/node_ref.hpp"

namespace tandem {
namespace detail {

// The I-th tensor argument of the traced function, of element type T.
template <std::size_t I, class T>
struct input_node {
  using value_type = T;
};

// A scalar known at run time (a literal or a captured variable): read on
// every call, never baked into the plan.
template <class T>
struct constant_node {
  using value_type = T;
  T value;
};

// A tensor the traced function refers to without receiving it as an argument
// (a module's parameter, a captured tensor): an input read on every call.
template <class T>
struct captured_node {
  using value_type = T;
  tensor<T> value;
};

template <class Op, class... C>
struct map_node;

// A node's operands. Not std::tuple: constructing a std::tuple of symbolic
// values makes GCC 12 check constructibility through every class the graph
// type names, once per path, so compile time grew 3x per step of
// `h = h * h + h` (16 steps took 8 s, 30 never finished). This aggregate has
// no constrained constructors to check.
template <class... T>
struct operand_list {};
template <class T, class... Rest>
struct operand_list<T, Rest...> {
  T first;
  [[no_unique_address]] operand_list<Rest...> rest;
};

// Temporaries are moved in: a copy of a data-holding operand's owner was a
// count up, and the temporary's end a count down, on every traced call.
template <class... T>
operand_list<std::remove_cvref_t<T>...> make_operands(T&&... x) {
  if constexpr (sizeof...(T) == 0) {
    return {};
  } else {
    return [](auto&& first, auto&&... rest) {
      return operand_list<std::remove_cvref_t<T>...>{std::forward<decltype(first)>(first),
                                                      make_operands(std::forward<decltype(rest)>(rest)...)};
    }(std::forward<T>(x)...);
  }
}

template <std::size_t K, class T, class... Rest>
const auto& operand_at(const operand_list<T, Rest...>& list) {
  if constexpr (K == 0) return list.first;
  else return operand_at<K - 1>(list.rest);
}

// f(operands...).
template <class F, class... T>
decltype(auto) apply_operands(F&& f, const operand_list<T...>& list) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) -> decltype(auto) {
    return std::forward<F>(f)(operand_at<K>(list)...);
  }(std::index_sequence_for<T...>{});
}

// An op that is not elementwise (a reduction, matmul, softmax, a shape op):
// it runs its eager kernel on materialized operands. `Fn` holds the op's
// runtime arguments (axes, shapes) and maps the operand tensors to the
// result; Name is the op's name, for dumps and errors.
template <class Fn, class T, class... C>
struct apply_node;

// Whether an apply node's function is a sum or a mean (graph/ops.hpp): a
// reduction that a graph computes inside the loop of the elementwise group
// feeding it, whose backward hands that group a broadcast seed.
template <class Fn>
inline constexpr bool is_summation = false;

// Whether an apply node's function is matmul (graph/ops.hpp): a product
// whose elementwise reader may run inside the GEMM, as its epilogue.
template <class Fn>
inline constexpr bool is_matrix_product = false;

// Whether an apply node's function is a host call (graph/host.hpp): the
// user's code, run eagerly between fused parts, which the dumps mark as a
// graph break.
template <class Fn>
inline constexpr bool is_host_call = false;

// Whether an apply node's function (N::fn) reads tensors besides its operands (a
// layer's parameters, through the layer) and lists them, as tensors, in
// held_parameters(): a call of the graph records its backward for them, and
// the call's autograd node leads to them, as to captured tensors.
template <class N>
concept holds_parameters = requires(const N& node) { node.fn.held_parameters(); };

// Whether an apply node's function is a control-flow construct, or reads
// one output of one (graph/control.hpp).
template <class Fn>
inline constexpr bool is_control_flow = false;
template <class Fn>
inline constexpr bool is_control_output = false;

// A user's function under a type that says what it is for: a host call's
// (host.hpp), a loop body to recompute (control.hpp). The graph's passes and
// dumps tell them apart by the tag.
template <class Tag, class F>
struct tagged_function {
  F fn;
  template <class... A>
  auto operator()(const A&... a) const -> decltype(fn(a...)) {
    return fn(a...);
  }
};

template <class N>
inline constexpr bool is_pure = false;
template <std::size_t I, class T>
inline constexpr bool is_pure<input_node<I, T>> = true;
template <class Op, class... C>
inline constexpr bool is_pure<map_node<Op, C...>> = std::is_empty_v<Op> && (is_pure<C> && ...);

struct nothing_held {};

// A symbolic value's shape in the trace under way (graph/trace_shape.hpp).
template <class N>
shape traced_shape(const sym<N>& x);

}  // namespace detail

template <class Node>
class sym {
  static constexpr bool pure = detail::is_pure<Node>;
  using holder = std::conditional_t<pure, detail::nothing_held, detail::node_ref<Node>>;

 public:
  using node_type = Node;
  using value_type = typename Node::value_type;

  sym() requires pure = default;
  explicit sym(detail::node_ref<Node> node) requires(!pure) : held_(std::move(node)) {}

  const Node& node() const {
    if constexpr (pure) {
      static const Node instance{};
      return instance;
    } else {
      return *held_;
    }
  }
  // The shape, as a tensor's, known while the function is traced: the
  // arguments' shapes are the call's (graph/trace_shape.hpp).
  tandem::shape shape() const { return detail::traced_shape(*this); }
  std::int64_t shape(std::int64_t axis) const {
    const tandem::shape s = shape();
    return s[detail::normalize_axis(axis, s, "shape")];
  }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape().size()); }
  std::int64_t numel() const { return tandem::numel(shape()); }

  // The view ops, as on tensors.
  auto reshape(const tandem::shape& s) const { return tandem::reshape(*this, s); }
  auto view(const tandem::shape& s) const { return tandem::reshape(*this, s); }
  auto flatten() const { return tandem::reshape(*this, {-1}); }
  auto transpose(std::int64_t a, std::int64_t b) const { return tandem::transpose(*this, a, b); }
  auto unsqueeze(std::int64_t axis) const { return tandem::unsqueeze(*this, axis); }
  auto squeeze(std::int64_t axis) const { return tandem::squeeze(*this, axis); }
  auto permute(std::vector<std::int64_t> order) const { return tandem::permute(*this, std::move(order)); }
  auto take(std::int64_t axis, std::int64_t first, std::int64_t count, std::int64_t step = 1) const {
    return tandem::take(*this, axis, first, count, step);
  }

  // Reading an element has no static form: a traced value has none yet.
  template <class U = value_type>
  U item() const {
    static_assert(sizeof(U) == 0,
                  "tandem::jit: item() has no static form: a value inside a static graph has no elements yet; return "
                  "the tensor from the function and call item() on the result");
    return U{};
  }

  // What tells two runtime instances of this node type apart: nothing for a
  // pure node (its type is its identity), else the node's address.
  const void* identity() const {
    if constexpr (pure) return nullptr;
    else return held_.get();
  }

 private:
  [[no_unique_address]] holder held_;
};

namespace detail {

template <class Op, class... C>
struct map_node {
  using compute_type = typename Op::template compute<typename C::value_type...>;
  using value_type = typename Op::template result<typename C::value_type...>;
  [[no_unique_address]] Op op;
  operand_list<sym<C>...> children;
};

// Whether node N is the elementwise op Op, whatever its operands.
template <class Op, class N>
inline constexpr bool is_map_of = false;
template <class Op, class... C>
inline constexpr bool is_map_of<Op, map_node<Op, C...>> = true;

template <class Fn, class T, class... C>
struct apply_node {
  using value_type = T;
  using fn_type = Fn;
  Fn fn;
  const char* name;
  operand_list<sym<C>...> children;
};

template <class N, class... Args>
sym<N> make_sym(Args&&... args) {
  if constexpr (is_pure<N>) return sym<N>{};
  else return sym<N>(node_ref<N>::make(std::forward<Args>(args)...));
}

template <class N>
struct node_traits {
  static constexpr bool is_map = false, is_apply = false, is_summation = false, is_matrix_product = false,
                        is_input = false, is_constant = false, is_captured = false;
  using children = std::tuple<>;
};
template <std::size_t I, class T>
struct node_traits<input_node<I, T>> : node_traits<void> {
  static constexpr bool is_input = true;
  static constexpr std::size_t index = I;
};
template <class T>
struct node_traits<constant_node<T>> : node_traits<void> {
  static constexpr bool is_constant = true;
};
template <class T>
struct node_traits<captured_node<T>> : node_traits<void> {
  static constexpr bool is_captured = true;
};
template <class Op, class... C>
struct node_traits<map_node<Op, C...>> : node_traits<void> {
  static constexpr bool is_map = true;
  using op = Op;
  using children = std::tuple<C...>;
};
template <class Fn, class T, class... C>
struct node_traits<apply_node<Fn, T, C...>> : node_traits<void> {
  static constexpr bool is_apply = true;
  static constexpr bool is_summation = detail::is_summation<Fn>;
  static constexpr bool is_matrix_product = detail::is_matrix_product<Fn>;
  using children = std::tuple<C...>;
};

template <class N>
inline constexpr bool is_control_node = false;
template <class Fn, class T, class... C>
inline constexpr bool is_control_node<apply_node<Fn, T, C...>> = is_control_flow<Fn>;
template <class N>
inline constexpr bool is_control_output_node = false;
template <class Fn, class T, class... C>
inline constexpr bool is_control_output_node<apply_node<Fn, T, C...>> = is_control_output<Fn>;

}  // namespace detail
}  // namespace tandem

#include "tandem/graph/trace_shape.hpp"
