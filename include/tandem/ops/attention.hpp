#pragma once
// scaled_dot_product_attention(q, k, v, {.causal, .mask, .scale, .dropout,
// .seed}): softmax(q k^T * scale, masked) v over the last two axes, the
// leading axes (batch, heads) broadcast. q is [..., tq, d], k [..., tk, d],
// v [..., tk, dv]; the result is [..., tq, dv].
//
// It is one fused op forward and backward, on the CPU
// (kernels/cpu/attention.hpp) and on a GPU (kernels/cuda/attention.hpp,
// heads up to 128 wide): memory grows with T, not T^2. It reads its
// operands in place (views, broadcast heads) and lays its result out as
// [..., tq, H, dv] in memory, so that y.transpose(1, 2).reshape({B, T, C})
// is a view. For wider heads on a GPU, and for a second derivative, it is
// the composition of matmul, softmax and where, which the same rules
// differentiate.
//
// The causal mask lets query i see key j when j <= i + tk - tq: with tq ==
// tk, as PyTorch's is_causal; with fewer queries than keys (new tokens
// against a cache of keys), the last query sees every key. A boolean mask,
// broadcast to [..., tq, tk], lets a query see the keys where it is true. A
// query that sees no key gives a NaN row. Dropout drops probabilities with
// the given chance and scales the rest by 1 / (1 - dropout); the draws are a
// function of the seed, the head and the position alone, so a call with the
// same seed drops the same pairs, forward and backward.

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/record.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/attention_dropout.hpp"
#include "tandem/kernels/cpu/attention.hpp"
#include "tandem/kernels/cuda/attention_rows.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/linalg.hpp"
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/softmax.hpp"

namespace tandem {

struct attention_options {
  bool causal = false;
  // Where true, a query sees the key; broadcast to [..., tq, tk].
  std::optional<tensor<bool>> mask = std::nullopt;
  // 1 / sqrt(d) when not given.
  std::optional<double> scale = std::nullopt;
  double dropout = 0;
  std::uint64_t seed = 0;
};

namespace detail {

// The leading shape the three operands broadcast to, checked.
template <class T>
shape attention_batch(const tensor<T>& q, const tensor<T>& k, const tensor<T>& v, const attention_options& o) {
  auto fail = [&](const std::string& why) {
    throw shape_error("tandem::scaled_dot_product_attention: " + why + " (q " + to_string(q.shape()) + ", k " +
                      to_string(k.shape()) + ", v " + to_string(v.shape()) +
                      (o.mask ? ", mask " + to_string(o.mask->shape()) : std::string()) + ")");
  };
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2) fail("q, k and v need at least two axes, [..., T, D]");
  if (q.shape(-1) != k.shape(-1)) fail("q and k must have the same last extent");
  if (k.shape(-2) != v.shape(-2)) fail("k and v must have as many rows");
  if (!(o.dropout >= 0 && o.dropout < 1))
    throw value_error("tandem::scaled_dot_product_attention: dropout must lie in [0, 1), got " +
                      std::to_string(o.dropout));
  shape batch;
  auto leading = [](const tensor<T>& x) { return shape(x.shape().begin(), x.shape().end() - 2); };
  if (!try_broadcast(batch, leading(q)) || !try_broadcast(batch, leading(k)) || !try_broadcast(batch, leading(v)))
    fail("the leading axes do not broadcast");
  if (o.mask) {
    shape full = batch;
    full.push_back(q.shape(-2));
    full.push_back(k.shape(-2));
    if (!broadcasts_to(o.mask->shape(), full)) fail("the mask does not broadcast to [..., tq, tk]");
  }
  return batch;
}

// Which (query, key) pairs dropout keeps, as a tensor [batch..., tq, tk].
template <class T>
tensor<T> attention_keep(const shape& batch, std::int64_t tq, std::int64_t tk, const attention_options& o) {
  shape full = batch;
  full.push_back(tq);
  full.push_back(tk);
  tensor<T> keep(full);
  const std::uint64_t threshold = attention_drop_threshold(o.dropout);
  const T scale = T(1 / (1 - o.dropout));
  const std::int64_t heads = numel(batch);
  for (std::int64_t n = 0; n < heads; ++n)
    for (std::int64_t i = 0; i < tq; ++i)
      for (std::int64_t j = 0; j < tk; ++j)
        keep.data()[(n * tq + i) * tk + j] = attention_keeps(o.seed, n, i, j, threshold) ? scale : T(0);
  return keep;
}

// Where a query sees a key, [tq, tk] or broadcast with the mask.
inline tensor<bool> attention_visible(std::int64_t tq, std::int64_t tk, const attention_options& o) {
  tensor<bool> visible(shape{tq, tk});
  for (std::int64_t i = 0; i < tq; ++i)
    for (std::int64_t j = 0; j < tk; ++j) visible.data()[i * tk + j] = !o.causal || j <= i + tk - tq;
  if (o.mask) return logical_and(visible, *o.mask);
  return visible;
}

inline double attention_scale(const attention_options& o, std::int64_t d) {
  return o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(d, 1)));
}

