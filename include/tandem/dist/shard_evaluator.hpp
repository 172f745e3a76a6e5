#pragma once
// How a sharded graph (dist/shard.hpp) runs on one rank: each node of the
// traced graph once, on the rank's blocks, each op's rule giving its
// result's layout and the collectives it needs (dist/layout.hpp).

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/communicator.hpp"
#include "tandem/dist/layout.hpp"
#include "tandem/dist/parameter_plan.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/graph/region.hpp"
#include "tandem/graph/run.hpp"

namespace tandem::dist::detail {

using tandem::detail::any_tensor;
using tandem::detail::node_traits;
using tandem::detail::value_of_t;

template <class N>
inline constexpr bool can_shard = !tandem::detail::is_control_node<N> && !tandem::detail::is_control_output_node<N>;

// The ops with a rule of their own besides sum, mean and matmul.
template <class Fn>
inline constexpr bool is_extreme = false;
template <bool Max>
inline constexpr bool is_extreme<tandem::detail::extreme_reduction<Max>> = true;
template <class Fn>
inline constexpr bool is_softmax = false;
template <bool Log>
inline constexpr bool is_softmax<tandem::detail::softmax_function<Log>> = true;
template <class Fn>
inline constexpr bool moves_axes =
    std::is_same_v<Fn, tandem::detail::axes_swap> || std::is_same_v<Fn, tandem::detail::axes_order>;

template <class Fn>
inline constexpr bool keeps_order =
    std::is_same_v<Fn, tandem::detail::shape_change> || std::is_same_v<Fn, tandem::detail::flatten_from> ||
    std::is_same_v<Fn, tandem::detail::unit_axis<true>> || std::is_same_v<Fn, tandem::detail::unit_axis<false>>;

// Where a reshape from `from` (cut along `cut` over `ranks`) to `to` puts
// the cut, if each rank's block is a block of the result: the axes before
// the cut hold as many elements in both, and the blocks' boundaries fall
// on whole steps of the result's axis.
inline std::optional<std::int64_t> cut_after_reshape(const shape& from, std::int64_t cut, const shape& to, int ranks) {
  if (numel(from) != numel(to)) return std::nullopt;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t a = 0; a < static_cast<std::int64_t>(from.size()); ++a)
    if (a < cut) outer *= from[a];
    else if (a > cut) inner *= from[a];
  const std::int64_t block = from[cut] / ranks * inner;
  std::int64_t before = 1;
  for (std::int64_t c = 0; c < static_cast<std::int64_t>(to.size()); ++c) {
    if (before == outer) {
      std::int64_t after = 1;
      for (std::int64_t a = c + 1; a < static_cast<std::int64_t>(to.size()); ++a) after *= to[a];
      if (after > 0 && block % after == 0 && to[c] % ranks == 0 && to[c] * after == from[cut] * inner) return c;
    }
    before *= to[c];
  }
  return std::nullopt;
}

// Where a reduction over `ax` leaves an operand's cut axis.
struct cut_after_reduction {
  bool reduced = false;
  std::int64_t axis = 0;
};
inline cut_after_reduction reduce_cut(const axes& ax, bool keepdims, std::int64_t rank, std::int64_t cut) {
  cut_after_reduction out{ax.is_all(), cut};
  for (std::int64_t a : ax) {
    const std::int64_t axis = a < 0 ? a + rank : a;
    if (axis == cut) out.reduced = true;
    if (axis < cut && !keepdims) --out.axis;
  }
  return out;
}

struct sharded_value {
  any_tensor value;
  layout where;
  std::string made_by;
};

template <class T>
tensor<T> make_scalar_tensor(T v) {
  tensor<T> t(shape{});
  t.data()[0] = v;
  return t;
}

// Runs one traced graph on this rank's blocks, each value once.
class shard_evaluator {
 public:
  shard_evaluator(std::vector<any_tensor> blocks, std::vector<layout> layouts, const parameter_plan& plan,
                  const communicator& comm, shard_statistics& stats)
      : blocks_(std::move(blocks)), layouts_(std::move(layouts)), plan_(plan), comm_(comm), stats_(stats) {}

