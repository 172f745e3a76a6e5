#pragma once
// tandem::dist::shard(f, in_strategies, out_strategies): MindSpore's shard.
// f is traced as for jit (a template over symbolic values); each rank then
// computes the graph on its blocks of the inputs, cut as the strategies say
// (dist/layout.hpp), and the layouts of the other values follow from the
// ops, with a collective inserted only where an op needs one (the rules
// are dist/shard_evaluator.hpp's):
//
//   elementwise      follows its operands: a replicated operand is cut to
//                    the split one's block by each rank, no message sent
//   sum, mean        over a kept axis, follows it; over the cut axis, a
//                    partial sum
//   matmul           rows of a cut: rows of the product; columns of b cut:
//                    its columns; the contracted axis cut: a partial sum,
//                    which a reader gets reduce-scattered (when it wants
//                    a block) or all-reduced (when it wants the whole)
//   max, min         over a kept axis, follows it; over the cut axis, each
//                    rank's extreme, then an all-reduce of those
//   softmax          along a kept axis, follows it; along the cut one,
//                    on the whole
//   transpose, permute  move the cut axis with the others
//   reshape, flatten, squeeze, unsqueeze
//                    keep the cut where each block is a block of the
//                    result (rows stay rows; heads split from a cut
//                    feature axis are cut heads)
//   any other op     reads whole operands (all_gather) and gives a whole
//                    value: correct for every op, cheap for none
//
//   auto layer = dist::shard([](const auto& x, const auto& w) { return relu(matmul(x, w)); },
//                            {{ranks, 1}, {1, 1}},   // x cut by rows, w whole
//                            {{ranks, 1}});          // the result: this rank's rows
//   tensor<float> rows = layer(x, w);
//
// A module's parameters, read by f, are cut by name (parameter_plan, as
// MindSpore's): dist::shard(f, in, out, dist::parameter_plan(model,
// {{"first.weight", {1, ranks}}})) cuts one linear layer's columns.
//
// The inputs are the whole tensors, the same on every rank, or, through
// on_blocks(), each rank's own blocks of them; each output is what its
// strategy gives this rank (the whole tensor for (1, 1) or none given).
// The result equals f's, as float sums reassociate.
//
// On each rank, every elementwise region of the graph (with the sum or
// mean it feeds) runs as one fused static graph over the rank's blocks
// (graph/region.hpp), its plan kept across calls; matmul and the other ops
// run their kernels between regions. Gradients flow through (the moves
// between layouts are recorded ops: dist/layout.hpp): a whole output's
// gradient is that of the ranks' one loss, a cut output's that of the sum
// of the ranks' losses on their blocks.

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/communicator.hpp"
#include "tandem/dist/layout.hpp"
#include "tandem/dist/parameter_plan.hpp"
#include "tandem/dist/shard_evaluator.hpp"
#include "tandem/graph/static_graph.hpp"

namespace tandem::dist {

// A function sharded over the ranks of a communicator: dist::shard.
template <class F>
class sharded_graph {
 public:
  sharded_graph(F f, std::vector<strategy> in, std::vector<strategy> out, parameter_plan plan, communicator comm)
      : f_(std::move(f)),
        in_(std::move(in)),
        out_(std::move(out)),
        plan_(std::move(plan)),
        comm_(comm),
        last_(std::make_shared<shard_statistics>()) {}

  // The whole inputs, the same on every rank: each rank takes its blocks.
  template <class... A>
  auto operator()(const A&... a) const {
    return run(false, a...);
  }

  // Each rank's own blocks of the inputs, as the strategies cut them
  // (whole tensors where a strategy cuts none): no rank holds a whole
  // input.
  template <class... A>
  auto on_blocks(const A&... a) const {
    return run(true, a...);
  }

  // What the last call moved between the ranks.
  const shard_statistics& statistics() const { return *last_; }

