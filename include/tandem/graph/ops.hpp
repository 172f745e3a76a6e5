#pragma once
// The non-elementwise ops on symbolic values, under the same names as on
// tensors: reductions, matmul, softmax and friends, and the shape ops. Each
// becomes an apply node that runs the op's eager kernel (and its eager
// derivative rule) on materialized operands; elementwise ops need nothing
// here, they reach the graph through detail::map.

#include <cstdint>
#include <utility>
#include <vector>

#include "tandem/graph/trace.hpp"
#include "tandem/ops/attention.hpp"
#include "tandem/ops/conv.hpp"
#include "tandem/ops/elementwise/activation.hpp"
#include "tandem/ops/linalg.hpp"
#include "tandem/ops/mask.hpp"
#include "tandem/ops/normalization.hpp"
#include "tandem/ops/pool.hpp"
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/sampling.hpp"
#include "tandem/ops/shape.hpp"
#include "tandem/ops/softmax.hpp"

namespace tandem {
namespace detail {

template <class Fn, class... N>
auto apply_eager(const char* name, Fn fn, const sym<N>&... x) {
  using result = std::invoke_result_t<Fn, const tensor<typename N::value_type>&...>;
  return symbolic_apply<typename result::value_type>(name, std::move(fn), x...);
}

template <class X>
auto operand_symbol(const X& x) {
  return as_symbol<void>(x);
}

// fn(x...) now on tensors, or, when any operand is symbolic, a node of the
// static graph that runs fn on its operands' values (fn records its own
// eager backward there). For ops whose work or side effects depend on
// runtime state (a layer's mode, a random draw), and for compositions that
// need shapes a symbolic value does not have.
template <class Fn, class... X>
auto call_or_trace(const char* name, Fn fn, const X&... x) {
  if constexpr (any_symbolic<X...>) return apply_eager(name, std::move(fn), operand_symbol(x)...);
  else return fn(x...);
}

}  // namespace detail

namespace detail {

// The shape rules of the ops below (graph/trace_shape.hpp): what shape each
// gives operands of the shapes given, for a value's shape() while tracing.
inline shape reduced_shape(const shape& in, const axes& ax, bool keepdims) {
  std::vector<bool> reduced(in.size(), ax.is_all());
  if (!ax.is_all())
    for (std::int64_t a : ax) reduced[static_cast<std::size_t>(normalize_axis(a, in, "reduce"))] = true;
  shape out;
  for (std::size_t a = 0; a < in.size(); ++a)
    if (!reduced[a]) out.push_back(in[a]);
    else if (keepdims) out.push_back(1);
  return out;
}
inline shape with_extent(shape in, std::int64_t axis, std::int64_t extent, const char* op) {
  in[normalize_axis(axis, in, op)] = extent;
  return in;
}
inline shape matmul_shape(shape a, shape b) {
  if (a.empty() || b.empty()) throw shape_error("tandem::matmul: operands must have at least one axis");
  const bool row = a.size() == 1, column = b.size() == 1;
  if (row) a.insert(0, 1);
  if (column) b.push_back(1);
  shape out = broadcast_shapes(shape(a.begin(), a.end() - 2), shape(b.begin(), b.end() - 2), "matmul");
  if (!row) out.push_back(a[a.size() - 2]);
  if (!column) out.push_back(b.back());
  return out;
}

// sum and mean: besides their eager kernel, the executor can run them inside
// the loop of the elementwise group that feeds them (structure.hpp).
template <bool Mean>
struct summation {
  static constexpr bool is_mean = Mean;
  axes ax;
  bool keepdims;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    if constexpr (Mean) return mean(t, ax, keepdims);
    else return sum(t, ax, keepdims);
  }
  shape result_shape(const shape& in) const { return reduced_shape(in, ax, keepdims); }
};
template <bool Mean>
inline constexpr bool is_summation<summation<Mean>> = true;

// matmul: besides its eager kernel, the executor can run the elementwise
// group that reads the product inside the GEMM, as its epilogue.
struct matrix_product {
  template <class A, class B>
  auto operator()(const tensor<A>& a, const tensor<B>& b) const {
    return matmul(a, b);
  }
  shape result_shape(const shape& a, const shape& b) const { return matmul_shape(a, b); }
};
template <>
inline constexpr bool is_matrix_product<matrix_product> = true;

// max and min; softmax and log_softmax along an axis; transpose and
// permute: functions of a type of their own, so that a sharded graph
// (dist/shard.hpp) knows what they do with a cut axis.
template <bool Max>
struct extreme_reduction {
  axes ax;
  bool keepdims;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    if constexpr (Max) return max(t, ax, keepdims);
    else return min(t, ax, keepdims);
  }
  shape result_shape(const shape& in) const { return reduced_shape(in, ax, keepdims); }
};
template <bool Log>
struct softmax_function {
  std::int64_t axis;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    if constexpr (Log) return log_softmax(t, axis);
    else return softmax(t, axis);
  }
  shape result_shape(const shape& in) const { return in; }
};
struct axes_swap {
  std::int64_t first, second;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return t.transpose(first, second);
  }
  shape result_shape(shape in) const {
    std::swap(in[normalize_axis(first, in, "transpose")], in[normalize_axis(second, in, "transpose")]);
    return in;
  }
};
struct axes_order {
  std::vector<std::int64_t> order;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return t.permute(order);
  }
  shape result_shape(const shape& in) const {
    shape out;
    for (std::int64_t a : order) out.push_back(in[normalize_axis(a, in, "permute")]);
    return out;
  }
};

