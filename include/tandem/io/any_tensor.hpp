#pragma once
// Files' tensors: a .npy, .npz or safetensors file says its dtype at run
// time, so the readers return any_tensor (core/any_tensor.hpp), and
// io::as<T> takes the tensor<T> out of it or says which type the file
// holds instead.

#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "tandem/core/any_tensor.hpp"
#include "tandem/core/dtype.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::io {

using tandem::any_tensor;

// Tensors by name, in name order: an .npz archive's arrays, a safetensors
// file's tensors.
using named_tensors = std::map<std::string, any_tensor>;

inline tandem::dtype type_of(const any_tensor& t) {
  return std::visit([](const auto& x) { return x.dtype(); }, t);
}

inline const tandem::shape& shape_of(const any_tensor& t) {
  return std::visit([](const auto& x) -> const tandem::shape& { return x.shape(); }, t);
}

// The tensor<T> in `t`; `what` names it in the io_error thrown when `t`
// holds another element type (tandem converts no file's values silently).
template <element T>
tensor<T> as(const any_tensor& t, const std::string& what = "the tensor") {
  if (const auto* held = std::get_if<tensor<T>>(&t)) return *held;
  throw io_error("tandem::io::as: " + what + " holds " + std::string(dtype_name(type_of(t))) + ", not " +
                 std::string(dtype_name(tandem::dtype_of<T>)));
}

}  // namespace tandem::io
