#pragma once
// Ops that build tensors out of others along an axis: concat, stack, split,
// index_select, gather, one_hot, and broadcast_to. (Pure views such as
// reshape, transpose and slice are members of tensor<T>.)

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/ops/elementwise/compare.hpp"

namespace tandem {

namespace detail {
template <class T>
std::string shapes_of(const std::vector<tensor<T>>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ", ") + to_string(x.shape());
  return out;
}

// A tensor seen as [outer, extent, inner] around `axis`, contiguous.
template <class T>
struct around_axis {
  tensor<T> data;
  std::int64_t outer, extent, inner;
};
template <class T>
around_axis<T> split_around(const tensor<T>& x, std::int64_t axis) {
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (std::int64_t i = axis + 1; i < x.dim(); ++i) inner *= x.shape()[i];
  return {x.contiguous(), outer, x.shape()[axis], inner};
}

// Gradient routing for concat, whose inputs are a list: each input gets its
// slice of the output's gradient.
template <class T>
class concat_node final : public typed_node<T> {
 public:
  concat_node(std::vector<std::shared_ptr<node>> edges, std::int64_t axis, std::vector<std::int64_t> sizes)
      : axis_(axis), sizes_(std::move(sizes)) {
    this->next_ = std::move(edges);
  }
  void run(const backward_context&) override {
    tensor<T> g = this->take_pending();
    std::int64_t at = 0;
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      if (this->next_[i]) this->next_[i]->receive(g.take(axis_, at, sizes_[i]));
      at += sizes_[i];
    }
  }
  std::string name() const override { return "concat"; }

 private:
  std::int64_t axis_;
  std::vector<std::int64_t> sizes_;
};
}  // namespace detail

// The rows of `source` added into a copy of x at `index` along the axis
// (repeated indices add up).
struct index_add_op {
  static constexpr const char* name = "index_add";
  static constexpr bool saves_inputs = false;
  std::int64_t axis;
  tensor<std::int64_t> index;
  template <std::size_t I, class G, class Y, class X, class S>
  auto derivative(const G& g, const Y&, const X&, const S&) const {
    if constexpr (I == 0) return g;
    else return index_select(g, axis, index);
  }
};
struct index_select_op {
  static constexpr const char* name = "index_select";
  static constexpr bool saves_inputs = false;
  shape from;
  std::int64_t axis;
  tensor<std::int64_t> index;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    using T = typename G::value_type;
    return index_add(zeros<T>(from, g.device()), axis, index, g);
  }
};
// out = x; out[..., index[i,j,k], ...] += source[i,j,k] along the axis.
struct scatter_add_op {
  static constexpr const char* name = "scatter_add";
  static constexpr bool saves_inputs = false;
  std::int64_t axis;
  tensor<std::int64_t> index;
  template <std::size_t I, class G, class Y, class X, class S>
  auto derivative(const G& g, const Y&, const X&, const S&) const {
    if constexpr (I == 0) return g;
    else return gather(g, axis, index);
  }
};
struct gather_op {
  static constexpr const char* name = "gather";
  static constexpr bool saves_inputs = false;
  shape from;
  std::int64_t axis;
  tensor<std::int64_t> index;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    using T = typename G::value_type;
    return scatter_add(zeros<T>(from, g.device()), axis, index, g);
  }
};

// g placed into zeros of shape `into`, along `axis` from `first` every
// `step`: the inverse of take, and the gradient of slices.
template <element T>
tensor<T> embed(const tensor<T>& g, const shape& into, std::int64_t axis, std::int64_t first, std::int64_t step) {
  tensor<T> out = zeros<T>(into, g.device());
  std::int64_t count = g.shape(axis);
  out.take(axis, first, count, step).assign(g);
  detail::record(embed_op{axis, first, count, step}, out, g);
  return out;
}