// The shape ops that keep the elements' order (reshape, flatten, squeeze,
// unsqueeze): each also says what shape it gives a tensor of shape `in`.
struct shape_change {
  shape target;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return t.reshape(target);
  }
  shape result_shape(const shape& in) const {
    shape out = target;
    std::int64_t known = 1, unknown = -1;
    for (std::size_t a = 0; a < out.size(); ++a)
      if (out[a] == -1) unknown = static_cast<std::int64_t>(a);
      else known *= out[a];
    if (unknown >= 0 && known != 0) out[unknown] = numel(in) / known;
    return out;
  }
};
struct flatten_from {
  std::int64_t start;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return flatten(t, start);
  }
  // As flatten reshapes: the axes before `start`, then -1.
  shape result_shape(const shape& in) const {
    const std::int64_t first = normalize_axis(start, in, "flatten");
    shape merged(in.begin(), in.begin() + first);
    merged.push_back(-1);
    return shape_change{merged}.result_shape(in);
  }
};
template <bool Insert>
struct unit_axis {
  std::int64_t axis;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    if constexpr (Insert) return t.unsqueeze(axis);
    else return t.squeeze(axis);
  }
  shape result_shape(const shape& in) const {
    shape out = in;
    if constexpr (Insert) {
      out.insert(normalize_axis(axis, in, "unsqueeze", 1), 1);
    } else {
      const std::int64_t a = normalize_axis(axis, in, "squeeze");
      if (in[a] == 1) out.erase(a);
    }
    return out;
  }
};