  template <class N>
  sharded_value& evaluate(const sym<N>& s) {
    const void* key = tandem::detail::key_of(s);
    if (auto found = memo_.find(key); found != memo_.end()) return found->second;
    sharded_value v = compute(s);
    return memo_.emplace(key, std::move(v)).first->second;
  }

  // v's value in layout `to`. A partial sum is summed once for all its
  // readers: v becomes the sum (reduce-scattered where `to` is a block).
  template <class T>
  tensor<T> read(sharded_value& v, const layout& to) {
    if (v.where.is_partial()) {
      const layout summed = to.is_split() ? to : layout::replicated();
      v.value = relayout(std::get<tensor<T>>(v.value), v.where, summed, comm_, stats_, v.made_by);
      v.where = summed;
    }
    return relayout(std::get<tensor<T>>(v.value), v.where, to, comm_, stats_, v.made_by);
  }

 private:
  template <class N>
  sharded_value compute(const sym<N>& s) {
    static_assert(can_shard<N>,
                  "tandem::dist::shard: a graph with cond, while_loop, fori_loop or scan cannot be sharded yet; "
                  "shard the parts around the loop");
    using traits = node_traits<N>;
    using T = value_of_t<N>;
    const N& node = s.node();
    if constexpr (traits::is_input) {
      return {blocks_[traits::index], layouts_[traits::index], "input " + std::to_string(traits::index)};
    } else if constexpr (traits::is_constant) {
      return {make_scalar_tensor<T>(node.value), layout::replicated(), "a scalar"};
    } else if constexpr (traits::is_captured) {
      if (const parameter_plan::entry* planned = plan_.find(node.value)) {
        const std::string name = "parameter '" + planned->name + "'";
        const layout where = layout_of(planned->cut, node.value.shape(), name, comm_.size());
        return {where.is_split() ? block_of(entering_cut(node.value, comm_), where.axis, comm_) : node.value, where,
                name};
      }
      return {node.value, layout::replicated(), "a captured tensor"};
    } else if constexpr (traits::is_map) {
      return compute_map(s);
    } else if constexpr (traits::is_summation) {
      return compute_summation(node);
    } else if constexpr (traits::is_matrix_product) {
      return compute_product(node);
    } else if constexpr (is_extreme<typename N::fn_type>) {
      return compute_extreme(node);
    } else if constexpr (is_softmax<typename N::fn_type>) {
      return compute_softmax(node);
    } else if constexpr (moves_axes<typename N::fn_type>) {
      return compute_axes_moved(node);
    } else if constexpr (keeps_order<typename N::fn_type>) {
      return compute_reshaped(node);
    } else {
      return compute_whole(node);
    }
  }

