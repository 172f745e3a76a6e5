#pragma once
// Element types, their names, and the compile-time promotion rules for mixed
// operands (bool < int32 < int64 < float < double, as in PyTorch).

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tandem {

enum class dtype { boolean, int32, int64, float32, float64 };

template <class T>
inline constexpr bool is_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool>;

template <class T>
concept element = is_element_v<T>;

template <class T>
concept floating_element = element<T> && std::is_floating_point_v<T>;

template <element T>
inline constexpr dtype dtype_of = std::is_same_v<T, bool>           ? dtype::boolean
                                  : std::is_same_v<T, std::int32_t> ? dtype::int32
                                  : std::is_same_v<T, std::int64_t> ? dtype::int64
                                  : std::is_same_v<T, float>        ? dtype::float32
                                                                    : dtype::float64;

constexpr std::string_view dtype_name(dtype d) {
  switch (d) {
    case dtype::boolean: return "bool";
    case dtype::int32: return "int32";
    case dtype::int64: return "int64";
    case dtype::float32: return "float32";
    case dtype::float64: return "float64";
  }
  return "unknown";
}

namespace detail {

template <class T>
inline constexpr int promotion_rank = std::is_same_v<T, bool>           ? 0
                                      : std::is_same_v<T, std::int32_t> ? 1
                                      : std::is_same_v<T, std::int64_t> ? 2
                                      : std::is_same_v<T, float>        ? 3
                                                                        : 4;

template <class A, class B>
using promote2 = std::conditional_t<(promotion_rank<A> >= promotion_rank<B>), A, B>;

template <class... Ts>
struct promote;
template <class T>
struct promote<T> {
  using type = T;
};
template <class A, class B, class... Rest>
struct promote<A, B, Rest...> : promote<promote2<A, B>, Rest...> {};

// A C++ arithmetic scalar next to a tensor<T> only widens T's kind (integer to
// floating, bool to integer), never its width: tensor<float> * 2.0 stays float.
template <class T, class S>
using with_scalar = std::conditional_t<
    std::is_floating_point_v<S> && !std::is_floating_point_v<T>, float,
    std::conditional_t<std::is_integral_v<S> && !std::is_same_v<S, bool> && std::is_same_v<T, bool>,
                       std::int64_t, T>>;

}  // namespace detail

// The element type of an op over operands of types Ts...
template <element... Ts>
using promote_t = typename detail::promote<Ts...>::type;

// The floating type an op like exp or division computes in.
template <element T>
using floating_t = std::conditional_t<std::is_floating_point_v<T>, T, float>;

// A C++ number that may stand beside a tensor as an operand.
template <class S>
concept scalar = std::is_arithmetic_v<S>;

}  // namespace tandem
