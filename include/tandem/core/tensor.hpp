#pragma once
// tensor<T>: the eager value. A tensor is a handle: a shared storage, a shape,
// strides (in elements, any sign, 0 for broadcast), an offset and its autograd
// state. Copying a tensor copies the handle; views (reshape, transpose,
// slice, expand...) share the storage, so a write through a view is seen by
// its base, and each view is its own node for autograd. clone() and
// contiguous() are the ways to get a fresh buffer. The storage's device
// (core/device.hpp) is the tensor's: to() copies between devices.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/core/device.hpp"
#include "tandem/core/dtype.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/core/storage.hpp"
#include "tandem/autograd/backward_options.hpp"
#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/node.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/ops/transfer.hpp"
#include "tandem/ops/view.hpp"

namespace tandem {

namespace detail {
template <class T>
struct autograd_meta;
template <class Op, class R, class... X>
void record(const Op& op, tensor<R>& out, const X&... x);
template <class T>
void backward(const tensor<T>& output, const tensor<T>& seed, const backward_options& options);

struct identity_op {
  static constexpr const char* name = "copy";
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
                "tandem::tensor<T>: T must be one of float, double, bfloat16, float16, std::int32_t, std::int64_t "
                "or bool");

 public:
  using value_type = T;

  // An empty 1-d tensor (zero elements); allocates nothing.
  tensor() : storage_(detail::empty_storage()), shape_{0}, strides_{1} {}

  // A fresh contiguous tensor of the given shape, its elements uninitialised.
  explicit tensor(tandem::shape s)
      : storage_(detail::allocate_storage(
            static_cast<std::size_t>(detail::checked_numel(s, static_cast<std::int64_t>(sizeof(T)))) * sizeof(T))),
        shape_(std::move(s)),
        strides_(detail::contiguous_strides(shape_)) {}
  // The same on `where`.
  tensor(tandem::shape s, tandem::device where)
      : storage_(detail::allocate_storage(
            static_cast<std::size_t>(detail::checked_numel(s, static_cast<std::int64_t>(sizeof(T)))) * sizeof(T),
            where)),
        shape_(std::move(s)),
        strides_(detail::contiguous_strides(shape_)) {}

  // Nested braces give the shape, as np.array does: {{1, 2}, {3, 4}} is 2x2.
  tensor(std::initializer_list<detail::literal<T>> values)
      : tensor(tandem::shape{static_cast<std::int64_t>(values.size())}) {
    T* out = data();
    for (const auto& v : values) *out++ = v.value;
  }
  tensor(std::initializer_list<std::initializer_list<T>> rows) : tensor(nested_shape(rows)) { fill_nested(rows, data()); }
  // The same on `where`: tensor<float>({1, 2, 3}, device::cuda()).
  tensor(std::initializer_list<detail::literal<T>> values, tandem::device where) : tensor(tensor(values).to(where)) {}
  tensor(std::initializer_list<std::initializer_list<T>> rows, tandem::device where)
      : tensor(tensor(rows).to(where)) {}
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
  tandem::device device() const { return storage_->device(); }

  // --- elements ---
  // Writing access: pending captured work that reads this tensor runs first.
  T* data() {
    detail::before_write(*storage_);
    return static_cast<T*>(storage_->data()) + offset_;
  }
  const T* data() const { return static_cast<const T*>(storage_->data()) + offset_; }
  // The elements' address on the tensor's device, for its kernels and
  // copies (data() is the host's and throws for a GPU's memory).
  T* device_data() {
    detail::before_write(*storage_);
    return static_cast<T*>(storage_->device_data()) + offset_;
  }
  const T* device_data() const { return static_cast<const T*>(storage_->device_data()) + offset_; }

  T item() const {
    if (numel() != 1)
      throw value_error("tandem::item: a tensor of shape " + to_string(shape_) +
                        " has " + std::to_string(numel()) + " elements, not one");
    if (!device().is_cpu()) return detach().cpu().item();
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
    if (!device().is_cpu()) return detach().cpu().to_vector();
    tensor dense = contiguous();
    return std::vector<T>(dense.data(), dense.data() + dense.numel());
  }

  // --- views: no copy, shared storage; each is recorded for autograd ---