// Axes `start` to the last merged into one: flatten(x, 1) of [N, C, H, W]
// is [N, C * H * W].
template <element T>
tensor<T> flatten(const tensor<T>& x, std::int64_t start = 0) {
  std::int64_t rank = x.dim();
  if (start < -std::max<std::int64_t>(rank, 1) || start >= std::max<std::int64_t>(rank, 1))
    throw index_error("tandem::flatten: start axis " + std::to_string(start) + " is out of range for shape " +
                      to_string(x.shape()));
  if (rank == 0) return x.reshape({1});
  if (start < 0) start += rank;
  shape merged(x.shape().begin(), x.shape().begin() + start);
  merged.push_back(-1);
  return x.reshape(merged);
}

template <element T>
tensor<T> broadcast_to(const tensor<T>& x, const shape& target) {
  return x.expand(target);
}

// The view ops as functions too, so that one generic function may call
// them on tensors and on symbolic values alike (graph/ops.hpp has the
// symbolic forms, and sym has the members).
template <element T>
tensor<T> reshape(const tensor<T>& x, const shape& s) {
  return x.reshape(s);
}
template <element T>
tensor<T> transpose(const tensor<T>& x, std::int64_t a, std::int64_t b) {
  return x.transpose(a, b);
}
template <element T>
tensor<T> permute(const tensor<T>& x, const std::vector<std::int64_t>& order) {
  return x.permute(order);
}
template <element T>
tensor<T> unsqueeze(const tensor<T>& x, std::int64_t axis) {
  return x.unsqueeze(axis);
}
template <element T>
tensor<T> squeeze(const tensor<T>& x, std::int64_t axis) {
  return x.squeeze(axis);
}
template <element T>
tensor<T> take(const tensor<T>& x, std::int64_t axis, std::int64_t first, std::int64_t count, std::int64_t step = 1) {
  return x.take(axis, first, count, step);
}

// Joins tensors along an existing axis; all other extents must agree.
template <element T>
tensor<T> concat(const std::vector<tensor<T>>& xs, std::int64_t axis = 0) {
  detail::profile_range range(profile_category::op, "concat");
  if (xs.empty()) throw value_error("tandem::concat: needs at least one tensor");
  std::int64_t rank = xs[0].dim();
  axis = detail::normalize_axis(axis, xs[0].shape(), "concat");
  shape out_shape = xs[0].shape();
  out_shape[axis] = 0;
  for (const auto& x : xs) {
    bool fits = x.dim() == rank;
    for (std::int64_t i = 0; fits && i < rank; ++i) fits = i == axis || x.shape()[i] == xs[0].shape()[i];
    if (!fits)
      throw shape_error("tandem::concat: shapes " + detail::shapes_of(xs) + " differ outside axis " +
                        std::to_string(axis));
    out_shape[axis] += x.shape()[axis];
  }
  device where = xs[0].device();
  for (const auto& x : xs)
    if (x.device() != where)
      throw device_error("tandem::concat: tensors on " + to_string(where) + " and " + to_string(x.device()) +
                         " cannot be joined; move them to one device with to()");
  tensor<T> out(out_shape, where);
  std::int64_t at = 0;
  for (const auto& x : xs) {
    out.slice(axis, at, at + x.shape()[axis]).assign(x);
    at += x.shape()[axis];
  }
  if constexpr (std::is_floating_point_v<T>) {
    bool any = false;
    for (const auto& x : xs) any = any || x.requires_grad();
    if (any && is_grad_enabled()) {
      std::vector<std::shared_ptr<detail::node>> edges;
      std::vector<std::int64_t> sizes;
      for (const auto& x : xs) edges.push_back(detail::edge_of(x)), sizes.push_back(x.shape()[axis]);
      out.autograd() = std::make_shared<detail::autograd_meta<T>>();
      out.autograd()->requires_grad = true;
      out.autograd()->grad_fn = std::make_shared<detail::concat_node<T>>(std::move(edges), axis, std::move(sizes));
    }
  }
  return out;
}