  // The leaves of the elementwise region at s (graph/region.hpp), read in
  // one layout: each leaf cut along the first cut leaf's axis (counted from
  // the last, which broadcasting keeps), or whole where it broadcasts
  // along it or none is cut.
  template <class N>
  struct region_operands {
    typename tandem::detail::region_leaf_types<N>::type tensors;
    std::int64_t rank = 0;
    layout where;
  };
  template <class N>
  region_operands<N> read_region(const sym<N>& s) {
    std::array<sharded_value*, tandem::detail::region_leaves<N>> leaves{};
    std::size_t next = 0;
    tandem::detail::for_each_region_leaf(s, [&](const auto& leaf) { leaves[next++] = &evaluate(leaf); });
    auto rank_of = [](const sharded_value& v) { return std::visit([](const auto& t) { return t.dim(); }, v.value); };
    region_operands<N> out;
    std::optional<std::int64_t> cut_from_last;
    for (const sharded_value* leaf : leaves) {
      out.rank = std::max(out.rank, rank_of(*leaf));
      if (!cut_from_last && leaf->where.is_split()) cut_from_last = rank_of(*leaf) - leaf->where.axis;
    }
    auto operand = [&]<class V>(std::type_identity<tensor<V>>, sharded_value& leaf) -> tensor<V> {
      if (!cut_from_last) return read<V>(leaf, layout::replicated());
      const std::int64_t axis = rank_of(leaf) - *cut_from_last;
      if (leaf.where == layout::split(axis)) return std::get<tensor<V>>(leaf.value);
      tensor<V> whole = read<V>(leaf, layout::replicated());
      if (axis < 0 || whole.shape()[axis] == 1) return entering_cut(whole, comm_);
      return relayout(whole, layout::replicated(), layout::split(axis), comm_, stats_, leaf.made_by);
    };
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((std::get<K>(out.tensors) =
            operand(std::type_identity<std::tuple_element_t<K, decltype(out.tensors)>>{}, *leaves[K])),
       ...);
    }(std::make_index_sequence<tandem::detail::region_leaves<N>>{});
    out.where = cut_from_last ? layout::split(out.rank - *cut_from_last) : layout::replicated();
    return out;
  }

  // `then` of the region at s over its operands: one op eagerly, more as
  // one fused loop.
  template <class N, class Then>
  auto run_region(const sym<N>& s, region_operands<N>& operands, Then then) {
    return std::apply(
        [&](const auto&... leaves) {
          if constexpr (tandem::detail::region_ops<N> == 1) {
            return then(tandem::detail::rebuild_region<0>(s, std::forward_as_tuple(leaves...)));
          } else {
            if (jit_enabled()) ++stats_.fused_regions;
            return tandem::detail::run_region(s, std::move(then), leaves...);
          }
        },
        operands.tensors);
  }

  // An elementwise region: its value follows its operands' layout.
  template <class N>
  sharded_value compute_map(const sym<N>& s) {
    region_operands<N> operands = read_region(s);
    auto out = run_region(s, operands, [](const auto& v) { return v; });
    return {std::move(out), operands.where, node_traits<N>::op::name};
  }

  // sum and mean: each rank reduces its block (with the elementwise region
  // that feeds it, in one loop). Over the cut axis that is a part of the
  // whole sum (a mean's part is divided by the ranks).
  template <class Fn, class T, class C>
  sharded_value compute_summation(const tandem::detail::apply_node<Fn, T, C>& node) {
    const auto& input = tandem::detail::operand_at<0>(node.children);
    tensor<T> local;
    layout from;
    std::int64_t rank = 0;
    if constexpr (node_traits<C>::is_map) {
      region_operands<C> operands = read_region(input);
      local = run_region(input, operands, [fn = node.fn](const auto& v) {
        if constexpr (Fn::is_mean) return tandem::mean(v, fn.ax, fn.keepdims);
        else return tandem::sum(v, fn.ax, fn.keepdims);
      });
      from = operands.where;
      rank = operands.rank;
    } else {
      sharded_value& x = evaluate(input);
      const auto& block = std::get<tensor<value_of_t<C>>>(x.value);
      local = node.fn(block);
      from = x.where;
      rank = block.dim();
    }
    if (!from.is_split()) return {std::move(local), from, node.name};
    const cut_after_reduction cut = reduce_cut(node.fn.ax, node.fn.keepdims, rank, from.axis);
    if (cut.reduced) {
      if constexpr (Fn::is_mean) local = local / static_cast<T>(comm_.size());
      return {std::move(local), layout::partial(), node.name};
    }
    return {std::move(local), layout::split(cut.axis), node.name};
  }

  // max and min: over the cut axis, each rank's extreme of its block, then
  // the extreme of those over the ranks.
  template <class Fn, class T, class C>
  sharded_value compute_extreme(const tandem::detail::apply_node<Fn, T, C>& node) {
    using X = value_of_t<C>;
    sharded_value& x = evaluate(tandem::detail::operand_at<0>(node.children));
    if (x.where.is_partial()) read<X>(x, layout::replicated());
    const tensor<X>& block = std::get<tensor<X>>(x.value);
    tensor<T> local = node.fn(block);
    if (!x.where.is_split()) return {std::move(local), x.where, node.name};
    const cut_after_reduction cut = reduce_cut(node.fn.ax, node.fn.keepdims, block.dim(), x.where.axis);
    if (!cut.reduced) return {std::move(local), layout::split(cut.axis), node.name};
    ++stats_.all_reduces;
    stats_.collectives.push_back(std::string("all_reduce (") + node.name + ") after " + node.name + " " +
                                 to_string(local.shape()));
    const reduce_op op = std::is_same_v<Fn, tandem::detail::extreme_reduction<true>> ? reduce_op::max : reduce_op::min;
    tensor<T> extreme = all_reduce(local.detach().clone(), op, comm_).wait();
    if constexpr (std::is_floating_point_v<T>) extreme = recorded_as(extreme_over_ranks_op{comm_}, extreme, local);
    return {std::move(extreme), layout::replicated(), node.name};
  }

  // softmax and log_softmax: along a kept axis, on the block; along the
  // cut one, on the whole.
  template <class Fn, class T, class C>
  sharded_value compute_softmax(const tandem::detail::apply_node<Fn, T, C>& node) {
    using X = value_of_t<C>;
    sharded_value& x = evaluate(tandem::detail::operand_at<0>(node.children));
    if (x.where.is_partial()) read<X>(x, layout::replicated());
    const std::int64_t rank = std::get<tensor<X>>(x.value).dim();
    const std::int64_t axis = node.fn.axis < 0 ? node.fn.axis + rank : node.fn.axis;
    if (x.where.is_split() && x.where.axis != axis)
      return {node.fn(std::get<tensor<X>>(x.value)), x.where, node.name};
    return {node.fn(read<X>(x, layout::replicated())), layout::replicated(), node.name};
  }

  // transpose and permute move the cut axis with the others (a partial sum
  // stays one: they are linear).
  template <class Fn, class T, class C>
  sharded_value compute_axes_moved(const tandem::detail::apply_node<Fn, T, C>& node) {
    using X = value_of_t<C>;
    sharded_value& x = evaluate(tandem::detail::operand_at<0>(node.children));
    const tensor<X>& block = std::get<tensor<X>>(x.value);
    tensor<T> moved = node.fn(block);
    if (!x.where.is_split()) return {std::move(moved), x.where, node.name};
    const std::int64_t rank = block.dim();
    auto normal = [rank](std::int64_t a) { return a < 0 ? a + rank : a; };
    std::int64_t axis = x.where.axis;
    if constexpr (std::is_same_v<Fn, tandem::detail::axes_swap>) {
      if (axis == normal(node.fn.first)) axis = normal(node.fn.second);
      else if (axis == normal(node.fn.second)) axis = normal(node.fn.first);
    } else {
      for (std::size_t i = 0; i < node.fn.order.size(); ++i)
        if (normal(node.fn.order[i]) == x.where.axis) axis = static_cast<std::int64_t>(i);
    }
    return {std::move(moved), layout::split(axis), node.name};
  }

  // matmul of [..., m, k] by [..., k, n].
  template <class Fn, class T, class A, class B>
  sharded_value compute_product(const tandem::detail::apply_node<Fn, T, A, B>& node) {
    using TA = value_of_t<A>;
    using TB = value_of_t<B>;
    sharded_value& a = evaluate(tandem::detail::operand_at<0>(node.children));
    sharded_value& b = evaluate(tandem::detail::operand_at<1>(node.children));
    const std::int64_t ra = std::visit([](const auto& t) { return t.dim(); }, a.value);
    const std::int64_t rb = std::visit([](const auto& t) { return t.dim(); }, b.value);
    const layout whole = layout::replicated();
    // A product is linear in each factor: a partial factor times a whole
    // one is a partial product.
    if (a.where.is_partial() && b.where == whole)
      return {node.fn(std::get<tensor<TA>>(a.value), entering_cut(std::get<tensor<TB>>(b.value), comm_)),
              layout::partial(), node.name};
    if (b.where.is_partial() && a.where == whole)
      return {node.fn(entering_cut(std::get<tensor<TA>>(a.value), comm_), std::get<tensor<TB>>(b.value)),
              layout::partial(), node.name};
    if (ra < 2 || rb < 2)
      return {node.fn(read<TA>(a, whole), read<TB>(b, whole)), whole, node.name};
    tensor<TA> ta = read<TA>(a, a.where.is_partial() ? whole : a.where);
    layout la = a.where.is_partial() ? whole : a.where;
    tensor<TB> tb = read<TB>(b, b.where.is_partial() ? whole : b.where);
    layout lb = b.where.is_partial() ? whole : b.where;
    const std::int64_t ro = std::max(ra, rb);
    // A whole factor is cut by each rank where the product needs its block,
    // and else read whole by work whose result is cut or partial.
    auto cut = [&](auto& t, layout& where, std::int64_t axis, const std::string& what) {
      if (axis < 0 || t.shape()[axis] == 1) return;
      t = relayout(t, whole, layout::split(axis), comm_, stats_, what);
      where = layout::split(axis);
    };
    auto product = [&](const layout& out) -> sharded_value {
      return {node.fn(la == whole ? entering_cut(ta, comm_) : ta, lb == whole ? entering_cut(tb, comm_) : tb), out,
              node.name};
    };
    // The pairs of layouts a product keeps without moving a block between
    // ranks; any other pair first gathers b whole.
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (la == whole && lb == whole) return {node.fn(ta, tb), whole, node.name};
      if (la.is_split() && lb == whole) {
        if (la.axis == ra - 1) {
          cut(tb, lb, rb - 2, b.made_by);
          return product(layout::partial());
        }
        if (la.axis == ra - 2) return product(layout::split(ro - 2));
        const layout out = layout::split(la.axis + ro - ra);
        cut(tb, lb, la.axis + rb - ra, b.made_by);
        return product(out);
      }
      if (la == whole && lb.is_split()) {
        if (lb.axis == rb - 1) return product(layout::split(ro - 1));
        if (lb.axis == rb - 2) {
          cut(ta, la, ra - 1, a.made_by);
          return product(layout::partial());
        }
        const layout out = layout::split(lb.axis + ro - rb);
        cut(ta, la, lb.axis + ra - rb, a.made_by);
        return product(out);
      }
      if (la.is_split() && lb.is_split()) {
        if (la.axis == ra - 1 && lb.axis == rb - 2) return {node.fn(ta, tb), layout::partial(), node.name};
        if (la.axis < ra - 2 && la.axis + ro - ra == lb.axis + ro - rb)
          return {node.fn(ta, tb), layout::split(la.axis + ro - ra), node.name};
      }
      tb = relayout(tb, lb, whole, comm_, stats_, b.made_by);
      lb = whole;
    }
    throw error("tandem::dist::shard: no layout found for matmul");
  }

  // reshape, flatten, squeeze and unsqueeze: each rank reshapes its block
  // where it is a block of the result (a partial sum stays one).
  template <class Fn, class T, class C>
  sharded_value compute_reshaped(const tandem::detail::apply_node<Fn, T, C>& node) {
    using X = value_of_t<C>;
    sharded_value& x = evaluate(tandem::detail::operand_at<0>(node.children));
    const tensor<X>& block = std::get<tensor<X>>(x.value);
    if (!x.where.is_split()) return {node.fn(block), x.where, node.name};
    shape whole = block.shape();
    whole[x.where.axis] *= comm_.size();
    shape to = node.fn.result_shape(whole);
    if (auto cut = cut_after_reshape(whole, x.where.axis, to, comm_.size())) {
      to[*cut] /= comm_.size();
      return {block.reshape(to), layout::split(*cut), node.name};
    }
    return {node.fn(read<X>(x, layout::replicated())), layout::replicated(), node.name};
  }

  // Any other op runs on whole operands, the same on every rank.
  template <class Fn, class T, class... C>
  sharded_value compute_whole(const tandem::detail::apply_node<Fn, T, C...>& node) {
    std::array<sharded_value*, sizeof...(C)> children = tandem::detail::apply_operands(
        [&](const auto&... c) { return std::array<sharded_value*, sizeof...(C)>{&evaluate(c)...}; }, node.children);
    auto out = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return node.fn(read<value_of_t<C>>(*children[K], layout::replicated())...);
    }(std::index_sequence_for<C...>{});
    return {std::move(out), layout::replicated(), node.name};
  }

  std::vector<any_tensor> blocks_;
  std::vector<layout> layouts_;
  const parameter_plan& plan_;
  const communicator& comm_;
  shard_statistics& stats_;
  std::unordered_map<const void*, sharded_value> memo_;
};

}  // namespace tandem::dist::detail
