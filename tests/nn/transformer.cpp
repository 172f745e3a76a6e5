// nn::multi_head_attention and nn::transformer_block: the layer against the
// ops written out; a small GPT (embeddings, a pre-norm block, a head)
// trained with AdamW, gradient clipping and a warmup-cosine schedule, step
// by step the same eagerly, as one static graph per step and under capture;
// its plan reused across steps; attention dropout reproducible.

#include "support/check.hpp"

using namespace tandem;

namespace {

template <class T>
struct tiny_gpt : nn::module<tiny_gpt<T>> {
  static constexpr std::int64_t vocabulary = 11, width = 8, context = 6;
  nn::embedding<T> tokens, positions;
  nn::transformer_block<T> block;
  nn::layer_norm<T> norm{{width}};
  nn::linear<T> head;
  tensor<std::int64_t> position_ids = arange<std::int64_t>(context);

  tiny_gpt(generator& gen, double dropout = 0)
      : tokens(vocabulary, width, gen),
        positions(context, width, gen),
        block(width, 2, gen, {.dropout = dropout, .seed = 5}),
        head(width, vocabulary, gen) {
    this->register_module("tokens", tokens);
    this->register_module("positions", positions);
    this->register_module("block", block);
    this->register_module("norm", norm);
    this->register_module("head", head);
  }
  template <class I>
  auto forward(const I& idx) const {
    auto x = tokens(idx) + positions(position_ids.take(0, 0, idx.shape(1)));
    return head(norm(block(x)));
  }
};

tensor<std::int64_t> tokens_at(int step, std::int64_t batch, std::int64_t length, std::int64_t shift) {
  tensor<std::int64_t> t(shape{batch, length});
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = (i * 7 + step * 3 + shift + i / 5) % 11;
  return t;
}

enum class way { eager, graph, capture };

template <class T>
std::vector<double> train(way how) {
  generator gen(1);
  tiny_gpt<T> model(gen);
  nn::adamw opt(model.named_parameters(), {.lr = 3e-3, .weight_decay = 0.1});
  nn::warmup_cosine_schedule schedule(opt, 2, 5, 1e-4);
  auto loss_of = [&](const auto& x, const auto& y) {
    return nn::cross_entropy(model(x).reshape({-1, tiny_gpt<T>::vocabulary}), y.reshape({-1}));
  };
  nn::train_step step(loss_of, opt, nn::clip_grad_norm(0.5));
  auto graph_step = jit(step);
  auto captured = capture([&](const tensor<std::int64_t>& x, const tensor<std::int64_t>& y) { return step(x, y); });
  std::vector<double> losses;
  for (int s = 0; s < 5; ++s) {
    const auto x = tokens_at(s, 3, tiny_gpt<T>::context, 0), y = tokens_at(s, 3, tiny_gpt<T>::context, 1);
    tensor<T> loss = how == way::graph ? graph_step(x, y) : how == way::capture ? captured(x, y) : step(x, y);
    losses.push_back(static_cast<double>(loss.item()));
    schedule.step();
  }
  if (how == way::graph) CHECK(graph_step.graph_statistics().misses == 1);
  return losses;
}

}  // namespace

TEST_CASE("multi_head_attention is the attention of its projections, heads split and merged") {
  generator gen(2);
  nn::multi_head_attention<double> layer(6, 3, gen);
  tensor<double> x = test::random_tensor<double>({2, 4, 6}, -1, 1, 3);
  auto qkv = matmul(x, layer.qkv.weight) + layer.qkv.bias;
  auto heads = [](const tensor<double>& z) { return z.reshape({2, 4, 3, 2}).transpose(1, 2); };
  auto y = scaled_dot_product_attention(heads(qkv.take(2, 0, 6)), heads(qkv.take(2, 6, 6)), heads(qkv.take(2, 12, 6)),
                                        {.causal = true});
  tensor<double> want = matmul(y.transpose(1, 2).reshape({2, 4, 6}), layer.proj.weight) + layer.proj.bias;
  test::check_values(layer(x), want, "eager");
  test::check_values(jit([&](auto a) { return layer(a); })(x), want, "jit");
  CHECK_THROWS_AS(nn::multi_head_attention<float>(6, 4, gen), value_error);
}

TEST_CASE("a small GPT trains the same eagerly, as a static graph and under capture") {
  const auto eager = train<double>(way::eager);
  const auto graph = train<double>(way::graph);
  const auto captured = train<double>(way::capture);
  for (std::size_t s = 0; s < eager.size(); ++s) {
    CHECK(graph[s] == doctest::Approx(eager[s]).epsilon(1e-9));
    CHECK(captured[s] == doctest::Approx(eager[s]).epsilon(1e-9));
  }
  CHECK(eager.back() < eager.front());
}

TEST_CASE("attention dropout is reproducible from the seed and off in evaluation") {
  auto run = [](bool training) {
    generator gen(4);
    tiny_gpt<double> model(gen, 0.3);
    model.train(training);
    return model(tokens_at(0, 2, 6, 0));
  };
  test::check_values(run(true), run(true), "same seed");
  CHECK(max(abs(run(true) - run(false))).item() > 1e-3);
}

// The block runs as a static graph of its own inside an enclosing one, its
// parameters not operands of the enclosing graph: they must still get their
// gradients when its input needs none, and a grad that differentiates
// through another (a gradient penalty) must record its backward for them.
TEST_CASE("a transformer block's parameters get their gradients through an enclosing static graph") {
  generator gen(3);
  nn::transformer_block<double> block(8, 2, gen);
  std::vector<tensor<double>> params;
  for (const auto& p : block.named_parameters()) params.push_back(std::get<tensor<double>>(p.value));
  const tensor<double> x = test::random_tensor<double>({1, 3, 8}, -1, 1, 7);
  auto squared = [&](const auto& v) {
    auto y = block(v);
    return sum(y * y);
  };
  auto penalty = [](auto f) {
    return [f](const tensor<double>& v) {
      tensor<double> g = grad(f)(v);
      return sum(g * g);
    };
  };
  auto compare = [&](const std::vector<tensor<double>>& got, const std::vector<tensor<double>>& want, const char* what) {
    REQUIRE(got.size() == params.size());
    for (std::size_t k = 0; k < params.size(); ++k) {
      CHECK(max(abs(want[k])).item() > 1e-3);
      test::check_values(got[k], want[k], what);
    }
  };
  compare(grad(jit(squared), params)(x), grad(squared, params)(x), "first order");
  compare(grad(penalty(jit(squared)), params)(x), grad(penalty(squared), params)(x), "gradient penalty");
}
