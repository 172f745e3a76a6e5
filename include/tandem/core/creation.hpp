#pragma once
// Making tensors: filled (zeros, ones, full), ranges (arange, linspace, eye),
// copies of user data (from_vector, from_span), and tensors over user memory
// (borrow: the caller keeps the memory alive; adopt: tandem frees it).
// Each takes the device to make its tensor on (the host by default); the
// *_like functions make theirs on the model's device.

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tandem/core/tensor.hpp"

namespace tandem {

template <element T>
tensor<T> empty(shape s, device where = device::cpu) {
  return tensor<T>(std::move(s), where);
}

// A tensor of `value`; its type is T, or the value's own type when T is not given.
template <class T = void, scalar S>
auto full(shape s, S value, device where = device::cpu) {
  using E = std::conditional_t<std::is_void_v<T>, S, T>;
  static_assert(is_element_v<E>,
                "tandem::full: the element type must be float, double, bfloat16, float16, int32_t, int64_t or bool");
  tensor<E> out(std::move(s), where);
  out.fill(value);
  return out;
}

template <element T = float>
tensor<T> zeros(shape s, device where = device::cpu) {
  return full<T>(std::move(s), T(0), where);
}
template <element T = float>
tensor<T> ones(shape s, device where = device::cpu) {
  return full<T>(std::move(s), T(1), where);
}

template <element T>
tensor<T> empty_like(const tensor<T>& x) {
  return empty<T>(x.shape(), x.device());
}
template <element T>
tensor<T> zeros_like(const tensor<T>& x) {
  return zeros<T>(x.shape(), x.device());
}
template <element T>
tensor<T> ones_like(const tensor<T>& x) {
  return ones<T>(x.shape(), x.device());
}
template <element T, scalar S>
tensor<T> full_like(const tensor<T>& x, S value) {
  return full<T>(x.shape(), value, x.device());
}

// The values start, start + step, ... below stop (above it for a negative step).
template <element T = std::int64_t>
tensor<T> arange(double start, double stop, double step = 1, device where = device::cpu) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw value_error("tandem::arange: start, stop and step must be finite and step non-zero (got " +
                      std::to_string(start) + ", " + std::to_string(stop) + ", " + std::to_string(step) + ")");
  auto count = static_cast<std::int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
  tensor<T> out(shape{count});
  T* p = out.data();
  for (std::int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  return out.to(where);
}
template <element T = std::int64_t>
tensor<T> arange(double stop, device where = device::cpu) {
  return arange<T>(0, stop, 1, where);
}

// `count` evenly spaced values from start to stop, both included.
template <floating_element T = float>
tensor<T> linspace(double start, double stop, std::int64_t count, device where = device::cpu) {
  if (count < 0) throw value_error("tandem::linspace: count must not be negative (got " + std::to_string(count) + ")");
  tensor<T> out(shape{count});
  T* p = out.data();
  double step = count > 1 ? (stop - start) / static_cast<double>(count - 1) : 0;
  for (std::int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  if (count > 1) p[count - 1] = static_cast<T>(stop);
  return out.to(where);
}

// An n x m matrix with ones on the diagonal.
template <element T = float>
tensor<T> eye(std::int64_t n, std::int64_t m = -1, device where = device::cpu) {
  if (m < 0) m = n;
  if (n < 0) throw value_error("tandem::eye: size must not be negative (got " + std::to_string(n) + ")");
  tensor<T> out = zeros<T>({n, m});
  for (std::int64_t i = 0; i < std::min(n, m); ++i) out.data()[i * m + i] = T(1);
  return out.to(where);
}

template <element T>
tensor<T> from_span(std::span<const T> values, shape s, device where = device::cpu) {
  if (numel(s) != static_cast<std::int64_t>(values.size()))
    throw shape_error("tandem::from_span: " + std::to_string(values.size()) + " values cannot fill shape " +
                      to_string(s));
  tensor<T> out(std::move(s));
  std::copy(values.begin(), values.end(), out.data());
  return out.to(where);
}
template <element T>
tensor<T> from_vector(const std::vector<T>& values, shape s, device where = device::cpu) {
  if (numel(s) != static_cast<std::int64_t>(values.size()))
    throw shape_error("tandem::from_vector: " + std::to_string(values.size()) + " values cannot fill shape " +
                      to_string(s));
  tensor<T> out(std::move(s));
  std::copy(values.begin(), values.end(), out.data());
  return out.to(where);
}
template <element T>
tensor<T> from_vector(const std::vector<T>& values, device where = device::cpu) {
  return from_vector(values, shape{static_cast<std::int64_t>(values.size())}, where);
}

// A tensor over memory the caller owns and keeps alive longer than the tensor.
template <element T>
tensor<T> borrow(T* data, shape s) {
  auto bytes = static_cast<std::size_t>(numel(s)) * sizeof(T);
  auto strides = detail::contiguous_strides(s);
  return tensor<T>(std::make_shared<detail::storage>(static_cast<void*>(data), bytes), std::move(s),
                   std::move(strides), 0);
}

// A tensor that takes ownership of `data`; `deleter(data)` runs when the last
// view of it goes away.
template <element T, class Deleter>
tensor<T> adopt(T* data, shape s, Deleter deleter) {
  auto bytes = static_cast<std::size_t>(numel(s)) * sizeof(T);
  auto strides = detail::contiguous_strides(s);
  std::function<void(void*)> release = [d = std::move(deleter)](void* p) mutable { d(static_cast<T*>(p)); };
  return tensor<T>(std::make_shared<detail::storage>(static_cast<void*>(data), bytes, std::move(release)),
                   std::move(s), std::move(strides), 0);
}

}  // namespace tandem