// The attention probabilities as ops: softmax of the masked, scaled scores
// (rows that see nothing are 0 here; the forward makes their output NaN).
template <class Q, class K>
auto attention_probabilities(const Q& q, const K& k, const attention_options& o) {
  using T = typename Q::value_type;
  const auto visible = attention_visible(q.shape(-2), k.shape(-2), o).to(q.device());
  auto scores = matmul(q, k.transpose(-1, -2)) * static_cast<T>(attention_scale(o, q.shape(-1)));
  auto p = softmax(where(visible, scores, -std::numeric_limits<T>::infinity()), -1);
  return where(isnan(p), T(0), p);
}

// The op's composition, forward: for devices without the fused kernel.
template <class T>
tensor<T> composed_attention(const tensor<T>& q, const tensor<T>& k, const tensor<T>& v, const attention_options& o) {
  tensor<T> p = attention_probabilities(q, k, o);
  const shape batch = attention_batch(q, k, v, o);
  if (o.dropout > 0) p = p * attention_keep<T>(batch, q.shape(-2), k.shape(-2), o).to(q.device());
  tensor<T> out = matmul(p, v);
  const tensor<bool> seen =
      sum(attention_visible(q.shape(-2), k.shape(-2), o).template astype<T>(), -1, true).to(q.device()) > T(0);
  return where(seen, out, std::numeric_limits<T>::quiet_NaN());
}

// Where head n of a tensor [batch..., rows, width] starts, for each head
// in the leading shape's order: its leading strides (0 where broadcast)
// times the head's index along each.
inline std::vector<std::int64_t> attention_head_offsets(const shape& batch, std::span<const std::int64_t> strides) {
  const std::int64_t heads = numel(batch);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(heads));
  for (std::int64_t n = 0; n < heads; ++n) {
    std::int64_t rest = n, offset = 0;
    for (std::size_t a = batch.size(); a-- > 0;) {
      offset += rest % batch[a] * strides[a];
      rest /= batch[a];
    }
    offsets[static_cast<std::size_t>(n)] = offset;
  }
  return offsets;
}

// An operand or result of the fused kernel: a view [batch..., rows, width]
// and where each head's rows start in it.
template <class T>
struct attention_tensor {
  tensor<T> view;
  std::vector<std::int64_t> heads;

  attention_tensor() = default;
  attention_tensor(tensor<T> x, const shape& batch)
      : view(std::move(x)), heads(attention_head_offsets(batch, view.strides())) {}
  attention_rows rows() const { return {heads.data(), view.strides()[view.dim() - 2]}; }
};

// q, k or v as the kernel reads it: broadcast to the common leading shape
// and read in place (heads split from [B, T, H, D] by a transpose are
// strided views; broadcast heads share rows), copied only where a row's
// elements are not adjacent.
template <class T>
attention_tensor<T> attention_operand(const tensor<T>& x, const shape& batch) {
  shape s = batch;
  s.push_back(x.shape(-2));
  s.push_back(x.shape(-1));
  tensor<T> view = x.detach().expand(s);
  if (view.shape(-1) > 1 && view.strides()[view.dim() - 1] != 1) view = view.contiguous();
  return {std::move(view), batch};
}