// Joins equally shaped tensors along a new axis.
template <element T>
tensor<T> stack(const std::vector<tensor<T>>& xs, std::int64_t axis = 0) {
  if (xs.empty()) throw value_error("tandem::stack: needs at least one tensor");
  for (const auto& x : xs)
    if (x.shape() != xs[0].shape())
      throw shape_error("tandem::stack: shapes " + detail::shapes_of(xs) + " are not all equal");
  std::vector<tensor<T>> expanded;
  axis = detail::normalize_axis(axis, xs[0].shape(), "stack", 1);
  for (const auto& x : xs) expanded.push_back(x.unsqueeze(axis));
  return concat(expanded, axis);
}

// concat and stack of tensors given as a tuple, as a static graph takes
// symbolic values of different types (graph/ops.hpp): generic code may use
// the one spelling in both modes.
template <class X, class... R>
  requires is_tensor_v<X> && (std::is_same_v<X, R> && ...)
tensor<typename X::value_type> concat(const std::tuple<X, R...>& xs, std::int64_t axis = 0) {
  return std::apply([&](const auto&... x) { return concat(std::vector<X>{x...}, axis); }, xs);
}
template <class X, class... R>
  requires is_tensor_v<X> && (std::is_same_v<X, R> && ...)
tensor<typename X::value_type> stack(const std::tuple<X, R...>& xs, std::int64_t axis = 0) {
  return std::apply([&](const auto&... x) { return stack(std::vector<X>{x...}, axis); }, xs);
}

// Views of `chunks` pieces of equal size along the axis (the last may be
// shorter), as torch.chunk.
template <element T>
std::vector<tensor<T>> chunk(const tensor<T>& x, std::int64_t chunks, std::int64_t axis = 0) {
  if (chunks <= 0)
    throw value_error("tandem::chunk: the number of chunks must be positive (got " + std::to_string(chunks) + ")");
  const std::int64_t extent = x.shape(axis);
  return split(x, std::max<std::int64_t>(1, (extent + chunks - 1) / chunks), axis);
}

// Views of consecutive pieces of `size` along the axis (the last may be shorter).
template <element T>
std::vector<tensor<T>> split(const tensor<T>& x, std::int64_t size, std::int64_t axis = 0) {
  axis = detail::normalize_axis(axis, x.shape(), "split");
  if (size <= 0) throw value_error("tandem::split: piece size must be positive (got " + std::to_string(size) + ")");
  std::vector<tensor<T>> pieces;
  for (std::int64_t at = 0; at < x.shape()[axis]; at += size) pieces.push_back(x.slice(axis, at, at + size));
  return pieces;
}

// Views of pieces with the given sizes along the axis; they must add up to its extent.
template <element T>
std::vector<tensor<T>> split(const tensor<T>& x, const std::vector<std::int64_t>& sizes, std::int64_t axis = 0) {
  axis = detail::normalize_axis(axis, x.shape(), "split");
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0) throw value_error("tandem::split: piece sizes must not be negative (got " + std::to_string(s) + ")");
    total += s;
  }
  if (total != x.shape()[axis])
    throw shape_error("tandem::split: sizes " + to_string(std::span<const std::int64_t>(sizes)) +
                      " do not add up to extent " + std::to_string(x.shape()[axis]) + " of axis " +
                      std::to_string(axis) + " of shape " + to_string(x.shape()));
  std::vector<tensor<T>> pieces;
  std::int64_t at = 0;
  for (auto s : sizes) {
    pieces.push_back(x.slice(axis, at, at + s));
    at += s;
  }
  return pieces;
}