// The other ops a graph runs through their eager kernels, as function
// objects with names rather than lambdas: a fused group's type names the
// graph it belongs to, and nvcc refuses a lambda's closure type among a
// kernel's template arguments, so a graph holding a lambda could not be
// compiled for the GPU (tandem::cuda::compile).
struct product_over {
  axes ax;
  bool keepdims;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return prod(t, ax, keepdims);
  }
  shape result_shape(const shape& in) const { return reduced_shape(in, ax, keepdims); }
};
template <bool Max>
struct extreme_index {
  axes ax;
  bool keepdims;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    if constexpr (Max) return argmax(t, ax, keepdims);
    else return argmin(t, ax, keepdims);
  }
  shape result_shape(const shape& in) const { return reduced_shape(in, ax, keepdims); }
};
struct variance_over {
  axes ax;
  bool keepdims;
  std::int64_t correction;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return var(t, ax, keepdims, correction);
  }
  shape result_shape(const shape& in) const { return reduced_shape(in, ax, keepdims); }
};
struct logsumexp_over {
  axes ax;
  bool keepdims;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return logsumexp(t, ax, keepdims);
  }
  shape result_shape(const shape& in) const { return reduced_shape(in, ax, keepdims); }
};
template <bool Sum>
struct shape_broadcast {
  shape target;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    if constexpr (Sum) return sum_to(t, target);
    else return broadcast_to(t, target);
  }
  shape result_shape(const shape&) const { return target; }
};
struct convolution {
  conv2d_options options;
  template <class T, class K>
  auto operator()(const tensor<T>& x, const tensor<K>& w) const {
    return conv2d(x, w, options);
  }
  template <class T, class K, class B>
  auto operator()(const tensor<T>& x, const tensor<K>& w, const tensor<B>& bias) const {
    return conv2d(x, w, bias, options);
  }
};
struct batch_normalization {
  double eps;
  template <class T, class W, class B>
  auto operator()(const tensor<T>& x, const tensor<W>& weight, const tensor<B>& bias) const {
    return batch_normalize(x, weight, bias, eps);
  }
  shape result_shape(const shape& x, const shape&, const shape&) const { return x; }
};
template <bool Max>
struct window_pooling {
  pool2d_options options;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    if constexpr (Max) return max_pool2d(t, options);
    else return avg_pool2d(t, options);
  }
};
struct cross_entropy_of {
  reduction how;
  template <class L, class I>
  auto operator()(const tensor<L>& logits, const tensor<I>& target) const {
    return cross_entropy(logits, target, how);
  }
  shape result_shape(const shape& logits, const shape&) const {
    return how == reduction::none ? shape{logits.empty() ? 0 : logits[0]} : shape{};
  }
};
template <bool Gather>
struct index_read {
  std::int64_t axis;
  template <class T, class I>
  auto operator()(const tensor<T>& t, const tensor<I>& index) const {
    if constexpr (Gather) return gather(t, axis, index);
    else return index_select(t, axis, index);
  }
  shape result_shape(const shape& in, const shape& index) const {
    if constexpr (Gather) return index;
    else return with_extent(in, axis, numel(index), "index_select");
  }
};
template <bool Scatter>
struct index_accumulation {
  std::int64_t axis;
  template <class T, class I, class S>
  auto operator()(const tensor<T>& t, const tensor<I>& index, const tensor<S>& source) const {
    if constexpr (Scatter) return scatter_add(t, axis, index, source);
    else return index_add(t, axis, index, source);
  }
  shape result_shape(const shape& in, const shape&, const shape&) const { return in; }
};
template <class T>
struct one_hot_encoding {
  std::int64_t classes;
  template <class I>
  auto operator()(const tensor<I>& index) const {
    return one_hot<T>(index, classes);
  }
  shape result_shape(shape index) const {
    index.push_back(classes);
    return index;
  }
};
// A layer whose work depends on its state (its mode, its generator), as
// the node that runs it (nn::dropout, nn::batch_norm). The layer's type is
// erased: a node type that named an nn type would bring namespace
// tandem::nn into the argument-dependent lookup of every call on the
// graph's values, and `cross_entropy(model(x), y)` would be ambiguous
// between tandem's and tandem::nn's.
template <class T>
struct layer_call {
  const void* layer;
  tensor<T> (*run)(const void* layer, const tensor<T>& x);
  tensor<T> operator()(const tensor<T>& x) const { return run(layer, x); }
  // The layers run this way (dropout, batch norm) keep their input's shape.
  shape result_shape(const shape& in) const { return in; }
};
// A layer_call whose layer has parameters (nn::batch_norm), which it lists
// (holds_parameters).
template <class T>
struct parameterized_layer_call : layer_call<T> {
  std::vector<tensor<T>> (*parameters)(const void* layer);
  std::vector<tensor<T>> held_parameters() const { return parameters(this->layer); }
};
struct strided_take {
  std::int64_t axis, first, count, step;
  template <class T>
  auto operator()(const tensor<T>& t) const {
    return t.take(axis, first, count, step);
  }
  shape result_shape(const shape& in) const { return with_extent(in, axis, count, "take"); }
};
struct attention_of {
  attention_options options;
  template <class T>
  auto operator()(const tensor<T>& q, const tensor<T>& k, const tensor<T>& v) const {
    return scaled_dot_product_attention(q, k, v, options);
  }
  shape result_shape(const shape& q, const shape& k, const shape& v) const {
    shape out = broadcast_shapes(shape(q.begin(), q.end() - 2), shape(k.begin(), k.end() - 2), "attention");
    out = broadcast_shapes(out, shape(v.begin(), v.end() - 2), "attention");
    out.push_back(q[q.size() - 2]);
    out.push_back(v.back());
    return out;
  }
};
}  // namespace detail

