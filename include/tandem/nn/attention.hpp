#pragma once
// nn::multi_head_attention: self-attention over x [B, T, D] in `heads`
// heads of D / heads each. One linear layer makes queries, keys and values
// together ([D, 3D]), the fused scaled_dot_product_attention attends (causal
// if asked), and a second linear layer projects the merged heads. Its
// forward is generic: the heads are split with x's shape, which a static
// graph knows while tracing, so the same code runs eagerly and as a graph.
//
// Attention dropout, in training, draws one seed per call from the module's
// generator, so the forward and its backward drop the same pairs and a run
// is reproducible from the seed.

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "tandem/core/random.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/graph/pieces.hpp"
#include "tandem/nn/linear.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/ops/attention.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem::nn {

struct attention_layer_options {
  bool causal = true;
  double dropout = 0;
  std::uint64_t seed = 0;
};

template <floating_element T = float>
class multi_head_attention : public module<multi_head_attention<T>> {
 public:
  linear<T> qkv, proj;

  multi_head_attention(std::int64_t dim, std::int64_t heads, generator& gen, attention_layer_options options = {})
      : qkv(check(dim, heads, options), 3 * dim, gen),
        proj(dim, dim, gen),
        heads_(heads),
        options_(options),
        gen_(std::make_shared<generator>(options.seed)) {
    this->register_module("qkv", qkv);
    this->register_module("proj", proj);
  }

  std::int64_t heads() const { return heads_; }

  template <class X>
  auto forward(const X& x) const {
    auto [q, k, v] = heads_of(x);
    attention_options o{.causal = options_.causal};
    if (this->is_training() && options_.dropout > 0) {
      o.dropout = options_.dropout;
      o.seed = gen_->take(1);
    }
    return merged(scaled_dot_product_attention(q, k, v, o));
  }

  // The queries, keys and values of x [B, T, D], each [B, heads, T, D / heads].
  template <class X>
  auto heads_of(const X& x) const {
    const std::int64_t b = x.shape(0), t = x.shape(1), d = x.shape(2);
    auto parts = split(qkv(x), d, -1);
    auto split_heads = [&](const auto& z) { return z.reshape({b, t, heads_, d / heads_}).transpose(1, 2); };
    return std::tuple{split_heads(parts[0]), split_heads(parts[1]), split_heads(parts[2])};
  }

  // Attention at new positions (for generation): queries q [B, heads, t,
  // D / heads] (heads_of) against a cache of keys and values [B, heads,
  // context, D / heads] that holds the new positions' already, each query
  // seeing the keys where its row of `visible` ([t, context]) is true. The
  // projected output [B, t, D].
  template <class Q, class K, class V>
  auto forward_cached(const Q& q, const K& keys, const V& values, const tensor<bool>& visible) const {
    return merged(scaled_dot_product_attention(q, keys, values, {.mask = visible}));
  }

 private:
  // Heads [B, heads, T, D / heads] merged to [B, T, D] and projected.
  template <class Y>
  auto merged(const Y& y) const {
    const std::int64_t b = y.shape(0), t = y.shape(2);
    return proj(y.transpose(1, 2).reshape({b, t, heads_ * y.shape(3)}));
  }

  static std::int64_t check(std::int64_t dim, std::int64_t heads, const attention_layer_options& o) {
    if (dim <= 0 || heads <= 0 || dim % heads != 0)
      throw value_error("tandem::nn::multi_head_attention: the width " + std::to_string(dim) +
                        " must be a positive multiple of the head count " + std::to_string(heads));
    if (!(o.dropout >= 0 && o.dropout < 1))
      throw value_error("tandem::nn::multi_head_attention: dropout must lie in [0, 1), got " + std::to_string(o.dropout));
    return dim;
  }

  std::int64_t heads_;
  attention_layer_options options_;
  std::shared_ptr<generator> gen_;
};

}  // namespace tandem::nn
