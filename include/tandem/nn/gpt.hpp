#pragma once
// nn::gpt: a decoder-only transformer (GPT-2's layout): token and position
// embeddings, `Layers` pre-norm transformer blocks, a final layer norm and
// a linear head to logits over the vocabulary. The layer count is part of
// the type, so that a forward (and a whole training step) traces into one
// static graph.
//
// nn::generate samples from it with a cache of every layer's keys and
// values: each new token runs each block at its position as a static graph
// whose arguments have the same shapes at every position (the caches span
// the whole context; which positions a query sees is a mask the step
// reads), so the graph is planned once and never again. A cache that fills up is
// rebuilt from the last half of the context, as the model's learned
// positions end there.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/random.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/graph/static_graph.hpp"
#include "tandem/nn/embedding.hpp"
#include "tandem/nn/linear.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/nn/normalization.hpp"
#include "tandem/nn/transformer.hpp"
#include "tandem/ops/mask.hpp"
#include "tandem/ops/sampling.hpp"
#include "tandem/ops/softmax.hpp"

namespace tandem::nn {

struct gpt_config {
  std::int64_t vocabulary = 0;
  std::int64_t context = 128;
  std::int64_t width = 128;
  std::int64_t heads = 4;
  double dropout = 0;
  std::uint64_t seed = 0;
};

struct generation_options {
  // Logits are divided by it; 0 picks the most likely token.
  double temperature = 1;
  // Only the k most likely tokens are drawn from (0: all).
  std::int64_t top_k = 0;
  std::uint64_t seed = 0;
};

template <floating_element T = float, std::size_t Layers = 4>
class gpt : public module<gpt<T, Layers>> {
 public:
  static constexpr std::size_t layers = Layers;
  embedding<T> tokens, positions;
  std::array<transformer_block<T>, Layers> blocks;
  layer_norm<T> norm;
  linear<T> head;

  gpt(const gpt_config& config, generator& gen)
      : tokens(checked(config).vocabulary, config.width, gen),
        positions(config.context, config.width, gen),
        blocks(make_blocks(config, gen, std::make_index_sequence<Layers>{})),
        norm({config.width}),
        head(config.width, config.vocabulary, gen),
        config_(config),
        position_ids_(arange<std::int64_t>(config.context)) {
    this->register_module("tokens", tokens);
    this->register_module("positions", positions);
    for (std::size_t l = 0; l < Layers; ++l) this->register_module("block" + std::to_string(l), blocks[l]);
    this->register_module("norm", norm);
    this->register_module("head", head);
  }

  const gpt_config& config() const { return config_; }

  // Logits [B, t, vocabulary] for token ids [B, t], t at most the context.
  template <class I>
  auto forward(const I& idx) const {
    auto x = tokens(idx) + positions(position_ids_.take(0, 0, idx.shape(1)));
    return head(norm(through_blocks<0>(x)));
  }

  // One block at new positions of its caches, as the functions of two
  // static graphs (transformer_block::heads_cached and forward_cached):
  // generate() writes the positions' keys and values into the caches in
  // between, in place. `visible` ([positions, context]) is true where a
  // new position sees the cache: a tensor generate() rewrites between
  // steps, read on every call.
  struct cached_heads {
    const transformer_block<T>* block;
    template <class X>
    auto operator()(const X& x) const {
      return block->heads_cached(x);
    }
  };
  struct cached_block {
    const transformer_block<T>* block;
    tensor<bool> visible;
    template <class X, class Q, class K, class V>
    auto operator()(const X& x, const Q& q, const K& keys, const V& values) const {
      return block->forward_cached(x, q, keys, values, visible);
    }
  };

  // The plans of the graphs generate() ran: two per batch size (a block's
  // heads and the block), shared by every layer and position.
  plan_statistics decode_statistics() const { return decode_plans_->statistics(); }
  std::shared_ptr<tandem::detail::plan_cache> decode_plans() const { return decode_plans_; }

 private:
  template <std::size_t... L>
  static std::array<transformer_block<T>, Layers> make_blocks(const gpt_config& c, generator& gen,
                                                             std::index_sequence<L...>) {
    return {transformer_block<T>(c.width, c.heads, gen, {.causal = true, .dropout = c.dropout, .seed = c.seed + 2 * L})...};
  }

  static const gpt_config& checked(const gpt_config& c) {
    if (c.vocabulary <= 0 || c.context <= 0 || c.width <= 0 || c.heads <= 0)
      throw value_error("tandem::nn::gpt: vocabulary, context, width and heads must be positive");
    return c;
  }

  template <std::size_t L, class X>
  auto through_blocks(const X& x) const {
    if constexpr (L == Layers) return x;
    else return through_blocks<L + 1>(blocks[L](x));
  }

