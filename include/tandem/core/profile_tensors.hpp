#pragma once
// What an op's profile event says about its tensors: the inputs' shapes,
// the result's element type and device, and the bytes read and written.
// Called only while a profiler records (profile_range::recording()).

#include <cstdint>
#include <string>

#include "tandem/core/dtype.hpp"
#include "tandem/core/profiling.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::detail {

template <class X>
void add_operand(profile_event& e, const X& x) {
  if (!e.shapes.empty()) e.shapes += ", ";
  if constexpr (is_tensor_v<X>) {
    e.shapes += to_string(x.shape());
    e.bytes += x.numel() * static_cast<std::int64_t>(sizeof(typename X::value_type));
  } else {
    e.shapes += "scalar";
  }
}

// "float32 cpu": a tensor's element type and device, as events name them.
template <class T>
std::string element_detail(const tensor<T>& t) {
  return std::string(dtype_name(dtype_of<T>)) + " " + to_string(t.device());
}

// The event of an op that read `operands` (tensors and scalars) and wrote
// `out`; flops where the caller knows them.
template <class R, class... X>
void describe_op(profile_range& range, const tensor<R>& out, const X&... operands) {
  range.describe([&](profile_event& e) {
    (add_operand(e, operands), ...);
    e.bytes += out.numel() * static_cast<std::int64_t>(sizeof(R));
    e.detail = element_detail(out);
  });
}

// A static graph call's event: its arguments' shapes.
template <class... X>
void describe_operands(profile_range& range, const X&... operands) {
  range.describe([&](profile_event& e) { (add_operand(e, operands), ...); });
}

// The event of an op with several exits, described where it starts: the
// inputs' shapes and bytes, the first's element type and device.
template <class T, class... X>
void describe_inputs(profile_range& range, const tensor<T>& first, const X&... rest) {
  range.describe([&](profile_event& e) {
    add_operand(e, first);
    (add_operand(e, rest), ...);
    e.detail = element_detail(first);
  });
}

}  // namespace tandem::detail