namespace detail {

// The index ops on a GPU: one kernel (kernels/cuda/index.hpp) over `space`,
// with the indices checked on the host and copied to the device, as
// int64. `index_strides` step through them over `space`.
template <class T>
void run_index_kernel(const char* op, const shape& space, std::int64_t axis, const std::vector<std::int64_t>& indices,
                      const dims& index_strides, const tensor<T>& in, tensor<T>& out, bool scatter) {
  const device where = out.device();
  runtime_for(where, op);
  auto kernel = cuda_index_slot<T>.load(std::memory_order_acquire);
  if (!kernel) throw_missing_kernel(op, "the index ops on these elements");
  const tensor<std::int64_t> on_device = from_vector(indices).to(where);
  const auto in_strides = in.strides(), out_strides = out.strides();
  kernel(where.index(), space, axis, on_device.device_data(), index_strides, in.device_data(),
         dims(in_strides.begin(), in_strides.end()), out.device_data(), dims(out_strides.begin(), out_strides.end()),
         scatter, op);
}

// A full-rank index's values (gather, scatter_add), row-major, checked
// against x's extent along the axis and made non-negative.
template <class I>
std::vector<std::int64_t> checked_indices(const tensor<I>& index, const shape& x_shape, std::int64_t axis,
                                          const char* op) {
  const std::vector<I> values = index.to_vector();
  std::vector<std::int64_t> out(values.size());
  for (std::size_t k = 0; k < values.size(); ++k) out[k] = checked_index(values[k], x_shape, axis, op);
  return out;
}

// A 1-d index's strides over a space of rank `rank`: it steps along the
// axis only.
inline dims along_axis(std::size_t rank, std::int64_t axis) {
  dims strides(rank, 0);
  strides[static_cast<std::size_t>(axis)] = 1;
  return strides;
}

}  // namespace detail

// The slices of x at `index` (a 1-d integer tensor) along the axis.
template <element T, element I>
tensor<T> index_select(const tensor<T>& x, std::int64_t axis, const tensor<I>& index) {
  detail::profile_range range(profile_category::op, "index_select");
  if (range.recording()) detail::describe_inputs(range, x, index);
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>,
                "tandem::index_select: the index must be an integer tensor");
  axis = detail::normalize_axis(axis, x.shape(), "index_select");
  if (index.dim() != 1)
    throw shape_error("tandem::index_select: the index must be 1-d, got shape " + to_string(index.shape()));
  std::vector<I> picks = index.to_vector();
  for (I& i : picks) i = static_cast<I>(detail::checked_index(i, x.shape(), axis, "index_select"));
  shape out_shape = x.shape();
  out_shape[axis] = static_cast<std::int64_t>(picks.size());
  std::vector<std::int64_t> rows(picks.begin(), picks.end());
  if (!x.device().is_cpu()) {
    tensor<T> out(out_shape, x.device());
    detail::run_index_kernel("index_select", out_shape, axis, rows, detail::along_axis(out_shape.size(), axis), x, out,
                             false);
    detail::record(index_select_op{x.shape(), axis, from_vector(rows)}, out, x);
    return out;
  }
  auto src = detail::split_around(x, axis);
  tensor<T> out(out_shape);
  std::int64_t count = static_cast<std::int64_t>(picks.size());
  detail::parallel_for(src.outer * count, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(src.inner, 1)),
                       [&](std::int64_t b, std::int64_t e) {
                         for (std::int64_t r = b; r < e; ++r) {
                           std::int64_t o = r / count, j = r % count;
                           const T* from = src.data.data() + (o * src.extent + picks[j]) * src.inner;
                           std::copy(from, from + src.inner, out.data() + r * src.inner);
                         }
                       });
  detail::record(index_select_op{x.shape(), axis, from_vector(rows)}, out, x);
  return out;
}

