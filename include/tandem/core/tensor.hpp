#pragma once
// tensor<T>: the eager value. A tensor is a handle: a shared storage, a shape,
// strides (in elements, any sign, 0 for broadcast) and an offset. Copying a
// tensor copies the handle; views (reshape, transpose, slice, expand...) share
// the storage, so a write through a view is seen by its base. clone() and
// contiguous() are the ways to get a fresh buffer.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/core/dtype.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/core/storage.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"

namespace tandem {

namespace detail {
struct identity_op {
  template <class V>
  TANDEM_HOST_DEVICE V operator()(const V& v) const {
    return v;
  }
};
// One number of a flat braced list. Converting to it is a user-defined
// conversion, so {{1}, {2}, {3}} picks the nested (3 x 1) constructor over
// the flat one, while {1, 2.5} still mixes literal types freely.
template <class T>
struct literal {
  T value;
  template <scalar S>
  literal(S v) : value(static_cast<T>(v)) {}
};

}  // namespace detail

template <class T>
class tensor {
  static_assert(is_element_v<T>,
                "tandem::tensor<T>: T must be one of float, double, std::int32_t, std::int64_t or bool");

 public:
  using value_type = T;

  // An empty 1-d tensor (zero elements).
  tensor() : tensor(tandem::shape{0}) {}

  // A fresh contiguous tensor of the given shape, its elements uninitialised.
  explicit tensor(tandem::shape s)
      : storage_(detail::allocate_storage(static_cast<std::size_t>(tandem::numel(s)) * sizeof(T))),
        shape_(std::move(s)),
        strides_(detail::contiguous_strides(shape_)) {}