  // A view with a new shape; one axis may be -1 and is inferred. Copies only
  // when the strides cannot express the new shape (as torch.reshape).
  tensor reshape(tandem::shape s) const {
    s = infer_shape(std::move(s), "reshape");
    if (!is_contiguous()) return contiguous().reshape(std::move(s));
    return recorded(reshape_op{shape_}, view_of(s, detail::contiguous_strides(s), offset_));
  }
  // As reshape, but throws instead of copying.
  tensor view(tandem::shape s) const {
    s = infer_shape(std::move(s), "view");
    if (!is_contiguous())
      throw shape_error("tandem::view: a tensor of shape " + to_string(shape_) +
                        " with non-contiguous strides cannot be viewed as " + to_string(s) + "; use reshape");
    return recorded(reshape_op{shape_}, view_of(s, detail::contiguous_strides(s), offset_));
  }
  tensor flatten() const { return reshape({-1}); }

  tensor permute(std::span<const std::int64_t> order) const {
    if (static_cast<std::int64_t>(order.size()) != dim())
      throw shape_error("tandem::permute: order " + to_string(order) + " does not match a tensor of shape " +
                        to_string(shape_));
    tandem::shape s;
    detail::dims st, normalized;
    std::vector<bool> seen(order.size(), false);
    for (std::int64_t axis : order) {
      std::int64_t a = detail::normalize_axis(axis, shape_, "permute");
      if (seen[a]) throw shape_error("tandem::permute: order " + to_string(order) + " repeats axis " + std::to_string(axis));
      seen[a] = true;
      s.push_back(shape_[a]);
      st.push_back(strides_[a]);
      normalized.push_back(a);
    }
    return recorded(permute_op{normalized}, view_of(s, st, offset_));
  }
  tensor permute(std::initializer_list<std::int64_t> order) const { return permute(std::span(order.begin(), order.size())); }