// A copy of x with the slices of `source` added at `index` along the axis:
// out.select(axis, index[j]) += source.select(axis, j).
template <element T, element I>
tensor<T> index_add(const tensor<T>& x, std::int64_t axis, const tensor<I>& index, const tensor<T>& source) {
  detail::profile_range range(profile_category::op, "index_add");
  if (range.recording()) detail::describe_inputs(range, x, index, source);
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "tandem::index_add: the index must be an integer tensor");
  axis = detail::normalize_axis(axis, x.shape(), "index_add");
  shape expected = x.shape();
  if (index.dim() == 1) expected[axis] = index.shape(0);
  if (index.dim() != 1 || source.shape() != expected)
    throw shape_error("tandem::index_add: a source of shape " + to_string(source.shape()) + " and an index of shape " +
                      to_string(index.shape()) + " do not fit a tensor of shape " + to_string(x.shape()) +
                      " along axis " + std::to_string(axis));
  const device where = detail::common_device("index_add", {detail::place_of(x), detail::place_of(source)});
  std::vector<I> picks = index.to_vector();
  for (I& i : picks) i = static_cast<I>(detail::checked_index(i, x.shape(), axis, "index_add"));
  std::vector<std::int64_t> rows(picks.begin(), picks.end());
  tensor<T> out = x.detach().clone();
  if (!where.is_cpu()) {
    detail::run_index_kernel("index_add", source.shape(), axis, rows, detail::along_axis(source.dim(), axis),
                             source.detach(), out, true);
    detail::record(index_add_op{axis, from_vector(rows)}, out, x, source);
    return out;
  }
  auto dst = detail::split_around(out, axis);
  auto src = detail::split_around(source.detach(), axis);
  for (std::int64_t o = 0; o < dst.outer; ++o)
    for (std::size_t j = 0; j < picks.size(); ++j) {
      T* to = out.data() + (o * dst.extent + picks[j]) * dst.inner;
      const T* from = src.data.data() + (o * src.extent + static_cast<std::int64_t>(j)) * src.inner;
      for (std::int64_t k = 0; k < dst.inner; ++k) to[k] += from[k];
    }
  detail::record(index_add_op{axis, from_vector(rows)}, out, x, source);
  return out;
}

// out[i][j][k] = x[i][index[i][j][k]][k] for axis 1 (likewise for any axis),
// as torch.gather: index has x's rank and fits inside x off the axis.
template <element T, element I>
tensor<T> gather(const tensor<T>& x, std::int64_t axis, const tensor<I>& index) {
  detail::profile_range range(profile_category::op, "gather");
  if (range.recording()) detail::describe_inputs(range, x, index);
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "tandem::gather: the index must be an integer tensor");
  axis = detail::normalize_axis(axis, x.shape(), "gather");
  bool fits = index.dim() == x.dim();
  for (std::int64_t i = 0; fits && i < x.dim(); ++i) fits = i == axis || index.shape()[i] <= x.shape()[i];
  if (!fits)
    throw shape_error("tandem::gather: index of shape " + to_string(index.shape()) +
                      " does not fit a tensor of shape " + to_string(x.shape()) + " along axis " + std::to_string(axis));
  if (!x.device().is_cpu()) {
    std::vector<std::int64_t> rows = detail::checked_indices(index, x.shape(), axis, "gather");
    tensor<T> out(index.shape(), x.device());
    detail::run_index_kernel("gather", index.shape(), axis, rows, detail::contiguous_strides(index.shape()), x, out,
                             false);
    detail::record(gather_op{x.shape(), axis, from_vector(rows).reshape(index.shape())}, out, x);
    return out;
  }
  tensor<T> out(index.shape());
  tensor<I> idx = index.contiguous();
  std::int64_t total = out.numel(), rank = x.dim();
  for (std::int64_t flat = 0; flat < total; ++flat) {
    std::int64_t rest = flat, offset = 0;
    for (std::int64_t d = rank; d-- > 0;) {
      std::int64_t i = rest % index.shape()[d];
      rest /= index.shape()[d];
      if (d == axis) i = detail::checked_index(idx.data()[flat], x.shape(), axis, "gather");
      offset += i * x.strides()[d];
    }
    out.data()[flat] = x.data()[offset];
  }
  detail::record(gather_op{x.shape(), axis, idx.template astype<std::int64_t>()}, out, x);
  return out;
}