// A result [batch..., rows, width] laid out as [batch[:-1]..., rows,
// batch[-1], width]: the heads' rows interleaved as a transpose to
// [B, T, H, D] then a reshape to [B, T, H * D] reads them, which is then a
// view, not a copy (PyTorch's fused attention lays its output out so too).
template <class T>
attention_tensor<T> attention_result(const shape& batch, std::int64_t rows, std::int64_t width,
                                     device where = device::cpu) {
  if (batch.empty()) return {tensor<T>(shape{rows, width}, where), batch};
  shape memory(batch.begin(), batch.end() - 1);
  memory.push_back(rows);
  memory.push_back(batch.back());
  memory.push_back(width);
  return {tensor<T>(memory, where).transpose(-3, -2), batch};
}

// The operands as a fused kernel takes them (Problem: the CPU's
// attention_problem or the GPU's device_attention), with the views it
// reads, which must outlive the kernel's run.
template <class T, class Problem>
struct fused_attention_operands {
  attention_tensor<T> q, k, v;
  tensor<bool> mask;
  std::vector<std::int64_t> mask_heads;  // the CPU kernel's
  Problem problem;
};

template <class Problem, class T>
fused_attention_operands<T, Problem> attention_views(const tensor<T>& q, const tensor<T>& k, const tensor<T>& v,
                                                     const shape& batch) {
  fused_attention_operands<T, Problem> f;
  f.q = attention_operand(q, batch);
  f.k = attention_operand(k, batch);
  f.v = attention_operand(v, batch);
  return f;
}

template <class T>
fused_attention_operands<T, attention_problem<T>> fused_operands(const tensor<T>& q, const tensor<T>& k,
                                                                 const tensor<T>& v, const shape& batch,
                                                                 const attention_options& o) {
  auto f = attention_views<attention_problem<T>>(q, k, v, batch);
  const std::int64_t heads = numel(batch), tq = q.shape(-2), tk = k.shape(-2);
  f.problem = {heads,         tq,           tk,           q.shape(-1),  v.shape(-1),
               f.q.view.data(), f.k.view.data(), f.v.view.data(), f.q.rows(), f.k.rows(),
               f.v.rows(),    static_cast<T>(attention_scale(o, q.shape(-1))), o.causal};
  if (o.mask) {
    shape s = batch;
    s.push_back(tq);
    s.push_back(tk);
    f.mask = o.mask->expand(s);
    const auto strides = f.mask.strides();
    const std::size_t lead = batch.size();
    f.mask_heads = attention_head_offsets(batch, strides);
    f.problem.mask = f.mask.data();
    f.problem.mask_head = f.mask_heads.data();
    f.problem.mask_row = strides[lead];
    f.problem.mask_column = strides[lead + 1];
  }
  f.problem.dropout = o.dropout;
  f.problem.seed = o.seed;
  return f;
}

// Whether this program's GPU kernels take the problem: heads at most 128
// wide (a thread's registers hold its rows) and batch axes the kernels index.
template <class T>
bool device_attention_fuses(const shape& batch, std::int64_t d, std::int64_t dv) {
  return batch.size() <= cuda_max_axes && std::max(d, dv) <= device_attention_max_width &&
         cuda_attention_forward_slot<T>.load(std::memory_order_acquire) &&
         cuda_attention_backward_slot<T>.load(std::memory_order_acquire);
}

// A view [batch..., rows, width] as the GPU's kernels address it.
template <class P, class T>
device_attention_rows<P> device_rows_of(const tensor<T>& view, P data, std::size_t batch_axes) {
  device_attention_rows<P> rows;
  rows.data = data;
  for (std::size_t a = 0; a < batch_axes; ++a) rows.head_strides[a] = view.strides()[a];
  rows.row = view.strides()[batch_axes];
  return rows;
}

template <class T>
device_attention_rows<const T*> device_rows_of(const attention_tensor<T>& x, std::size_t batch_axes) {
  return device_rows_of(x.view, x.view.device_data(), batch_axes);
}