  gpt_config config_;
  tensor<std::int64_t> position_ids_;
  std::shared_ptr<tandem::detail::plan_cache> decode_plans_ = std::make_shared<tandem::detail::plan_cache>();
};

namespace detail {

// The next token of each row of logits [B, vocabulary]: the most likely at
// temperature 0, else a draw from the softmax of logits / temperature over
// the top_k most likely.
template <class T>
tensor<std::int64_t> sample_next(const tensor<T>& logits, const generation_options& o, generator& gen) {
  if (o.temperature == 0) return argmax(logits, 1, true);
  tensor<T> scaled = logits / static_cast<T>(o.temperature);
  if (o.top_k > 0 && o.top_k < logits.shape(1)) {
    tensor<T> kth = topk(scaled, o.top_k, 1).first.take(1, o.top_k - 1, 1);
    scaled = masked_fill(scaled, scaled < kth, -std::numeric_limits<T>::infinity());
  }
  return multinomial(softmax(scaled, 1), 1, gen, true);
}

}  // namespace detail

// `prompt` ([t] or [B, t] token ids) followed by max_tokens sampled ones,
// reproducible from options.seed.
template <class T, std::size_t Layers>
tensor<std::int64_t> generate(const gpt<T, Layers>& model, const tensor<std::int64_t>& prompt, std::int64_t max_tokens,
                              const generation_options& options = {}) {
  if (prompt.dim() != 1 && prompt.dim() != 2)
    throw shape_error("tandem::nn::generate: the prompt must be [t] or [B, t], got " + to_string(prompt.shape()));
  if (prompt.numel() == 0) throw value_error("tandem::nn::generate: the prompt needs at least one token");
  if (max_tokens < 0 || !(options.temperature >= 0) || options.top_k < 0)
    throw value_error("tandem::nn::generate: max_tokens, temperature and top_k must not be negative");
  const bool single = prompt.dim() == 1;
  const tensor<std::int64_t> rows = single ? prompt.unsqueeze(0) : prompt;
  const gpt_config& c = model.config();
  const std::int64_t batch = rows.shape(0), heads = c.heads, head_width = c.width / c.heads;
  for (std::int64_t token : rows.to_vector())
    if (token < 0 || token >= c.vocabulary)
      throw index_error("tandem::nn::generate: token " + std::to_string(token) + " is outside the vocabulary of " +
                        std::to_string(c.vocabulary));

  no_grad inference;
  generator gen(options.seed);
  using heads_type = typename gpt<T, Layers>::cached_heads;
  using block_type = typename gpt<T, Layers>::cached_block;
  // Each block's two graphs: one for the queries, keys and values, one for
  // the rest of the block, reading `seen` ([count, context]: which cached
  // positions each of `count` new positions sees), rewritten per call.
  struct step_graphs {
    tensor<bool> seen;
    std::vector<static_graph<heads_type>> heads;
    std::vector<static_graph<block_type>> blocks;
  };
  auto graphs_for = [&](std::int64_t count) {
    step_graphs g{zeros<bool>({count, c.context}), {}, {}};
    for (const auto& block : model.blocks) {
      g.heads.emplace_back(heads_type{&block}, model.decode_plans());
      g.blocks.emplace_back(block_type{&block, g.seen}, model.decode_plans());
    }
    return g;
  };
  const step_graphs decode = graphs_for(1);
  std::array<tensor<T>, 2 * Layers> caches;
  for (auto& cache : caches) cache = zeros<T>({batch, heads, c.context, head_width});
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < rows.shape(1); ++i) out[b].push_back(rows.at(b, i));

  // Tokens [i, i + count) of each row at positions [position, position +
  // count) of the caches, their keys and values written in: the logits of
  // the last, [B, vocabulary].
  auto advance = [&](std::size_t i, std::int64_t count, std::int64_t position, const step_graphs& g) {
    tensor<bool> seen = g.seen;
    seen.fill(false);
    for (std::int64_t r = 0; r < count; ++r) seen.take(0, r, 1).take(1, 0, position + r + 1).fill(true);
    tensor<std::int64_t> tokens(shape{batch, count});
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t r = 0; r < count; ++r) tokens.at(b, r) = out[b][i + static_cast<std::size_t>(r)];
    tensor<T> x = model.tokens(tokens) + model.positions(arange<std::int64_t>(position, position + count));
    for (std::size_t l = 0; l < Layers; ++l) {
      auto [q, k, v] = g.heads[l](x);
      caches[2 * l].take(2, position, count).assign(k);
      caches[2 * l + 1].take(2, position, count).assign(v);
      x = g.blocks[l](x, q, caches[2 * l], caches[2 * l + 1]);
    }
    return model.head(model.norm(x.take(1, count - 1, 1))).reshape({batch, c.vocabulary});
  };
  // Tokens [first, end) of each row at the start of the caches, at once
  // (the prompt, or the last half of a full context). Positions past them
  // keep finite values that no query sees.
  auto refill = [&](std::size_t first, std::size_t end) {
    const auto count = static_cast<std::int64_t>(end - first);
    if (count == 1) return advance(first, 1, 0, decode);
    return advance(first, count, 0, graphs_for(count));
  };

  std::size_t first = out[0].size() > static_cast<std::size_t>(c.context) ? out[0].size() - c.context : 0;
  tensor<T> logits = refill(first, out[0].size());
  for (std::int64_t n = 0; n < max_tokens; ++n) {
    const tensor<std::int64_t> next = detail::sample_next(logits, options, gen);
    for (std::int64_t b = 0; b < batch; ++b) out[b].push_back(next.at(b, 0));
    if (n + 1 == max_tokens) break;
    const std::size_t length = out[0].size();
    if (length - first > static_cast<std::size_t>(c.context)) {
      first = length - static_cast<std::size_t>(c.context) / 2;
      logits = refill(first, length);
    } else {
      logits = advance(length - 1, 1, static_cast<std::int64_t>(length - 1 - first), decode);
    }
  }
  tensor<std::int64_t> result(shape{batch, static_cast<std::int64_t>(out[0].size())});
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < out[b].size(); ++i) result.at(b, static_cast<std::int64_t>(i)) = out[b][i];
  return single ? result.squeeze(0) : result;
}

}  // namespace tandem::nn
