#pragma once
// Reductions over any set of axes, with keepdims: sum mean prod max min
// argmax argmin, and the composites var std logsumexp. The driver arranges
// the axes so that one of the two kernel layouts applies without a copy
// where the strides allow it, and copies once where they do not.

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/capture/deferred_op.hpp"
#include "tandem/core/deferred.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/detail/math.hpp"
#include "tandem/kernels/cpu/reduce.hpp"
#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/ops/elementwise/arithmetic.hpp"
#include "tandem/ops/elementwise/compare.hpp"
#include "tandem/ops/elementwise/math.hpp"

namespace tandem {

// The axes a reduction runs over: one axis, a list, or all of them.
class axes : public detail::dims {
 public:
  axes(std::int64_t axis) : detail::dims{axis} {}
  axes(std::initializer_list<std::int64_t> list) : detail::dims(list) {}
  axes(std::span<const std::int64_t> list) : detail::dims(list.begin(), list.end()) {}
  // Not `axes a{}`: nvcc's front end reads that as axes(0), one axis.
  static axes all() { return axes(every_axis{}); }
  bool is_all() const { return all_; }

 private:
  struct every_axis {};
  explicit axes(every_axis) : all_(true) {}
  bool all_ = false;
};

namespace detail {

struct sum_reducer {
  template <class A> static constexpr A identity() { return A(0); }
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a + b; }
};
struct prod_reducer {
  template <class A> static constexpr A identity() { return A(1); }
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return a * b; }
};
struct max_reducer {
  template <class A> static constexpr A identity() {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  }
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::maximum(a, b); }
};
struct min_reducer {
  template <class A> static constexpr A identity() {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  template <class V> TANDEM_HOST_DEVICE V operator()(const V& a, const V& b) const { return detail::math::minimum(a, b); }
};

}  // namespace detail

// Sums and products of integers and bools are int64, as in PyTorch; of
// floats, their own type (16-bit floats accumulate in float: compute_t).
template <element T>
using accumulate_t = std::conditional_t<is_floating_v<T>, T, std::int64_t>;