 private:
  template <class... A>
  auto run(bool given_blocks, const A&... a) const {
    static_assert(!(is_symbolic_v<A> || ...),
                  "tandem::dist::shard: a sharded function is called with tensors, not traced into a static graph");
    constexpr std::size_t tensors = (std::size_t{0} + ... + std::size_t{is_tensor_v<A>});
    if (in_.size() != tensors)
      throw error("tandem::dist::shard: " + std::to_string(in_.size()) + " input strategies for " +
                  std::to_string(tensors) + " tensor arguments");
    std::vector<tandem::detail::any_tensor> blocks(sizeof...(A), tensor<float>{});
    std::vector<detail::layout> layouts(sizeof...(A));
    std::size_t next = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (prepare<I>(a, given_blocks, next, blocks, layouts), ...);
    }(std::index_sequence_for<A...>{});
    // Each rank runs the graph on blocks of the arguments, so the shapes
    // of the whole are not the ones its nodes see: none are given.
    tandem::detail::trace_inputs_scope no_shapes(nullptr, 0);
    auto traced = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return f_(tandem::detail::symbol_for<I>(a)...);
    }(std::index_sequence_for<A...>{});

    constexpr std::size_t outputs = [] {
      if constexpr (is_symbolic_v<decltype(traced)>) return std::size_t{1};
      else return std::tuple_size_v<decltype(traced)>;
    }();
    if (!out_.empty() && out_.size() != outputs)
      throw error("tandem::dist::shard: " + std::to_string(out_.size()) + " output strategies for " +
                  std::to_string(outputs) + " outputs");
    shard_statistics stats;
    detail::shard_evaluator evaluator(std::move(blocks), std::move(layouts), plan_, comm_, stats);
    auto result = [&] {
      if constexpr (is_symbolic_v<decltype(traced)>) {
        return finish(evaluator, traced, 0);
      } else {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
          return std::tuple{finish(evaluator, std::get<K>(traced), K)...};
        }(std::make_index_sequence<outputs>{});
      }
    }();
    *last_ = std::move(stats);
    return result;
  }

  template <std::size_t I, class A>
  void prepare(const A& a, bool given_blocks, std::size_t& next, std::vector<tandem::detail::any_tensor>& blocks,
               std::vector<detail::layout>& layouts) const {
    if constexpr (is_tensor_v<A>) {
      using T = typename A::value_type;
      const tensor<T>& given = a;
      const strategy& cut = in_[next++];
      shape whole = given.shape();
      if (given_blocks && whole.size() == cut.size())
        for (std::size_t axis = 0; axis < cut.size(); ++axis)
          if (cut[axis] > 1) whole[axis] *= cut[axis];
      layouts[I] = detail::layout_of(cut, whole, "input " + std::to_string(I), comm_.size());
      blocks[I] = layouts[I].is_split() && !given_blocks
                      ? detail::block_of(detail::entering_cut(given, comm_), layouts[I].axis, comm_)
                      : given;
    }
  }

  template <class N>
  auto finish(detail::shard_evaluator& evaluator, const sym<N>& output, std::size_t k) const {
    using T = tandem::detail::value_of_t<N>;
    detail::sharded_value& v = evaluator.evaluate(output);
    shape whole = std::get<tensor<T>>(v.value).shape();
    if (v.where.is_split()) whole[v.where.axis] *= comm_.size();
    const strategy wanted = k < out_.size() ? out_[k] : strategy{};
    return evaluator.read<T>(v, detail::layout_of(wanted, whole, "output " + std::to_string(k), comm_.size()));
  }

  F f_;
  std::vector<strategy> in_, out_;
  parameter_plan plan_;
  communicator comm_;
  std::shared_ptr<shard_statistics> last_;
};

// f sharded over the ranks of `comm`: each tensor argument cut as its
// strategy says, each output left as its strategy says (whole on every
// rank where none is given), the parameters f reads cut as `plan` says.
template <class F>
sharded_graph<F> shard(F f, std::vector<strategy> in_strategies, std::vector<strategy> out_strategies = {},
                       parameter_plan plan = {}, communicator comm = communicator::world()) {
  return sharded_graph<F>(std::move(f), std::move(in_strategies), std::move(out_strategies), std::move(plan), comm);
}

}  // namespace tandem::dist