  tensor transpose(std::int64_t a, std::int64_t b) const {
    a = detail::normalize_axis(a, shape_, "transpose");
    b = detail::normalize_axis(b, shape_, "transpose");
    detail::dims order(shape_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
    std::swap(order[a], order[b]);
    return permute(std::span<const std::int64_t>(order.data(), order.size()));
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
    return take(axis, count > 0 ? first : 0, count, step);
  }

  // `count` elements along `axis` starting at index `first`, every `step`
  // (no Python conventions: every index must exist).
  tensor take(std::int64_t axis, std::int64_t first, std::int64_t count, std::int64_t step = 1) const {
    axis = detail::normalize_axis(axis, shape_, "take");
    std::int64_t last = first + (count - 1) * step;
    if (count < 0 || step == 0 || (count > 0 && (first < 0 || first >= shape_[axis] || last < 0 || last >= shape_[axis])))
      throw index_error("tandem::take: " + std::to_string(count) + " elements from " + std::to_string(first) +
                        " every " + std::to_string(step) + " do not fit axis " + std::to_string(axis) +
                        " of a tensor of shape " + to_string(shape_));
    tandem::shape s = shape_;
    detail::dims st = strides_;
    s[axis] = count;
    st[axis] = strides_[axis] * step;
    return recorded(take_op{shape_, axis, first, count, step}, view_of(s, st, offset_ + first * strides_[axis]));
  }

  // The sub-tensor at `index` along `axis`, which disappears.
  tensor select(std::int64_t axis, std::int64_t index) const {
    axis = detail::normalize_axis(axis, shape_, "select");
    std::int64_t i = detail::checked_index(index, shape_, axis, "select");
    return take(axis, i, 1).squeeze(axis);
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
    if (target == shape_) return *this;
    return recorded(expand_op{shape_}, view_of(target, st, offset_));
  }

  tensor squeeze() const {
    tandem::shape s;
    detail::dims st;
    for (std::size_t i = 0; i < shape_.size(); ++i)
      if (shape_[i] != 1) {
        s.push_back(shape_[i]);
        st.push_back(strides_[i]);
      }
    return recorded(reshape_op{shape_}, view_of(s, st, offset_));
  }
  tensor squeeze(std::int64_t axis) const {
    axis = detail::normalize_axis(axis, shape_, "squeeze");
    if (shape_[axis] != 1) return *this;
    tandem::shape s = shape_;
    detail::dims st = strides_;
    s.erase(axis);
    st.erase(axis);
    return recorded(reshape_op{shape_}, view_of(s, st, offset_));
  }
  tensor unsqueeze(std::int64_t axis) const {
    axis = detail::normalize_axis(axis, shape_, "unsqueeze", 1);
    tandem::shape s = shape_;
    detail::dims st = strides_;
    std::int64_t stride = axis < dim() ? strides_[axis] * shape_[axis] : 1;
    s.insert(axis, 1);
    st.insert(axis, stride);
    return recorded(reshape_op{shape_}, view_of(s, st, offset_));
  }

  // --- copies ---

  // The same values on `where` (this tensor itself when it is there
  // already); recorded, so gradients flow back to this device.
  tensor to(tandem::device where) const {
    const tandem::device from = device();
    if (where == from) return *this;
    const detail::device_runtime& runtime = detail::runtime_for(from.is_cpu() ? where : from, "to");
    if (!from.is_cpu() && !where.is_cpu()) detail::runtime_for(where, "to");
    tensor dense = contiguous();
    tensor out(shape_, where);
    if (numel() > 0)
      runtime.copy(out.device_data(), where, dense.device_data(), from, static_cast<std::size_t>(numel()) * sizeof(T));
    detail::record(transfer_op{from}, out, *this);
    return out;
  }
  tensor cpu() const { return to(tandem::device::cpu); }
  tensor cuda(int index = 0) const { return to(tandem::device::cuda(index)); }

  tensor contiguous() const { return is_contiguous() ? *this : clone(); }
  tensor clone() const { return astype<T>(); }

  template <element U>
  tensor<U> astype() const {
    tensor<U> out(shape_, device());
    // Between float and the 16-bit floats through float: exact, then one
    // rounding, in the loop that widens and rounds blocks on SIMD batches.
    constexpr bool through_float = (is_reduced_float_v<T> || is_reduced_float_v<U>) &&
                                   (std::is_same_v<T, float> || is_reduced_float_v<T>) &&
                                   (std::is_same_v<U, float> || is_reduced_float_v<U>);
    using compute = std::conditional_t<through_float, float, T>;
    if (device().is_cpu())
      detail::elementwise<U, compute>(detail::identity_op{}, shape_, out.data(), detail::contiguous_strides(shape_),
                                      detail::operand<T>{data(), strides_});
    else
      detail::run_cuda_elementwise<U, T>("astype", detail::identity_op{}, device(), shape_, out.device_data(),
                                         detail::contiguous_strides(shape_),
                                         detail::device_operand<T>{device_data(), strides_, T()});
    detail::record(cast_op{}, out, *this);
    return out;
  }

  // --- in-place writes (through views too) ---

  // Copies `source` (from any device), broadcast to this shape and converted
  // to T, into these elements.
  template <element U>
  tensor& assign(const tensor<U>& source) {
    check_writable("assign");
    if (!detail::broadcasts_to(source.shape(), shape_))
      throw shape_error("tandem::assign: a tensor of shape " + to_string(source.shape()) +
                        " cannot be written into one of shape " + to_string(shape_));
    tensor<U> from = source.storage() == storage_ ? source.clone() : source.detach();
    if (from.device() != device()) from = from.to(device());
    from = from.expand(shape_);
    detail::dims from_strides(from.strides().begin(), from.strides().end());
    if (device().is_cpu()) {
      detail::elementwise<T, T>(detail::identity_op{}, shape_, data(), strides_, detail::operand<U>{from.data(), from_strides});
    } else if (std::is_same_v<T, U> && is_contiguous() && from.is_contiguous() && from.shape() == shape_) {
      if (numel() > 0)
        detail::runtime_for(device(), "assign").copy(device_data(), device(), from.device_data(), device(),
                                                      static_cast<std::size_t>(numel()) * sizeof(T));
    } else {
      detail::run_cuda_elementwise<T, T>("assign", detail::identity_op{}, device(), shape_, device_data(), strides_,
                                         detail::device_operand<U>{from.device_data(), from_strides, U()});
    }
    storage_->bump_version();
    return *this;
  }
  template <scalar S>
  tensor& fill(S value) {
    check_writable("fill");
    T v = static_cast<T>(value);
    if (!device().is_cpu()) {
      detail::run_cuda_elementwise<T, T>("fill", detail::identity_op{}, device(), shape_, device_data(), strides_,
                                         detail::device_scalar(v));
      storage_->bump_version();
      return *this;
    }
    // A small contiguous tensor (a constant, a loop's index) needs no
    // kernel set up for it; a large one is filled by the threads.
    if (numel() <= 4096 && is_contiguous()) std::fill_n(data(), numel(), v);
    else
      detail::elementwise<T, T>(detail::identity_op{}, shape_, data(), strides_,
                                detail::operand<T>{&v, detail::dims(shape_.size(), 0)});
    storage_->bump_version();
    return *this;
  }

  // --- autograd ---

  bool requires_grad() const { return meta_ && meta_->requires_grad; }
  // Makes this tensor a leaf that collects a gradient in grad().
  tensor& set_requires_grad(bool on = true) {
    static_assert(std::is_floating_point_v<T>,
                  "tandem::tensor::set_requires_grad: only float and double tensors can have gradients");
    if (meta_ && meta_->grad_fn)
      throw error("tandem::set_requires_grad: a tensor computed from others (by " + meta_->grad_fn->name() +
                  ") already follows its inputs; call detach() first");
    if (!meta_) meta_ = detail::make_cached<detail::autograd_meta<T>>();
    meta_->requires_grad = on;
    return *this;
  }
  // A leaf is a tensor not computed by a recorded op.
  bool is_leaf() const { return !meta_ || !meta_->grad_fn; }
  bool has_grad() const { return meta_ && meta_->grad.has_value(); }
  // The gradient accumulated by backward() into this leaf.
  tensor grad() const {
    if (!has_grad())
      throw error("tandem::grad: this tensor of shape " + to_string(shape_) +
                  " has no gradient (it is not a leaf that requires one, or backward has not reached it)");
    return *meta_->grad;
  }
  void zero_grad() {
    if (meta_) meta_->grad.reset();
  }
  // The same values, cut from the autograd graph.
  tensor detach() const { return view_of(shape_, strides_, offset_); }

  // Back-propagates from this scalar (or with an explicit sensitivity of this
  // tensor's shape) into the grad() of every leaf it depends on.
  void backward(const backward_options& options = {}) const {
    if (numel() != 1)
      throw shape_error("tandem::backward: a tensor of shape " + to_string(shape_) +
                        " is not a scalar; pass a sensitivity of that shape");
    tensor seed(shape_, device());
    seed.fill(1);
    detail::backward(*this, seed, options);
  }
  void backward(const tensor& sensitivity, const backward_options& options = {}) const {
    detail::backward(*this, sensitivity.detach(), options);
  }

  // A parameter's name (empty for other tensors).
  std::string name() const { return meta_ ? meta_->name : std::string(); }

  // The autograd state shared by the handles of this tensor (for the engine).
  std::shared_ptr<detail::autograd_meta<T>>& autograd() { return meta_; }
  const std::shared_ptr<detail::autograd_meta<T>>& autograd() const { return meta_; }

 private:
  // A view of the same storage with no autograd state of its own yet.
  tensor view_of(tandem::shape s, detail::dims st, std::int64_t offset) const {
    return tensor(storage_, std::move(s), std::move(st), offset);
  }
  template <class Op>
  tensor recorded(const Op& op, tensor out) const {
    detail::record(op, out, *this);
    return out;
  }
  void check_writable(const char* op) const {
    if (requires_grad() && is_grad_enabled())
      throw error(std::string("tandem::") + op + ": a tensor of shape " + to_string(shape_) +
                  " that requires a gradient cannot be written in place while recording; use tandem::no_grad");
  }

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
  std::shared_ptr<detail::autograd_meta<T>> meta_;
};

namespace detail {
template <class T>
std::true_type derives_from_tensor(const tensor<T>*);
std::false_type derives_from_tensor(...);
}  // namespace detail

// Whether X is a tensor<T> or a type derived from one (parameter<T>).
template <class X>
inline constexpr bool is_tensor_v = decltype(detail::derives_from_tensor(static_cast<std::remove_cvref_t<X>*>(nullptr)))::value;

}  // namespace tandem

#include "tandem/autograd/engine.hpp"
#include "tandem/autograd/meta.hpp"
#include "tandem/autograd/record.hpp"
