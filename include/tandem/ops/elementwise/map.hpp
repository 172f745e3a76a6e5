#pragma once
// The eager driver shared by every elementwise op: it broadcasts the
// operands, decides the element types at compile time from the op's type
// rule, allocates the result and runs the one elementwise kernel. Scalars may
// stand for any operand; they broadcast like 0-d tensors and take the kind
// of the tensors beside them (tensor<float> * 2.0 stays float).

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>

#include "tandem/autograd/derivative.hpp"
#include "tandem/capture/deferred_op.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/graph/fwd.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"

namespace tandem {
namespace detail {

// Type rules: from the operands' element types to the type an op computes in
// and the type it returns.
struct same_type_rule {
  template <class... T>
  using compute = compute_t<promote_t<T...>>;
  template <class... T>
  using result = promote_t<T...>;
};
struct floating_rule {
  template <class... T>
  using compute = compute_t<floating_t<promote_t<T...>>>;
  template <class... T>
  using result = floating_t<promote_t<T...>>;
};
struct predicate_rule {
  template <class... T>
  using compute = compute_t<promote_t<T...>>;
  template <class... T>
  using result = bool;
};
struct logical_rule {
  template <class... T>
  using compute = bool;
  template <class... T>
  using result = bool;
};

// Operands with elements of their own: tensors, and the symbolic values of
// static graphs.
template <class X>
inline constexpr bool has_elements = is_tensor_v<X> || is_symbolic_v<X>;

template <class X>
struct tensor_element {
  using type = void;
};
template <class X>
  requires has_elements<X>
struct tensor_element<X> {
  using type = typename X::value_type;
};

// The promoted element type of the tensor operands among Xs.
template <class... X>
struct tensors_promoted;
template <>
struct tensors_promoted<> {
  using type = bool;
};
template <class X, class... Rest>
struct tensors_promoted<X, Rest...> : tensors_promoted<Rest...> {};
template <class X, class... Rest>
  requires has_elements<X>
struct tensors_promoted<X, Rest...> {
  using type = promote_t<typename X::value_type, typename tensors_promoted<Rest...>::type>;
};

// The element type an operand takes part with: its own for a tensor, the
// kind of the tensors beside it for a scalar.
template <class Base, class X>
using operand_element =
    std::conditional_t<has_elements<X>, typename tensor_element<X>::type, with_scalar<Base, X>>;

template <class X>
concept tensor_or_scalar = has_elements<X> || scalar<X>;

// Operands of an elementwise op: tensors (or symbolic values) and scalars,
// at least one of them not a scalar.
template <class... X>
concept elementwise_operands = (tensor_or_scalar<X> && ...) && (has_elements<X> || ...);

// The operand of a unary op.
template <class X>
concept unary_operand = has_elements<X>;

// The operand's strides over the output's axes: 0 along broadcast axes.
template <class T>
dims broadcast_strides(const tensor<T>& x, const shape& out) {
  dims strides(out.size(), 0);
  std::size_t lead = out.size() - x.shape().size();
  for (std::size_t i = 0; i < x.shape().size(); ++i)
    strides[lead + i] = x.shape()[i] == 1 ? 0 : x.strides()[i];
  return strides;
}

// A scalar operand (already of its element type) is read through its
// address with stride 0.
template <class X>
auto make_operand(const X& x, const shape& out) {
  if constexpr (is_tensor_v<X>) return operand<typename X::value_type>{x.data(), broadcast_strides(x, out)};
  else return operand<X>{&x, dims(out.size(), 0)};
}

template <class X>
std::string operand_shape_text(const X& x) {
  if constexpr (is_tensor_v<X>) return to_string(x.shape());
  else return "scalar";
}

template <class Op, class... X>
shape broadcast_all(const X&... x) {
  shape out;
  bool fits = true;
  auto join = [&](const auto& operand) {
    if constexpr (is_tensor_v<std::decay_t<decltype(operand)>>) fits = fits && try_broadcast(out, operand.shape());
  };
  (join(x), ...);
  if (!fits) {
    std::string all;
    ((all += (all.empty() ? "" : ", ") + operand_shape_text(x)), ...);
    throw shape_error(std::string("tandem::") + Op::name + ": shapes " + all + " cannot be broadcast together");
  }
  return out;
}

// The shape shared by all tensor operands when each is contiguous: then no
// broadcasting or stride arithmetic is needed.
template <class... X>
const shape* common_contiguous_shape(const X&... x) {
  const shape* common = nullptr;
  bool plain = true;
  auto visit = [&](const auto& operand) {
    if constexpr (is_tensor_v<std::decay_t<decltype(operand)>>) {
      if (!plain) return;
      if (!common) {
        common = &operand.shape();
        plain = operand.is_contiguous();
      } else {
        plain = operand.is_contiguous() && operand.shape() == *common;
      }
    }
  };
  (visit(x), ...);
  return plain ? common : nullptr;
}

template <class X>
auto make_flat_operand(const X& x) {
  if constexpr (is_tensor_v<X>) return flat_operand<typename X::value_type>{x.data(), 1};
  else return flat_operand<X>{&x, 0};
}

// The tensor an elementwise op returns for operands X. A struct, not an
// alias: GCC does not match a function whose return type expands a pack into
// an alias template whose first parameter is no pack (where_op's result).
template <class Op, class... X>
struct map_result {
  using base = typename tensors_promoted<X...>::type;
  using type = tensor<typename Op::template result<operand_element<base, X>...>>;
};
template <class Op, class... X>
using map_result_t = typename map_result<Op, X...>::type;

// A scalar operand converted to the element type it takes part with, so that
// x * 2 and x * 2.0 (for a tensor<float> x) run the same eager_map<mul_op,
// tensor<float>, float>: one instantiation per op and element type, which
// tandem::compiled can hold (compiled/eager.hpp).
template <class Base, class X>
decltype(auto) as_map_operand(const X& x) {
  if constexpr (has_elements<X>) return (x);
  else return static_cast<operand_element<Base, X>>(x);
}

// The element type a row function reads an operand as: a tensor's own, a
// scalar's (already converted by as_map_operand).
template <class X>
using row_element = typename std::conditional_t<is_tensor_v<X>, tensor_element<X>, std::type_identity<X>>::type;

// The op object as a region keeps it until it runs: an empty op is not copied.
template <class Op>
std::shared_ptr<const void> kept_op(const Op& op) {
  if constexpr (std::is_empty_v<Op> && std::is_default_constructible_v<Op>) {
    static const Op instance{};
    return std::shared_ptr<const void>(std::shared_ptr<const void>(), &instance);
  } else {
    return make_cached<Op>(op);
  }
}

template <class X>
deferred_operand deferred_operand_of(const X& x, const shape& out_shape) {
  deferred_operand o;
  if constexpr (is_tensor_v<X>) {
    using T = typename X::value_type;
    o.memory = x.storage();
    o.offset = x.offset();
    o.numel = x.numel();
    o.element_size = sizeof(T);
    o.contiguous = x.is_contiguous();
    if (!(o.contiguous && o.numel == numel(out_shape)) && o.numel != 1) o.strides = broadcast_strides(x, out_shape);
    o.copy = row_function_for<T, T, identity_op, T*, T>();
  } else {
    static_assert(sizeof(X) <= sizeof(o.scalar_bits));
    std::memcpy(&o.scalar_bits, &x, sizeof(X));
  }
  return o;
}

// Hands `op` to the capture running on this thread (capture/session.hpp),
// which gives its result back pending; false when the op must run now.
template <class R, class C, class Op, class... X>
bool defer_map(deferred_work& work, const Op& op, const shape& out_shape, tensor<R>& out, const X&... x) {
  std::array<deferred_operand, sizeof...(X)> operands{deferred_operand_of(x, out_shape)...};
  const deferred_op deferred{Op::name, row_function_for<R, C, Op, R*, row_element<X>...>(),
                             kept_op(op), sizeof(R)};
  std::shared_ptr<storage> pending = work.defer(deferred, operands, out_shape);
  if (!pending) return false;
  out = tensor<R>(std::move(pending), out_shape, contiguous_strides(out_shape), 0);
  return true;
}

// Where an operand lives, for the device check: scalars have no place.
struct operand_place {
  const shape* extent;
  device where;
};

template <class X>
operand_place place_of(const X& x) {
  if constexpr (is_tensor_v<X>) return {&x.shape(), x.device()};
  else return {nullptr, device::cpu};
}

// The device of the tensor operands; operands on two devices throw. Not a
// template, so the check costs each op's instantiation a few loads.
inline device common_device(const char* op, std::initializer_list<operand_place> operands) {
  const operand_place* first = nullptr;
  bool mixed = false;
  for (const operand_place& o : operands) {
    if (!o.extent) continue;
    if (!first) first = &o;
    else mixed = mixed || o.where != first->where;
  }
  if (!mixed) [[likely]]
    return first ? first->where : device::cpu;
  std::string all;
  for (const operand_place& o : operands)
    if (o.extent) all += (all.empty() ? "" : ", ") + to_string(*o.extent) + " on " + to_string(o.where);
  throw device_error(std::string("tandem::") + op + ": operands " + all + " are on different devices; move them to one with to()");
}

template <class Op, class... X>
device operands_device(const X&... x) {
  return common_device(Op::name, {place_of(x)...});
}

template <class X>
auto make_device_operand(const X& x, const shape& out) {
  if constexpr (is_tensor_v<X>)
    return device_operand<typename X::value_type>{x.device_data(), broadcast_strides(x, out), {}};
  else return device_scalar(x);
}

// Runs `op` on the GPU that holds the operands, into a fresh tensor there.
template <class R, class C, class Op, class... X>
tensor<R> device_map(const Op& op, device where, const X&... x) {
  profile_range range(profile_category::op, Op::name);
  shape out_shape = broadcast_all<Op>(x...);
  tensor<R> out(out_shape, where);
  run_cuda_elementwise<R, C>(Op::name, op, where, out_shape, out.device_data(), contiguous_strides(out_shape),
                             make_device_operand(x, out_shape)...);
  if (range.recording()) describe_op(range, out, x...);
  record(op, out, x...);
  return out;
}

// On the host: broadcasts, allocates the result, runs the elementwise
// kernel and records the op.
template <class R, class C, class Op, class... X>
tensor<R> host_map(const Op& op, const X&... x) {
  if (const shape* common = common_contiguous_shape(x...)) {
    tensor<R> out(*common);
    elementwise_flat<R, C>(op, out.numel(), out.data(), make_flat_operand(x)...);
    record(op, out, x...);
    return out;
  }
  shape out_shape = broadcast_all<Op>(x...);
  tensor<R> out(out_shape);
  elementwise<R, C>(op, out_shape, out.data(), contiguous_strides(out_shape), make_operand(x, out_shape)...);
  record(op, out, x...);
  return out;
}

// The same while a profiler records: out of line, so that the path that
// does not record pays one branch.
template <class R, class C, class Op, class... X>
TANDEM_COLD tensor<R> profiled_host_map(const Op& op, const X&... x) {
  profile_range range(profile_category::op, Op::name);
  tensor<R> out = host_map<R, C>(op, x...);
  describe_op(range, out, x...);
  return out;
}

// Runs `op` now, on the GPU that holds the operands or on the host. Scalars
// come converted (as_map_operand). Under a capture, the op is deferred
// instead, and recorded.
template <class Op, class... X>
map_result_t<Op, X...> eager_map(const Op& op, const X&... x) {
  using base = typename tensors_promoted<X...>::type;
  using C = typename Op::template compute<operand_element<base, X>...>;
  using R = typename Op::template result<operand_element<base, X>...>;
  if (const device where = operands_device<Op>(x...); !where.is_cpu()) [[unlikely]]
    return device_map<R, C>(op, where, x...);
  if (deferred_work* work = active_deferred_work()) [[unlikely]] {
    const shape* common = common_contiguous_shape(x...);
    tensor<R> out;
    if (defer_map<R, C>(*work, op, common ? *common : broadcast_all<Op>(x...), out, x...)) {
      record(op, out, x...);
      return out;
    }
  }
  if (profiling()) [[unlikely]]
    return profiled_host_map<R, C>(op, x...);
  return host_map<R, C>(op, x...);
}

// Applies `op` elementwise to broadcast operands: a fresh tensor now, or a
// node of the static graph being traced when an operand is symbolic.
template <class Op, class... X>
  requires elementwise_operands<X...>
auto map(const Op& op, const X&... x) {
  require_rule_of_compiled_library<Op>();
  if constexpr (any_symbolic<X...>) {
    return symbolic_map(op, x...);
  } else {
    using base = typename tensors_promoted<X...>::type;
    return eager_map(op, as_map_operand<base>(x)...);
  }
}

}  // namespace detail

// Applies a user-defined elementwise op (a struct like those in tandem::op:
// a name, a type rule, operator() for scalars and SIMD batches, and
// optionally derivative<I>) to broadcast tensors and scalars.
template <class Op, class... X>
  requires detail::elementwise_operands<X...>
auto elementwise(const Op& op, const X&... x) {
  return detail::map(op, x...);
}

}  // namespace tandem