namespace detail {

// Which axes a reduction folds, and the shape it leaves.
struct reduction_shape {
  dims kept_order, reduced_order;
  std::int64_t kept = 1, length = 1;
  shape out_shape;
};

// The reduction of shape `in` over `ax`; `op` names the caller in errors.
reduction_shape plan_reduction(const shape& in, const axes& ax, bool keepdims, const char* op);

// x's data laid out for a kernel: rows means [kept..., reduced...] is
// contiguous (K rows of M), columns that [reduced..., kept...] is, middle
// that x itself is contiguous with its kept axes in one run between reduced
// ones ([outer, K, inner]: a batch norm's [N, C, H, W] over {0, 2, 3}).
enum class reduction_layout { rows, columns, middle };

template <class T>
struct arranged_reduction {
  reduction_shape plan;
  tensor<T> source;
  reduction_layout layout;
  std::int64_t outer = 1, inner = 1;  // for middle
};

template <class T>
arranged_reduction<T> arrange(const tensor<T>& x, const axes& ax, bool keepdims, const char* op,
                              bool rows_only = false) {
  reduction_shape plan = plan_reduction(x.shape(), ax, keepdims, op);
  dims rows_order = plan.kept_order, columns_order = plan.reduced_order;
  for (auto i : plan.reduced_order) rows_order.push_back(i);
  for (auto i : plan.kept_order) columns_order.push_back(i);
  tensor<T> as_rows = x.permute(std::span<const std::int64_t>(rows_order.data(), rows_order.size()));
  if (as_rows.is_contiguous()) return {plan, as_rows, reduction_layout::rows};
  tensor<T> as_columns = x.permute(std::span<const std::int64_t>(columns_order.data(), columns_order.size()));
  if (!rows_only && as_columns.is_contiguous()) return {plan, as_columns, reduction_layout::columns};
  if (!rows_only && x.is_contiguous() && !plan.kept_order.empty() &&
      plan.kept_order.back() - plan.kept_order[0] + 1 == static_cast<std::int64_t>(plan.kept_order.size())) {
    arranged_reduction<T> middle{plan, x, reduction_layout::middle};
    for (std::int64_t i = 0; i < plan.kept_order[0]; ++i) middle.outer *= x.shape(i);
    for (std::int64_t i = plan.kept_order.back() + 1; i < x.dim(); ++i) middle.inner *= x.shape(i);
    return middle;
  }
  return {plan, as_rows.contiguous(), reduction_layout::rows};
}

inline void require_elements(const reduction_shape& plan, const shape& in, const char* op) {
  if (plan.length == 0 && plan.kept > 0)
    throw value_error(std::string("tandem::") + op + ": cannot reduce over zero elements (shape " + to_string(in) +
                      ")");
}

template <class Reducer, class Finish>
struct reduction_state {
  Reducer reducer;
  Finish finish;
};

template <class A, class R, class T, class Reducer, class Finish>
void run_deferred_rows(const void* state, const value_spans& input, std::int64_t rows, std::int64_t length,
                       void* out) {
  const auto& s = *static_cast<const reduction_state<Reducer, Finish>*>(state);
  reduce_rows_from<Reducer, A>(s.reducer, array_source<T>{nullptr, &input}, rows, length, static_cast<R*>(out),
                               s.finish);
}

template <class A, class R, class T, class Reducer, class Finish>
void run_deferred_columns(const void* state, const value_spans& input, std::int64_t columns, std::int64_t length,
                          void* out) {
  const auto& s = *static_cast<const reduction_state<Reducer, Finish>*>(state);
  reduce_columns_from<Reducer, A>(s.reducer, array_source<T>{nullptr, &input}, columns, length,
                                  static_cast<R*>(out), s.finish);
}

// Rows shorter than this are reduced after their region has run: the
// region would be entered once per row. Likewise columns fewer than this:
// a column reduction enters the region once per row of its input, over the
// columns a thread sums.
inline constexpr std::int64_t shortest_deferred_row = 4096;
inline constexpr std::int64_t fewest_deferred_columns = 256;

// Hands a reduction of a pending value (over rows, or over columns: the
// leading axes) to the capture that computes it, so that the value is
// reduced as its region computes it, span by span, instead of written and
// read back; false when it must run now. The reduction runs the eager
// kernel's own loop (reduce_rows_from, reduce_columns_from) over the same
// blocks in the same order, so its result has the same bits.
template <class A, class R, class Reducer, class T, class Finish>
bool defer_pending_reduction(deferred_work& work, const Reducer& r, const arranged_reduction<T>& a,
                             const Finish& finish, const char* op, tensor<R>& out) {
  const tensor<T>& x = a.source;
  if (x.storage()->producer() != &work || x.offset() != 0) return false;
  decltype(deferred_reduction::run) run = nullptr;
  if (a.layout == reduction_layout::rows && a.plan.length >= shortest_deferred_row)
    run = &run_deferred_rows<A, R, T, Reducer, Finish>;
  else if (a.layout == reduction_layout::columns && a.plan.kept >= fewest_deferred_columns)
    run = &run_deferred_columns<A, R, T, Reducer, Finish>;
  if (!run) return false;
  const deferred_reduction reduction{op, run,
                                     make_cached<reduction_state<Reducer, Finish>>(reduction_state<Reducer, Finish>{r, finish}),
                                     a.plan.kept, a.plan.length, sizeof(R)};
  std::shared_ptr<storage> pending = work.defer_reduction(reduction, x.storage());
  if (!pending) return false;
  out = tensor<R>(std::move(pending), a.plan.out_shape, contiguous_strides(a.plan.out_shape), 0);
  return true;
}

inline constexpr auto unchanged = [](std::int64_t) { return [](auto v) { return v; }; };
using unchanged_t = std::remove_cvref_t<decltype(unchanged)>;

// A mean's finish: the total over the count.
template <class A>
struct divide_by_count {
  auto operator()(std::int64_t count) const {
    return [count](A total) { return total / static_cast<A>(count); };
  }
};

// A reduction as a GPU kernel reads its input: the kept and the reduced
// axes with x's strides along them (no copy, whatever the axes).
struct strided_reduction {
  reduction_shape plan;
  shape kept_shape, reduced_shape;
  dims kept_strides, reduced_strides;
};

inline strided_reduction split_axes(const shape& extent, std::span<const std::int64_t> strides, const axes& ax, bool keepdims,
                                    const char* op) {
  strided_reduction s{plan_reduction(extent, ax, keepdims, op), {}, {}, {}, {}};
  for (std::int64_t axis : s.plan.kept_order) {
    s.kept_shape.push_back(extent[axis]);
    s.kept_strides.push_back(strides[axis]);
  }
  for (std::int64_t axis : s.plan.reduced_order) {
    s.reduced_shape.push_back(extent[axis]);
    s.reduced_strides.push_back(strides[axis]);
  }
  return s;
}

// The reduction on the GPU that holds x (kernels/cuda/reduce.hpp).
template <class A, class R, class Reducer, class T>
tensor<R> device_reduce(const tensor<T>& x, const axes& ax, bool keepdims, const Reducer& r, bool divide,
                        const char* op) {
  strided_reduction s = split_axes(x.shape(), x.strides(), ax, keepdims, op);
  runtime_for(x.device(), op);
  auto kernel = cuda_reduce_slot<A, R, T, Reducer>.load(std::memory_order_acquire);
  if (!kernel) throw_missing_kernel(op, "this reduction of these elements");
  tensor<R> out(s.plan.out_shape, x.device());
  kernel(r, x.device().index(), x.device_data(), s.kept_shape, s.kept_strides, s.reduced_shape, s.reduced_strides,
         out.device_data(), divide, op);
  return out;
}

// Runs `reducer` over the axes; finish_for(M) gives the function applied to
// each accumulated value (M is the number of elements folded into it).
template <class A, class R, class Reducer, class T, class FinishFor>
tensor<R> reduce(const tensor<T>& x, const axes& ax, bool keepdims, const Reducer& r, const FinishFor& finish_for,
                 const char* op, bool needs_elements = false) {
  if (needs_elements) require_elements(plan_reduction(x.shape(), ax, keepdims, op), x.shape(), op);
  if (!x.device().is_cpu()) [[unlikely]] {
    static_assert(std::is_same_v<FinishFor, unchanged_t> || std::is_same_v<FinishFor, divide_by_count<A>>,
                  "tandem: a GPU reduction finishes its values unchanged or divided by their count");
    profile_range range(profile_category::op, op);
    tensor<R> out = device_reduce<A, R>(x, ax, keepdims, r, std::is_same_v<FinishFor, divide_by_count<A>>, op);
    if (range.recording()) describe_op(range, out, x);
    return out;
  }
  arranged_reduction<T> a = arrange(x, ax, keepdims, op);
  auto finish = finish_for(a.plan.length);
  if (deferred_work* work = active_deferred_work()) [[unlikely]] {
    tensor<R> pending;
    if (defer_pending_reduction<A>(*work, r, a, finish, op, pending)) return pending;
  }
  // (Not before: a reduction deferred into a captured region runs there.)
  profile_range range(profile_category::op, op);
  tensor<R> out(a.plan.out_shape);
  switch (a.layout) {
    case reduction_layout::rows:
      reduce_rows<Reducer, A>(r, a.source.data(), a.plan.kept, a.plan.length, out.data(), finish);
      break;
    case reduction_layout::columns:
      reduce_columns<Reducer, A>(r, a.source.data(), a.plan.kept, a.plan.length, out.data(), finish);
      break;
    case reduction_layout::middle:
      reduce_middle<Reducer, A>(r, a.source.data(), a.outer, a.plan.kept, a.inner, out.data(), finish);
      break;
  }
  if (range.recording()) describe_op(range, out, x);
  return out;
}

template <bool Largest, class T>
tensor<std::int64_t> arg_extreme(const tensor<T>& x, const axes& ax, bool keepdims, const char* op) {
  profile_range range(profile_category::op, op);
  require_elements(plan_reduction(x.shape(), ax, keepdims, op), x.shape(), op);
  if (!x.device().is_cpu()) [[unlikely]] {
    strided_reduction s = split_axes(x.shape(), x.strides(), ax, keepdims, op);
    runtime_for(x.device(), op);
    auto kernel = cuda_arg_extreme_slot<T, Largest>.load(std::memory_order_acquire);
    if (!kernel) throw_missing_kernel(op, "argmax or argmin of these elements");
    tensor<std::int64_t> out(s.plan.out_shape, x.device());
    kernel(x.device().index(), x.device_data(), s.kept_shape, s.kept_strides, s.reduced_shape, s.reduced_strides,
           out.device_data(), op);
    return out;
  }
  arranged_reduction<T> a = arrange(x, ax, keepdims, op, true);
  tensor<std::int64_t> out(a.plan.out_shape);
  arg_extreme_rows<Largest>(a.source.data(), a.plan.kept, a.plan.length, out.data());
  if (range.recording()) describe_op(range, out, x);
  return out;
}

}  // namespace detail

