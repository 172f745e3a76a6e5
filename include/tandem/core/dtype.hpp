#pragma once
// Element types, their names, and the compile-time promotion rules for mixed
// operands, as in PyTorch: bool < int32 < int64 < bfloat16, float16 < float <
// double, and bfloat16 with float16 gives float (neither holds the other).
// The 16-bit floats store values and compute in float: compute_t names the
// type an op on them computes in.

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tandem/core/reduced_float.hpp"

namespace tandem {

enum class dtype { boolean, int32, int64, float32, float64, bfloat16, float16 };

template <class T>
inline constexpr bool is_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool> || std::is_same_v<T, bfloat16> ||
    std::is_same_v<T, float16>;

// A floating-point element type of any width: float, double, bfloat16, float16.
template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;

template <class T>
concept element = is_element_v<T>;

// float or double: the types with gradients and every op (the 16-bit
// floats are is_floating_v but not floating_element).
template <class T>
concept floating_element = element<T> && std::is_floating_point_v<T>;

template <element T>
inline constexpr dtype dtype_of = std::is_same_v<T, bool>           ? dtype::boolean
                                  : std::is_same_v<T, std::int32_t> ? dtype::int32
                                  : std::is_same_v<T, std::int64_t> ? dtype::int64
                                  : std::is_same_v<T, float>        ? dtype::float32
                                  : std::is_same_v<T, double>       ? dtype::float64
                                  : std::is_same_v<T, bfloat16>     ? dtype::bfloat16
                                                                    : dtype::float16;

constexpr std::string_view dtype_name(dtype d) {
  switch (d) {
    case dtype::boolean: return "bool";
    case dtype::int32: return "int32";
    case dtype::int64: return "int64";
    case dtype::float32: return "float32";
    case dtype::float64: return "float64";
    case dtype::bfloat16: return "bfloat16";
    case dtype::float16: return "float16";
  }
  return "unknown";
}

namespace detail {

template <class T>
inline constexpr int promotion_rank = std::is_same_v<T, bool>           ? 0
                                      : std::is_same_v<T, std::int32_t> ? 1
                                      : std::is_same_v<T, std::int64_t> ? 2
                                      : is_reduced_float_v<T>           ? 3
                                      : std::is_same_v<T, float>        ? 4
                                                                        : 5;

template <class A, class B>
using promote2 = std::conditional_t<
    is_reduced_float_v<A> && is_reduced_float_v<B> && !std::is_same_v<A, B>, float,
    std::conditional_t<(promotion_rank<A> >= promotion_rank<B>), A, B>>;

template <class... Ts>
struct promote;
template <class T>
struct promote<T> {
  using type = T;
};
template <class A, class B, class... Rest>
struct promote<A, B, Rest...> : promote<promote2<A, B>, Rest...> {};

// A C++ arithmetic scalar next to a tensor<T> only widens T's kind (integer to
// floating, bool to integer), never its width: tensor<float> * 2.0 stays
// float, tensor<bfloat16> * 2.0 bfloat16.
template <class T, class S>
using with_scalar = std::conditional_t<
    is_floating_v<S> && !is_floating_v<T>, float,
    std::conditional_t<std::is_integral_v<S> && !std::is_same_v<S, bool> && std::is_same_v<T, bool>,
                       std::int64_t, T>>;

}  // namespace detail

// The element type of an op over operands of types Ts...
template <element... Ts>
using promote_t = typename detail::promote<Ts...>::type;

// The floating type an op like exp or division returns.
template <element T>
using floating_t = std::conditional_t<is_floating_v<T>, T, float>;

// The type an op on elements of type T computes in: T, but float for the
// 16-bit floats, which only store.
template <element T>
using compute_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

// A number that may stand beside a tensor as an operand: C++'s arithmetic
// types and the 16-bit floats.
template <class S>
concept scalar = std::is_arithmetic_v<S> || is_reduced_float_v<S>;

}  // namespace tandem