// The operands on a GPU, read in place as on the CPU.
template <class T>
fused_attention_operands<T, device_attention<T>> device_operands(const tensor<T>& q, const tensor<T>& k,
                                                                 const tensor<T>& v, const shape& batch,
                                                                 const attention_options& o) {
  auto f = attention_views<device_attention<T>>(q, k, v, batch);
  device_attention<T>& p = f.problem;
  const std::size_t lead = batch.size();
  p.batch_axes = static_cast<int>(lead);
  for (std::size_t a = 0; a < lead; ++a) p.batch[a] = batch[a];
  p.heads = numel(batch);
  p.tq = q.shape(-2);
  p.tk = k.shape(-2);
  p.d = q.shape(-1);
  p.dv = v.shape(-1);
  p.q = device_rows_of(f.q, lead);
  p.k = device_rows_of(f.k, lead);
  p.v = device_rows_of(f.v, lead);
  p.scale = static_cast<T>(attention_scale(o, p.d));
  p.causal = o.causal;
  if (o.mask) {
    shape s = batch;
    s.push_back(p.tq);
    s.push_back(p.tk);
    f.mask = o.mask->expand(s);
    p.mask = device_rows_of<const bool*>(f.mask, f.mask.device_data(), lead);
    p.mask_column = f.mask.strides()[lead + 1];
  }
  if (o.dropout > 0) {
    p.drop_threshold = attention_drop_threshold(o.dropout);
    p.seed = o.seed;
    p.keep_scale = T(1 / (1 - o.dropout));
  }
  return f;
}

template <class T>
struct attention_op {
  static constexpr const char* name = "scaled_dot_product_attention";
  static constexpr bool saves_output = true;
  attention_options options;
  tensor<T> logsumexp;  // [batch..., tq], the fused forward's
  bool fused;

  template <std::size_t I, class G, class Y, class Q, class K, class V>
  G derivative(const G& g, const Y& y, const Q& q, const K& k, const V& v) const {
    std::array<bool, 3> wanted{};
    wanted[I] = true;
    return std::get<I>(gradients(wanted, g, y, q, k, v));
  }

  // dq, dk and dv from one pass over the blocks (autograd/derivative.hpp,
  // has_joint_gradients).
  template <class G, class Y, class Q, class K, class V>
  std::tuple<G, G, G> gradients(const std::array<bool, 3>& wanted, const G& g, const Y& y, const Q& q, const K& k,
                                const V& v) const {
    if (is_grad_enabled() || !fused) return composed_gradients(wanted, g, q, k, v);
    const shape batch = attention_batch(q, k, v, options);
    if (!q.device().is_cpu()) return device_gradients(wanted, batch, g, y, q, k, v);
    const auto f = fused_operands(q, k, v, batch, options);
    const std::int64_t tq = q.shape(-2), tk = k.shape(-2);
    auto dq = attention_result<T>(batch, tq, q.shape(-1)), dk = attention_result<T>(batch, tk, k.shape(-1)),
         dv = attention_result<T>(batch, tk, v.shape(-1));
    const auto gs = attention_operand(g, batch), ys = attention_operand(y, batch);
    attention_backward(f.problem,
                       attention_gradients<T>{gs.view.data(), gs.rows(), ys.view.data(), ys.rows(), dq.view.data(),
                                              dk.view.data(), dv.view.data(), dq.rows(), dk.rows(), dv.rows()},
                       logsumexp.data());
    return {wanted[0] ? dq.view : G(), wanted[1] ? dk.view : G(), wanted[2] ? dv.view : G()};
  }

 private:
  template <class G, class Y, class Q, class K, class V>
  std::tuple<G, G, G> device_gradients(const std::array<bool, 3>& wanted, const shape& batch, const G& g, const Y& y,
                                       const Q& q, const K& k, const V& v) const {
    const device where = q.device();
    const auto f = device_operands(q, k, v, batch, options);
    const std::size_t lead = batch.size();
    auto dq = attention_result<T>(batch, q.shape(-2), q.shape(-1), where),
         dk = attention_result<T>(batch, k.shape(-2), k.shape(-1), where),
         dv = attention_result<T>(batch, k.shape(-2), v.shape(-1), where);
    const auto gs = attention_operand(g, batch), ys = attention_operand(y, batch);
    tensor<T> delta(logsumexp.shape(), where);
    device_attention_gradients<T> a{device_rows_of(gs, lead),
                                    device_rows_of(ys, lead),
                                    device_rows_of(dq.view, dq.view.device_data(), lead),
                                    device_rows_of(dk.view, dk.view.device_data(), lead),
                                    device_rows_of(dv.view, dv.view.device_data(), lead),
                                    delta.device_data()};
    runtime_for(where, name);
    cuda_attention_backward_slot<T>.load(std::memory_order_acquire)(where.index(), f.problem, a,
                                                                   logsumexp.device_data());
    return {wanted[0] ? dq.view : G(), wanted[1] ? dk.view : G(), wanted[2] ? dv.view : G()};
  }