namespace detail {
// The gradient of a reduction spread back over the axes it folded: g gets
// its reduced axes back (as 1) and is broadcast to the input's shape.
template <class G>
auto unreduce(const G& g, const shape& from, const axes& ax, bool keepdims) {
  if (keepdims) return g.expand(from);
  return g.reshape(plan_reduction(from, ax, true, "unreduce").out_shape).expand(from);
}
}  // namespace detail

struct sum_op {
  static constexpr const char* name = "sum";
  static constexpr bool saves_inputs = false;
  shape from;
  axes ax;
  bool keepdims;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const { return detail::unreduce(g, from, ax, keepdims); }
};
struct mean_op {
  static constexpr const char* name = "mean";
  static constexpr bool saves_inputs = false;
  shape from;
  axes ax;
  bool keepdims;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    auto count = static_cast<double>(detail::plan_reduction(from, ax, keepdims, "mean").length);
    return detail::unreduce(g / count, from, ax, keepdims);
  }
};
// d prod / d x_i is the product of the others: y / x_i where x_i != 0; for
// the one zero of a slice, the product of the rest; 0 when a slice has two.
struct prod_op {
  static constexpr const char* name = "prod";
  static constexpr bool saves_output = true;
  axes ax;
  bool keepdims;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y& y, const X& x) const {
    auto is_zero = x == 0;
    auto others = prod(where(is_zero, 1, x), ax, true).expand(x.shape());
    auto zeros = sum(is_zero, ax, true).expand(x.shape());
    auto at_zero = where(zeros == 1, others, 0);
    return detail::unreduce(g, x.shape(), ax, keepdims) *
           where(is_zero, at_zero, detail::unreduce(y, x.shape(), ax, keepdims) / x);
  }
};
// max and min: the gradient is shared equally by the elements that tie for the extreme.
struct extreme_op {
  static constexpr const char* name = "max";
  static constexpr bool saves_output = true;
  axes ax;
  bool keepdims;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y& y, const X& x) const {
    using T = typename X::value_type;
    auto hits = (x == detail::unreduce(y, x.shape(), ax, keepdims)).template astype<T>();
    auto ties = sum(hits, ax, true).expand(x.shape());
    return detail::unreduce(g, x.shape(), ax, keepdims) * hits / ties;
  }
};

