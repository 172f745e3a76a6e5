#pragma once
// nn::transformer_block: the pre-norm block of GPT-2 and its successors,
//   x = x + dropout(attention(layer_norm(x)))
//   x = x + dropout(mlp(layer_norm(x))),  mlp = linear(D, 4D), gelu, linear(4D, D)
// generic in x, so one block (or a stack of them) runs eagerly and inside
// a static graph.

#include <cstdint>
#include <memory>
#include <vector>

#include "tandem/core/random.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/graph/static_graph.hpp"
#include "tandem/nn/attention.hpp"
#include "tandem/nn/dropout.hpp"
#include "tandem/nn/linear.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/nn/normalization.hpp"
#include "tandem/ops/elementwise/activation.hpp"

namespace tandem::nn {

struct transformer_block_options {
  bool causal = true;
  // Of attention probabilities and of each branch's output, in training.
  double dropout = 0;
  // The hidden width of the MLP, as a multiple of the model's.
  std::int64_t expansion = 4;
  std::uint64_t seed = 0;
};

template <floating_element T = float>
class transformer_block : public module<transformer_block<T>> {
 public:
  layer_norm<T> norm1;
  multi_head_attention<T> attention;
  layer_norm<T> norm2;
  linear<T> fc, out;
  dropout drop;

  transformer_block(std::int64_t dim, std::int64_t heads, generator& gen, transformer_block_options options = {})
      : norm1({dim}),
        attention(dim, heads, gen, {options.causal, options.dropout, options.seed}),
        norm2({dim}),
        fc(dim, options.expansion * dim, gen),
        out(options.expansion * dim, dim, gen),
        drop(options.dropout, options.seed + 1) {
    this->register_module("norm1", norm1);
    this->register_module("attention", attention);
    this->register_module("norm2", norm2);
    this->register_module("fc", fc);
    this->register_module("out", out);
    this->register_module("drop", drop);
  }

  // Eagerly, the block op by op. Inside a static graph, one node that runs
  // the block as a static graph of its own (forward fused, backward derived
  // at compile time), so that a model of N blocks compiles one block's
  // graph, not a graph N blocks deep: every block of one type shares it.
  template <class X>
  auto forward(const X& x) const {
    if constexpr (is_symbolic_v<X>) return tandem::detail::call_or_trace("transformer_block", block_graph{this}, x);
    else return body(x);
  }

  template <class X>
  auto body(const X& x) const {
    auto h = x + drop(attention(norm1(x)));
    return h + drop(out(tandem::gelu(fc(norm2(h)))));
  }

  // The block at new positions of a cache of keys and values, without
  // dropout, for generation, in two steps around the caller's write of the
  // positions' keys and values into the cache: the queries, keys and values
  // of x [B, t, D] (each [B, heads, t, D / heads]), then the block's output
  // from x, its queries and the caches (multi_head_attention::forward_cached).
  template <class X>
  auto heads_cached(const X& x) const {
    return attention.heads_of(norm1(x));
  }
  template <class X, class Q, class K, class V>
  auto forward_cached(const X& x, const Q& q, const K& keys, const V& values, const tensor<bool>& visible) const {
    auto h = x + attention.forward_cached(q, keys, values, visible);
    return h + out(tandem::gelu(fc(norm2(h))));
  }

 private:
  struct body_of {
    const transformer_block* self;
    template <class X>
    auto operator()(const X& x) const {
      return self->body(x);
    }
  };
  // The block's own graph, run on its input's value by the enclosing graph.
  // Its parameters are not operands of the enclosing graph's node, so the
  // node names them (holds_parameters): else a call whose input needs no
  // gradient would record nothing for them, and a grad of the enclosing
  // graph with respect to them would find zeros.
  struct block_graph {
    const transformer_block* self;
    tensor<T> operator()(const tensor<T>& x) const { return self->run_body(x); }
    shape result_shape(const shape& in) const { return in; }
    std::vector<tensor<T>> held_parameters() const {
      std::vector<tensor<T>> held;
      for (const auto& p : self->named_parameters()) held.push_back(std::get<tensor<T>>(p.value));
      return held;
    }
  };

  // Defined outside the class, so not inline: tandem::compiled declares it
  // extern for float and double (compiled/modules.hpp), and a graph holding
  // blocks then compiles none of the block's own.
  tensor<T> run_body(const tensor<T>& x) const;

  std::shared_ptr<tandem::detail::plan_cache> plans_ = std::make_shared<tandem::detail::plan_cache>();
};

template <floating_element T>
tensor<T> transformer_block<T>::run_body(const tensor<T>& x) const {
  return static_graph<body_of>(body_of{this}, plans_)(x);
}

}  // namespace tandem::nn