  // Nested braces give the shape, as np.array does: {{1, 2}, {3, 4}} is 2x2.
  tensor(std::initializer_list<detail::literal<T>> values)
      : tensor(tandem::shape{static_cast<std::int64_t>(values.size())}) {
    T* out = data();
    for (const auto& v : values) *out++ = v.value;
  }
  tensor(std::initializer_list<std::initializer_list<T>> rows) : tensor(nested_shape(rows)) { fill_nested(rows, data()); }
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> blocks)
      : tensor(nested_shape(blocks)) {
    fill_nested(blocks, data());
  }
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> blocks)
      : tensor(nested_shape(blocks)) {
    fill_nested(blocks, data());
  }

  // A view over existing storage; the building block of every view op.
  tensor(std::shared_ptr<detail::storage> storage, tandem::shape s, detail::dims strides, std::int64_t offset)
      : storage_(std::move(storage)), shape_(std::move(s)), strides_(std::move(strides)), offset_(offset) {}

  // --- what it is ---
  const tandem::shape& shape() const { return shape_; }
  std::int64_t shape(std::int64_t axis) const { return shape_[detail::normalize_axis(axis, shape_, "shape")]; }
  std::span<const std::int64_t> strides() const { return {strides_.data(), strides_.size()}; }
  std::int64_t offset() const { return offset_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t numel() const { return tandem::numel(shape_); }
  static constexpr tandem::dtype dtype() { return dtype_of<T>; }
  static constexpr std::string_view dtype_name() { return tandem::dtype_name(dtype_of<T>); }
  bool is_contiguous() const {
    std::int64_t expected = 1;
    for (std::size_t i = shape_.size(); i-- > 0;) {
      if (shape_[i] == 1) continue;
      if (strides_[i] != expected) return numel() == 0;
      expected *= shape_[i];
    }
    return true;
  }
  const std::shared_ptr<detail::storage>& storage() const { return storage_; }

  // --- elements ---
  T* data() { return static_cast<T*>(storage_->data()) + offset_; }
  const T* data() const { return static_cast<const T*>(storage_->data()) + offset_; }

  T item() const {
    if (numel() != 1)
      throw value_error("tandem::item: a tensor of shape " + to_string(shape_) +
                        " has " + std::to_string(numel()) + " elements, not one");
    return *data();
  }

  // Bounds-checked element access; negative indices count from the end.
  template <std::integral... I>
  T& at(I... index) {
    return data()[element_offset({static_cast<std::int64_t>(index)...})];
  }
  template <std::integral... I>
  const T& at(I... index) const {
    return data()[element_offset({static_cast<std::int64_t>(index)...})];
  }

  // The elements in row-major order.
  std::vector<T> to_vector() const {
    tensor dense = contiguous();
    return std::vector<T>(dense.data(), dense.data() + dense.numel());
  }

  // --- views: no copy, shared storage ---

  // A view with a new shape; one axis may be -1 and is inferred. Copies only
  // when the strides cannot express the new shape (as torch.reshape).
  tensor reshape(tandem::shape s) const {
    s = infer_shape(std::move(s), "reshape");
    if (!is_contiguous()) return contiguous().reshape(std::move(s));
    return tensor(storage_, s, detail::contiguous_strides(s), offset_);
  }
  // As reshape, but throws instead of copying.
  tensor view(tandem::shape s) const {
    s = infer_shape(std::move(s), "view");
    if (!is_contiguous())
      throw shape_error("tandem::view: a tensor of shape " + to_string(shape_) +
                        " with non-contiguous strides cannot be viewed as " + to_string(s) + "; use reshape");
    return tensor(storage_, s, detail::contiguous_strides(s), offset_);
  }
  tensor flatten() const { return reshape({-1}); }

  tensor permute(std::span<const std::int64_t> order) const {
    if (static_cast<std::int64_t>(order.size()) != dim())
      throw shape_error("tandem::permute: order " + to_string(order) + " does not match a tensor of shape " +
                        to_string(shape_));
    tandem::shape s;
    detail::dims st;
    std::vector<bool> seen(order.size(), false);
    for (std::int64_t axis : order) {
      std::int64_t a = detail::normalize_axis(axis, shape_, "permute");
      if (seen[a]) throw shape_error("tandem::permute: order " + to_string(order) + " repeats axis " + std::to_string(axis));
      seen[a] = true;
      s.push_back(shape_[a]);
      st.push_back(strides_[a]);
    }
    return tensor(storage_, s, st, offset_);
  }
  tensor permute(std::initializer_list<std::int64_t> order) const { return permute(std::span(order.begin(), order.size())); }

  tensor transpose(std::int64_t a, std::int64_t b) const {
    a = detail::normalize_axis(a, shape_, "transpose");
    b = detail::normalize_axis(b, shape_, "transpose");
    tensor out = *this;
    std::swap(out.shape_[a], out.shape_[b]);
    std::swap(out.strides_[a], out.strides_[b]);
    return out;
  }

  // Python slicing along one axis: [start:stop:step], negative indices count
  // from the end, an absent bound means the end in the step's direction.
  tensor slice(std::int64_t axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
               std::int64_t step = 1) const {
    axis = detail::normalize_axis(axis, shape_, "slice");
    if (step == 0) throw value_error("tandem::slice: step must not be zero");
    std::int64_t n = shape_[axis];
    auto clamp_bound = [&](std::optional<std::int64_t> bound, std::int64_t absent) {
      if (!bound) return absent;
      std::int64_t b = *bound < 0 ? *bound + n : *bound;
      return step > 0 ? std::clamp<std::int64_t>(b, 0, n) : std::clamp<std::int64_t>(b, -1, n - 1);
    };
    std::int64_t first = clamp_bound(start, step > 0 ? 0 : n - 1);
    std::int64_t last = clamp_bound(stop, step > 0 ? n : -1);
    std::int64_t count = step > 0 ? std::max<std::int64_t>(0, (last - first + step - 1) / step)
                                  : std::max<std::int64_t>(0, (first - last - step - 1) / -step);
    tensor out = *this;
    out.shape_[axis] = count;
    out.strides_[axis] = strides_[axis] * step;
    if (count > 0) out.offset_ += first * strides_[axis];
    return out;
  }

  // The sub-tensor at `index` along `axis`, which disappears.
  tensor select(std::int64_t axis, std::int64_t index) const {
    axis = detail::normalize_axis(axis, shape_, "select");
    std::int64_t i = detail::checked_index(index, shape_, axis, "select");
    tensor out = *this;
    out.offset_ += i * strides_[axis];
    out.shape_.erase(axis);
    out.strides_.erase(axis);
    return out;
  }
  tensor operator[](std::int64_t index) const {
    if (dim() == 0) throw index_error("tandem::operator[]: a 0-d tensor cannot be indexed");
    return select(0, index);
  }

  // A broadcast view: axes of extent 1 (or new leading axes) repeat with stride 0.
  tensor expand(const tandem::shape& target) const {
    if (target.size() < shape_.size()) throw_expand(target);
    std::size_t lead = target.size() - shape_.size();
    detail::dims st(target.size(), 0);
    for (std::size_t i = 0; i < shape_.size(); ++i) {
      if (shape_[i] == target[lead + i]) st[lead + i] = strides_[i];
      else if (shape_[i] != 1) throw_expand(target);
    }
    return tensor(storage_, target, st, offset_);
  }

  tensor squeeze() const {
    tensor out(storage_, {}, {}, offset_);
    for (std::size_t i = 0; i < shape_.size(); ++i)
      if (shape_[i] != 1) {
        out.shape_.push_back(shape_[i]);
        out.strides_.push_back(strides_[i]);
      }
    return out;
  }
  tensor squeeze(std::int64_t axis) const {
    axis = detail::normalize_axis(axis, shape_, "squeeze");
    if (shape_[axis] != 1) return *this;
    tensor out = *this;
    out.shape_.erase(axis);
    out.strides_.erase(axis);
    return out;
  }
  tensor unsqueeze(std::int64_t axis) const {
    axis = detail::normalize_axis(axis, shape_, "unsqueeze", 1);
    tensor out = *this;
    std::int64_t stride = axis < dim() ? strides_[axis] * shape_[axis] : 1;
    out.shape_.insert(axis, 1);
    out.strides_.insert(axis, stride);
    return out;
  }

  // --- copies ---
  tensor contiguous() const { return is_contiguous() ? *this : clone(); }
  tensor clone() const { return astype<T>(); }

  template <element U>
  tensor<U> astype() const {
    tensor<U> out(shape_);
    detail::elementwise<U, T>(detail::identity_op{}, shape_, out.data(), detail::contiguous_strides(shape_),
                              detail::operand<T>{data(), strides_});
    return out;
  }

  // --- in-place writes (through views too) ---

  // Copies `source`, broadcast to this shape and converted to T, into these elements.
  template <element U>
  tensor& assign(const tensor<U>& source) {
    if (!detail::broadcasts_to(source.shape(), shape_))
      throw shape_error("tandem::assign: a tensor of shape " + to_string(source.shape()) +
                        " cannot be written into one of shape " + to_string(shape_));
    tensor<U> from = source.storage() == storage_ ? source.clone() : source;
    from = from.expand(shape_);
    detail::elementwise<T, T>(detail::identity_op{}, shape_, data(), strides_,
                              detail::operand<U>{from.data(), detail::dims(from.strides().begin(), from.strides().end())});
    storage_->bump_version();
    return *this;
  }
  template <scalar S>
  tensor& fill(S value) {
    T v = static_cast<T>(value);
    detail::elementwise<T, T>(detail::identity_op{}, shape_, data(), strides_,
                              detail::operand<T>{&v, detail::dims(shape_.size(), 0)});
    storage_->bump_version();
    return *this;
  }

 private:
  std::int64_t element_offset(std::initializer_list<std::int64_t> index) const {
    if (static_cast<std::int64_t>(index.size()) != dim())
      throw index_error("tandem::at: " + std::to_string(index.size()) + " indices for a tensor of shape " +
                        to_string(shape_));
    std::int64_t off = 0;
    std::size_t axis = 0;
    for (std::int64_t i : index) {
      off += detail::checked_index(i, shape_, static_cast<std::int64_t>(axis), "at") * strides_[axis];
      ++axis;
    }
    return off;
  }

  tandem::shape infer_shape(tandem::shape s, const char* op) const {
    std::int64_t known = 1, unknown = -1;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == -1 && unknown < 0) unknown = static_cast<std::int64_t>(i);
      else if (s[i] < 0) throw shape_error(std::string("tandem::") + op + ": invalid target shape " + to_string(s));
      else known *= s[i];
    }
    if (unknown >= 0 && known != 0 && numel() % known == 0) s[unknown] = numel() / known;
    if (tandem::numel(s) != numel() || (unknown >= 0 && known == 0))
      throw shape_error(std::string("tandem::") + op + ": a tensor of shape " + to_string(shape_) + " (" +
                        std::to_string(numel()) + " elements) cannot take shape " + to_string(s));
    return s;
  }

  [[noreturn]] void throw_expand(const tandem::shape& target) const {
    throw shape_error("tandem::expand: a tensor of shape " + to_string(shape_) + " cannot be expanded to " +
                      to_string(target));
  }

  template <class List>
  static tandem::shape nested_shape(const List& list) {
    tandem::shape s{static_cast<std::int64_t>(list.size())};
    if constexpr (!std::is_same_v<typename List::value_type, T>) {
      tandem::shape inner = list.size() ? nested_shape(*list.begin()) : nested_shape(typename List::value_type{});
      for (const auto& sub : list)
        if (nested_shape(sub) != inner)
          throw shape_error("tandem::tensor: nested initializer lists are ragged; every row must have shape " +
                            to_string(inner));
      for (auto d : inner) s.push_back(d);
    }
    return s;
  }
  template <class List>
  static T* fill_nested(const List& list, T* out) {
    for (const auto& sub : list) {
      if constexpr (std::is_same_v<typename List::value_type, T>) *out++ = sub;
      else out = fill_nested(sub, out);
    }
    return out;
  }

  std::shared_ptr<detail::storage> storage_;
  tandem::shape shape_;
  detail::dims strides_;
  std::int64_t offset_ = 0;
};

template <class T>
inline constexpr bool is_tensor_v = false;
template <class T>
inline constexpr bool is_tensor_v<tensor<T>> = true;

}  // namespace tandem