template <class N>
auto sum(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("sum", detail::summation<false>{ax, keepdims}, x);
}
template <class N>
auto mean(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("mean", detail::summation<true>{ax, keepdims}, x);
}
template <class N>
auto prod(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("prod", detail::product_over{ax, keepdims}, x);
}
template <class N>
auto max(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("max", detail::extreme_reduction<true>{ax, keepdims}, x);
}
template <class N>
auto min(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("min", detail::extreme_reduction<false>{ax, keepdims}, x);
}
template <class N>
auto argmax(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("argmax", detail::extreme_index<true>{ax, keepdims}, x);
}
template <class N>
auto argmin(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("argmin", detail::extreme_index<false>{ax, keepdims}, x);
}
template <class N>
auto var(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false, std::int64_t correction = 1) {
  return detail::apply_eager("var", detail::variance_over{ax, keepdims, correction}, x);
}
template <class N>
auto logsumexp(const sym<N>& x, const axes& ax = axes::all(), bool keepdims = false) {
  return detail::apply_eager("logsumexp", detail::logsumexp_over{ax, keepdims}, x);
}
template <class N>
auto sum_to(const sym<N>& x, const shape& target) {
  return detail::apply_eager("sum_to", detail::shape_broadcast<true>{target}, x);
}
template <class N>
auto broadcast_to(const sym<N>& x, const shape& target) {
  return detail::apply_eager("broadcast_to", detail::shape_broadcast<false>{target}, x);
}
template <class N>
auto softmax(const sym<N>& x, std::int64_t axis = -1) {
  return detail::apply_eager("softmax", detail::softmax_function<false>{axis}, x);
}
template <class N>
auto log_softmax(const sym<N>& x, std::int64_t axis = -1) {
  return detail::apply_eager("log_softmax", detail::softmax_function<true>{axis}, x);
}

template <class A, class B>
  requires detail::any_symbolic<A, B> && detail::has_elements<A> && detail::has_elements<B>
auto matmul(const A& a, const B& b) {
  return detail::apply_eager("matmul", detail::matrix_product{}, detail::operand_symbol(a), detail::operand_symbol(b));
}

template <class X, class W>
  requires detail::any_symbolic<X, W> && detail::has_elements<X> && detail::has_elements<W>
auto conv2d(const X& x, const W& w, const conv2d_options& options = {}) {
  return detail::apply_eager("conv2d", detail::convolution{options}, detail::operand_symbol(x),
                             detail::operand_symbol(w));
}
template <class X, class W, class B>
  requires detail::any_symbolic<X, W, B> && detail::has_elements<X> && detail::has_elements<W> &&
           detail::has_elements<B>
auto conv2d(const X& x, const W& w, const B& bias, const conv2d_options& options = {}) {
  return detail::apply_eager(
      "conv2d", detail::convolution{options}, detail::operand_symbol(x), detail::operand_symbol(w), detail::operand_symbol(bias));
}

template <class X, class W, class B>
  requires detail::any_symbolic<X, W, B> && detail::has_elements<X> && detail::has_elements<W> &&
           detail::has_elements<B>
auto batch_normalize(const X& x, const W& weight, const B& bias, double eps) {
  return detail::apply_eager(
      "batch_normalize", detail::batch_normalization{eps}, detail::operand_symbol(x), detail::operand_symbol(weight), detail::operand_symbol(bias));
}

// Max pooling of a relu is pooled first: the maximum of a window's relus is
// the relu of its maximum, and both gradients reach the same pixel with the
// same value (relu's gradient is 0 at a window whose maximum is not
// positive, either way; a NaN wins both ways). The same bits, with relu and
// its gradient run on a quarter of the pixels under 2x2 pooling (a CNN's
// conv, batch norm, relu, pool). A relu that something else reads as well
// is still computed whole for that reader.
template <class N>
auto max_pool2d(const sym<N>& x, const pool2d_options& options = {}) {
  if constexpr (detail::is_map_of<relu_op, N>)
    return relu(max_pool2d(detail::operand_at<0>(x.node().children), options));
  else return detail::apply_eager("max_pool2d", detail::window_pooling<true>{options}, x);
}
template <class N>
auto avg_pool2d(const sym<N>& x, const pool2d_options& options = {}) {
  return detail::apply_eager("avg_pool2d", detail::window_pooling<false>{options}, x);
}

template <class L, class Target>
  requires detail::any_symbolic<L, Target> && detail::has_elements<L> && detail::has_elements<Target>
auto cross_entropy(const L& logits, const Target& target, reduction how = reduction::mean) {
  return detail::apply_eager("cross_entropy", detail::cross_entropy_of{how}, detail::operand_symbol(logits),
                             detail::operand_symbol(target));
}

// The index ops, with any of their tensors symbolic (an index may be a
// captured tensor, or computed in the graph: argmax, say).
template <class X, class I>
  requires detail::any_symbolic<X, I> && detail::has_elements<X> && detail::has_elements<I>