  template <class G, class Q, class K, class V>
  std::tuple<G, G, G> composed_gradients(const std::array<bool, 3>& wanted, const G& g, const Q& q, const K& k,
                                         const V& v) const {
    const T scale = static_cast<T>(attention_scale(options, q.shape(-1)));
    auto p = attention_probabilities(q, k, options);
    tensor<T> keep;
    if (options.dropout > 0)
      keep = attention_keep<T>(attention_batch(q, k, v, options), q.shape(-2), k.shape(-2), options).to(q.device());
    auto kept = options.dropout > 0 ? p * keep : p;
    std::tuple<G, G, G> out;
    if (wanted[2]) std::get<2>(out) = matmul(kept.transpose(-1, -2), g);
    if (wanted[0] || wanted[1]) {
      auto dp = matmul(g, v.transpose(-1, -2));
      if (options.dropout > 0) dp = dp * keep;
      auto ds = p * (dp - sum(dp * p, -1, true)) * scale;
      if (wanted[0]) std::get<0>(out) = matmul(ds, k);
      if (wanted[1]) std::get<1>(out) = matmul(ds.transpose(-1, -2), q);
    }
    return out;
  }
};

}  // namespace detail

template <floating_element T>
tensor<T> scaled_dot_product_attention(const tensor<T>& q, const tensor<T>& k, const tensor<T>& v,
                                       const attention_options& options = {}) {
  detail::profile_range range(profile_category::op, "scaled_dot_product_attention");
  if (range.recording()) detail::describe_inputs(range, q, k, v);
  const shape batch = detail::attention_batch(q, k, v, options);
  const device where =
      detail::common_device("scaled_dot_product_attention", {detail::place_of(q), detail::place_of(k), detail::place_of(v)});
  if (options.mask && options.mask->device() != where)
    throw device_error("tandem::scaled_dot_product_attention: the mask is on " + to_string(options.mask->device()) +
                       " and q, k, v on " + to_string(where) + "; move it with to()");
  if (!where.is_cpu() && detail::device_attention_fuses<T>(batch, q.shape(-1), v.shape(-1))) {
    const auto f = detail::device_operands(q, k, v, batch, options);
    shape rows = batch;
    rows.push_back(q.shape(-2));
    auto out = detail::attention_result<T>(batch, q.shape(-2), v.shape(-1), where);
    tensor<T> logsumexp(rows, where);
    detail::runtime_for(where, "scaled_dot_product_attention");
    detail::cuda_attention_forward_slot<T>.load(std::memory_order_acquire)(
        where.index(), f.problem, detail::device_rows_of(out.view, out.view.device_data(), batch.size()),
        logsumexp.device_data());
    detail::record(detail::attention_op<T>{options, logsumexp, true}, out.view, q, k, v);
    return out.view;
  }
  if (!where.is_cpu()) {
    tensor<T> out;
    {
      no_grad values_only;
      out = detail::composed_attention(q.detach(), k.detach(), v.detach(), options);
    }
    detail::record(detail::attention_op<T>{options, tensor<T>(), false}, out, q, k, v);
    return out;
  }
  const auto f = detail::fused_operands(q, k, v, batch, options);
  shape rows = batch;
  rows.push_back(q.shape(-2));
  auto out = detail::attention_result<T>(batch, q.shape(-2), v.shape(-1));
  tensor<T> logsumexp(rows);
  detail::attention_forward(f.problem, out.view.data(), out.rows(), logsumexp.data());
  detail::record(detail::attention_op<T>{options, logsumexp, true}, out.view, q, k, v);
  return out.view;
}

}  // namespace tandem