// A copy of x with source[i][j][k] added at x[i][index[i][j][k]][k] (axis 1;
// likewise for any axis): the inverse of gather, as torch.scatter_add.
template <element T, element I>
tensor<T> scatter_add(const tensor<T>& x, std::int64_t axis, const tensor<I>& index, const tensor<T>& source) {
  detail::profile_range range(profile_category::op, "scatter_add");
  if (range.recording()) detail::describe_inputs(range, x, index, source);
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>,
                "tandem::scatter_add: the index must be an integer tensor");
  axis = detail::normalize_axis(axis, x.shape(), "scatter_add");
  bool fits = index.dim() == x.dim() && source.shape() == index.shape();
  for (std::int64_t i = 0; fits && i < x.dim(); ++i) fits = i == axis || index.shape()[i] <= x.shape()[i];
  if (!fits)
    throw shape_error("tandem::scatter_add: an index of shape " + to_string(index.shape()) + " and a source of shape " +
                      to_string(source.shape()) + " do not fit a tensor of shape " + to_string(x.shape()) +
                      " along axis " + std::to_string(axis));
  const device where = detail::common_device("scatter_add", {detail::place_of(x), detail::place_of(source)});
  tensor<T> out = x.detach().clone();
  if (!where.is_cpu()) {
    std::vector<std::int64_t> rows = detail::checked_indices(index, x.shape(), axis, "scatter_add");
    detail::run_index_kernel("scatter_add", index.shape(), axis, rows, detail::contiguous_strides(index.shape()),
                             source.detach(), out, true);
    detail::record(scatter_add_op{axis, from_vector(rows).reshape(index.shape())}, out, x, source);
    return out;
  }
  tensor<I> idx = index.contiguous();
  tensor<T> src = source.detach().contiguous();
  std::int64_t total = idx.numel(), rank = x.dim();
  for (std::int64_t flat = 0; flat < total; ++flat) {
    std::int64_t rest = flat, offset = 0;
    for (std::int64_t d = rank; d-- > 0;) {
      std::int64_t i = rest % index.shape()[d];
      rest /= index.shape()[d];
      if (d == axis) i = detail::checked_index(idx.data()[flat], x.shape(), axis, "scatter_add");
      offset += i * out.strides()[d];
    }
    out.data()[offset] += src.data()[flat];
  }
  detail::record(scatter_add_op{axis, idx.template astype<std::int64_t>()}, out, x, source);
  return out;
}

namespace detail {
// On a GPU, one_hot is a composition (ops/composed/softmax.hpp) that
// <tandem/cuda.hpp> installs here; the indices come checked.
template <class T, class I>
inline std::atomic<tensor<T> (*)(const tensor<I>& indices, std::int64_t classes)> cuda_one_hot_slot{nullptr};
}  // namespace detail

// indices [...] -> [..., classes] with a 1 at each index.
template <element T = std::int64_t, element I>
tensor<T> one_hot(const tensor<I>& indices, std::int64_t classes) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "tandem::one_hot: indices must be an integer tensor");
  if (classes < 0) throw value_error("tandem::one_hot: classes must not be negative (got " + std::to_string(classes) + ")");
  shape out_shape = indices.shape();
  out_shape.push_back(classes);
  if (!indices.device().is_cpu()) {
    for (I c : indices.to_vector())
      if (c < 0 || c >= classes)
        throw index_error("tandem::one_hot: index " + std::to_string(c) + " is outside [0, " +
                          std::to_string(classes) + ")");
    auto kernel = detail::cuda_one_hot_slot<T, I>.load(std::memory_order_acquire);
    if (!kernel) detail::throw_missing_kernel("one_hot", "one_hot of these elements");
    return kernel(indices.detach(), classes);
  }
  tensor<T> out = zeros<T>(out_shape);
  tensor<I> idx = indices.contiguous();
  for (std::int64_t i = 0; i < idx.numel(); ++i) {
    std::int64_t c = idx.data()[i];
    if (c < 0 || c >= classes)
      throw index_error("tandem::one_hot: index " + std::to_string(c) + " is outside [0, " + std::to_string(classes) +
                        ")");
    out.data()[i * classes + c] = T(1);
  }
  return out;
}

}  // namespace tandem