auto index_select(const X& x, std::int64_t axis, const I& index) {
  return detail::apply_eager(
      "index_select", detail::index_read<false>{axis}, detail::operand_symbol(x), detail::operand_symbol(index));
}
template <class X, class I>
  requires detail::any_symbolic<X, I> && detail::has_elements<X> && detail::has_elements<I>
auto gather(const X& x, std::int64_t axis, const I& index) {
  return detail::apply_eager("gather", detail::index_read<true>{axis}, detail::operand_symbol(x),
                             detail::operand_symbol(index));
}
template <class X, class I, class S>
  requires detail::any_symbolic<X, I, S> && detail::has_elements<X> && detail::has_elements<I> &&
           detail::has_elements<S>
auto index_add(const X& x, std::int64_t axis, const I& index, const S& source) {
  return detail::apply_eager(
      "index_add", detail::index_accumulation<false>{axis}, detail::operand_symbol(x), detail::operand_symbol(index), detail::operand_symbol(source));
}
template <class X, class I, class S>
  requires detail::any_symbolic<X, I, S> && detail::has_elements<X> && detail::has_elements<I> &&
           detail::has_elements<S>
auto scatter_add(const X& x, std::int64_t axis, const I& index, const S& source) {
  return detail::apply_eager(
      "scatter_add", detail::index_accumulation<true>{axis}, detail::operand_symbol(x), detail::operand_symbol(index), detail::operand_symbol(source));
}
template <class T = std::int64_t, class N>
auto one_hot(const sym<N>& indices, std::int64_t classes) {
  return detail::apply_eager("one_hot", detail::one_hot_encoding<T>{classes}, indices);
}

// The view ops, as functions of symbolic values (sym's members call these).
template <class N>
auto reshape(const sym<N>& x, const shape& s) {
  return detail::apply_eager("reshape", detail::shape_change{s}, x);
}
template <class N>
auto flatten(const sym<N>& x, std::int64_t start = 0) {
  return detail::apply_eager("flatten", detail::flatten_from{start}, x);
}
template <class N>
auto transpose(const sym<N>& x, std::int64_t a, std::int64_t b) {
  return detail::apply_eager("transpose", detail::axes_swap{a, b}, x);
}
template <class N>
auto permute(const sym<N>& x, std::vector<std::int64_t> order) {
  return detail::apply_eager("permute", detail::axes_order{std::move(order)}, x);
}
template <class N>
auto unsqueeze(const sym<N>& x, std::int64_t axis) {
  return detail::apply_eager("unsqueeze", detail::unit_axis<true>{axis}, x);
}
template <class N>
auto squeeze(const sym<N>& x, std::int64_t axis) {
  return detail::apply_eager("squeeze", detail::unit_axis<false>{axis}, x);
}
template <class N>
auto take(const sym<N>& x, std::int64_t axis, std::int64_t first, std::int64_t count, std::int64_t step) {
  return detail::apply_eager("take", detail::strided_take{axis, first, count, step}, x);
}

template <class Q, class K, class V>
  requires detail::any_symbolic<Q, K, V> && detail::has_elements<Q> && detail::has_elements<K> &&
           detail::has_elements<V>
auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, const attention_options& options = {}) {
  return detail::apply_eager("scaled_dot_product_attention", detail::attention_of{options}, detail::operand_symbol(q),
                             detail::operand_symbol(k), detail::operand_symbol(v));
}

template <class N>
auto tril(const sym<N>& x, std::int64_t diagonal = 0) {
  return detail::apply_eager("tril", detail::band_of<true>{diagonal}, x);
}
template <class N>
auto triu(const sym<N>& x, std::int64_t diagonal = 0) {
  return detail::apply_eager("triu", detail::band_of<false>{diagonal}, x);
}

// The k largest (or smallest) along the axis and their indices: a node for
// the indices, and a gather of x at them for the values.
template <class N>
auto topk(const sym<N>& x, std::int64_t k, std::int64_t axis = -1, bool largest = true) {
  auto indices = detail::apply_eager("topk", detail::top_indices{k, axis, largest}, x);
  return std::pair{gather(x, axis, indices), indices};
}
// Draws from gen on every call of the graph.
template <class N>
auto multinomial(const sym<N>& weights, std::int64_t samples, generator& gen, bool replacement = false) {
  return detail::apply_eager("multinomial", detail::multinomial_draw{samples, &gen, replacement}, weights);
}

}  // namespace tandem
