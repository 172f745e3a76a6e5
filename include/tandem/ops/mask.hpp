#pragma once
// Masks over the last two axes and masked writes: tril and triu keep the
// elements on and below (above) a diagonal and zero the rest; masked_fill
// puts a value where a boolean mask is true. tril and triu work on any
// element type and batch of matrices; masked_fill broadcasts x, the mask and
// the value together, as where() does, so in a static graph it fuses with
// its neighbours.

#include <cstdint>
#include <string>

#include "tandem/core/creation.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/ops/elementwise/compare.hpp"

namespace tandem {
namespace detail {

// The [rows, columns] mask of the elements with column - row <= diagonal
// (Lower) or >= diagonal (upper).
template <bool Lower>
tensor<bool> band_mask(std::int64_t rows, std::int64_t columns, std::int64_t diagonal, const device& where) {
  tensor<bool> mask(shape{rows, columns});
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < columns; ++j)
      mask.data()[i * columns + j] = Lower ? j - i <= diagonal : j - i >= diagonal;
  return where.is_cpu() ? mask : mask.to(where);
}

template <bool Lower, class T>
tensor<T> band(const tensor<T>& x, std::int64_t diagonal, const char* op) {
  if (x.dim() < 2)
    throw shape_error(std::string("tandem::") + op + ": needs a matrix or a batch of them, got shape " +
                      to_string(x.shape()));
  return where(band_mask<Lower>(x.shape(-2), x.shape(-1), diagonal, x.device()), x, T(0));
}

// tril and triu as named functions, for the node a static graph makes of them.
template <bool Lower>
struct band_of {
  std::int64_t diagonal;
  template <class T>
  tensor<T> operator()(const tensor<T>& x) const {
    return band<Lower>(x, diagonal, Lower ? "tril" : "triu");
  }
  shape result_shape(const shape& in) const { return in; }
};

}  // namespace detail

// The elements of x (over its last two axes) with column - row <= diagonal;
// the others are 0.
template <element T>
tensor<T> tril(const tensor<T>& x, std::int64_t diagonal = 0) {
  return detail::band<true>(x, diagonal, "tril");
}
// The elements of x (over its last two axes) with column - row >= diagonal.
template <element T>
tensor<T> triu(const tensor<T>& x, std::int64_t diagonal = 0) {
  return detail::band<false>(x, diagonal, "triu");
}

// x with `value` where mask is true: where(mask, value, x), the mask
// broadcast against x. The gradient reaches x where the mask is false.
template <class X, class M, scalar V>
  requires detail::has_elements<X> && detail::has_elements<M>
auto masked_fill(const X& x, const M& mask, V value) {
  static_assert(std::is_same_v<typename M::value_type, bool>, "tandem::masked_fill: the mask must hold bool elements");
  return where(mask, value, x);
}

}  // namespace tandem