template <element T>
tensor<accumulate_t<T>> sum(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  using A = accumulate_t<T>;
  auto out = detail::reduce<compute_t<A>, A>(x, ax, keepdims, detail::sum_reducer{}, detail::unchanged, "sum");
  detail::record(sum_op{x.shape(), ax, keepdims}, out, x);
  return out;
}

// x summed over the axes along which it was broadcast from `target`: the
// inverse of expand, which every gradient of a broadcasting op goes through.
template <element T>
tensor<accumulate_t<T>> sum_to(const tensor<T>& x, const shape& target) {
  if (x.shape() == target) return x;
  if (!detail::broadcasts_to(target, x.shape()))
    throw shape_error("tandem::sum_to: a tensor of shape " + to_string(x.shape()) + " is not a broadcast of shape " +
                      to_string(target));
  std::size_t lead = x.shape().size() - target.size();
  detail::dims folded;
  for (std::size_t i = 0; i < x.shape().size(); ++i)
    if (i < lead || (target[i - lead] == 1 && x.shape()[i] != 1)) folded.push_back(static_cast<std::int64_t>(i));
  return sum(x, axes(std::span<const std::int64_t>(folded.data(), folded.size())), true).reshape(target);
}

template <element T>
tensor<floating_t<T>> mean(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  using A = floating_t<T>;
  auto out = detail::reduce<compute_t<A>, A>(x, ax, keepdims, detail::sum_reducer{},
                                             detail::divide_by_count<compute_t<A>>{}, "mean");
  detail::record(mean_op{x.shape(), ax, keepdims}, out, x);
  return out;
}

template <element T>
tensor<accumulate_t<T>> prod(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  using A = accumulate_t<T>;
  auto out = detail::reduce<compute_t<A>, A>(x, ax, keepdims, detail::prod_reducer{}, detail::unchanged, "prod");
  detail::record(prod_op{ax, keepdims}, out, x);
  return out;
}

template <element T>
tensor<T> max(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  auto out = detail::reduce<compute_t<T>, T>(x, ax, keepdims, detail::max_reducer{}, detail::unchanged, "max", true);
  detail::record(extreme_op{ax, keepdims}, out, x);
  return out;
}

template <element T>
tensor<T> min(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  auto out = detail::reduce<compute_t<T>, T>(x, ax, keepdims, detail::min_reducer{}, detail::unchanged, "min", true);
  detail::record(extreme_op{ax, keepdims}, out, x);
  return out;
}

// Index of the first largest element along the axes (over the flattened
// axes, row-major, when there are several).
template <element T>
tensor<std::int64_t> argmax(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::arg_extreme<true>(x, ax, keepdims, "argmax");
}
template <element T>
tensor<std::int64_t> argmin(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::arg_extreme<false>(x, ax, keepdims, "argmin");
}

// Variance with Bessel's correction by default (correction = 1), as torch.var.
template <element T>
tensor<floating_t<T>> var(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false,
                          std::int64_t correction = 1) {
  using F = floating_t<T>;
  std::int64_t length = detail::plan_reduction(x.shape(), ax, keepdims, "var").length;
  auto centered = sub(x, mean(x, ax, true));
  F divisor = static_cast<F>(std::max<std::int64_t>(length - correction, 0));
  return div(sum(square(centered), ax, keepdims), divisor);
}

template <element T>
tensor<floating_t<T>> std(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false,
                          std::int64_t correction = 1) {
  return sqrt(var(x, ax, keepdims, correction));
}

// log(sum(exp(x))) without overflow: exact at +-inf, -inf for an all -inf slice.
template <element T>
tensor<floating_t<T>> logsumexp(const tensor<T>& x, const axes& ax = axes::all(), bool keepdims = false) {
  using F = floating_t<T>;
  tensor<F> xf = x.template astype<F>();
  tensor<F> peak = max(xf.detach(), ax, true);
  // The shift cancels out of the value, so it is a constant for the gradient.
  tensor<F> shift = where(isfinite(peak), peak, F(0)).detach();
  tensor<F> result = add(log(sum(exp(sub(xf, shift)), ax, true)), shift);
  if (keepdims) return result;
  return result.reshape(detail::plan_reduction(x.shape(), ax, false, "logsumexp").out_shape);
}

}  // namespace tandem

#if TANDEM_HEADER_ONLY
#include "tandem/ops/reduce-inl.hpp"
#endif
