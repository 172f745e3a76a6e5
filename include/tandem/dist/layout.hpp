#pragma once
// How a value of a sharded graph (dist/shard.hpp) lies over the ranks, and
// the collectives that move it from one layout to another.
//
// A strategy is MindSpore's: how many parts each axis of a tensor is cut
// into, (ranks, 1) cutting the rows of a matrix over all ranks and (1, 1),
// or {}, keeping it whole on every rank. A value is then
//   replicated  whole on every rank;
//   split       cut along one axis into equal blocks, rank r holding the
//               r-th (the order all_gather concatenates in);
//   partial     a sum over the ranks of what each holds (a product over a
//               split contracted axis), summed when a reader needs it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/record.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/collectives.hpp"
#include "tandem/dist/communicator.hpp"

namespace tandem::dist {

using strategy = std::vector<std::int64_t>;

// What a sharded call did: each collective it inserted, the blocks each
// rank cut from a whole value itself, and the loops it fused.
struct shard_statistics {
  std::int64_t all_reduces = 0, all_gathers = 0, reduce_scatters = 0, local_slices = 0;
  // Elementwise regions of two ops or more, each run as one fused loop.
  std::int64_t fused_regions = 0;
  // One line per collective: which one, after which op, on what shape.
  std::vector<std::string> collectives;
};

namespace detail {

struct layout {
  enum class kind { replicated, split, partial };
  kind what = kind::replicated;
  std::int64_t axis = 0;

  static layout replicated() { return {}; }
  static layout split(std::int64_t axis) { return {kind::split, axis}; }
  static layout partial() { return {kind::partial, 0}; }
  bool is_split() const { return what == kind::split; }
  bool is_partial() const { return what == kind::partial; }
  bool operator==(const layout&) const = default;
};

inline std::string describe(const strategy& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// The layout a strategy gives a tensor of shape `whole` (`what` names the
// tensor in errors): every rank holds one block, so only one axis may be
// cut, into as many parts as there are ranks, and evenly.
inline layout layout_of(const strategy& s, const shape& whole, const std::string& what, int ranks) {
  const std::string where = "tandem::dist::shard: " + what + " of shape " + to_string(whole) + " has strategy " +
                            describe(s);
  if (s.empty()) return layout::replicated();
  if (static_cast<std::int64_t>(s.size()) != static_cast<std::int64_t>(whole.size()))
    throw shape_error(where + ", which names " + std::to_string(s.size()) + " axes instead of " +
                      std::to_string(whole.size()));
  layout found;
  for (std::size_t a = 0; a < s.size(); ++a) {
    if (s[a] < 1) throw shape_error(where + ": an axis is cut into at least one part");
    if (s[a] == 1) continue;
    if (found.is_split())
      throw shape_error(where + ", which cuts two axes; a tensor is cut along one axis, over all " +
                        std::to_string(ranks) + " ranks");
    if (s[a] != ranks)
      throw shape_error(where + ", which cuts axis " + std::to_string(a) + " into " + std::to_string(s[a]) +
                        " parts; a cut axis has one part per rank, " + std::to_string(ranks) + " here");
    if (whole[a] % ranks != 0)
      throw shape_error(where + ": axis " + std::to_string(a) + " does not cut into " + std::to_string(ranks) +
                        " equal parts");
    found = layout::split(static_cast<std::int64_t>(a));
  }
  return found;
}

// This rank's block of a whole tensor cut along `axis`.
template <class T>
tensor<T> block_of(const tensor<T>& whole, std::int64_t axis, const communicator& comm) {
  const std::int64_t length = whole.shape()[axis] / comm.size();
  return whole.take(axis, comm.rank() * length, length);
}

// The order that brings `axis` to the front, and the one that undoes it.
inline std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> axis_to_front(std::int64_t axis,
                                                                                     std::int64_t rank) {
  std::vector<std::int64_t> there{axis}, back(static_cast<std::size_t>(rank));
  for (std::int64_t a = 0; a < rank; ++a)
    if (a != axis) there.push_back(a);
  for (std::int64_t a = 0; a < rank; ++a) back[static_cast<std::size_t>(there[static_cast<std::size_t>(a)])] = a;
  return {there, back};
}

// The whole tensor from the ranks' blocks along `axis`.
template <class T>
tensor<T> gather_along(const tensor<T>& block, std::int64_t axis, const communicator& comm) {
  auto [there, back] = axis_to_front(axis, block.dim());
  tensor<T> whole = all_gather(block.permute(there).contiguous(), comm).wait();
  return whole.permute(back);
}

// The ranks' values summed, this rank keeping its block along `axis`.
template <class T>
tensor<T> reduce_scatter_along(const tensor<T>& value, std::int64_t axis, const communicator& comm) {
  auto [there, back] = axis_to_front(axis, value.dim());
  tensor<T> block = reduce_scatter(value.permute(there).contiguous(), reduce_op::sum, comm).wait();
  return block.permute(back);
}

// The moves as ops that autograd records, so that gradients flow through a
// sharded graph. Each rank's backward runs their derivatives in the same
// order as every other rank's, so the collectives in them pair up as the
// forward's did. A whole value's gradient is, on every rank, the whole
// true gradient; a cut value's, the true gradient's block; a partial
// sum's, the true gradient of the sum (whole). Hence, with Megatron-LM's
// pairs of conjugate operators:
//
//   forward                          backward
//   partial -> whole (all_reduce)    the identity
//   partial -> cut (reduce_scatter)  all_gather
//   cut -> whole (all_gather)        this rank's block
//   a whole value read by work whose all_reduce: the ranks' parts of its
//     result is cut or partial       gradient summed

struct sum_over_ranks_op {
  static constexpr const char* name = "dist::shard (all_reduce)";
  static constexpr bool saves_inputs = false;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return g;
  }
};

// reduce_scatter (a partial sum to blocks) and all_gather (blocks to the
// whole) along an axis: each one's derivative is the other's move.
template <bool Gathers>
struct along_ranks_op {
  static constexpr const char* name = Gathers ? "dist::shard (all_gather)" : "dist::shard (reduce_scatter)";
  static constexpr bool saves_inputs = false;
  std::int64_t axis;
  communicator comm;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    no_grad plain;
    if constexpr (Gathers) return block_of(g, axis, comm).contiguous();
    else return gather_along(g, axis, comm).contiguous();
  }
};

// max or min over the ranks of each rank's extreme: the gradient goes to
// the ranks that hold the extreme, shared among them where several do.
struct extreme_over_ranks_op {
  static constexpr const char* name = "dist::shard (all_reduce max/min)";
  static constexpr bool saves_output = true;
  communicator comm;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y& y, const X& x) const {
    no_grad plain;
    using T = typename X::value_type;
    const tensor<T> holds = (x == y).template astype<T>();
    const tensor<T> holders = all_reduce(holds.clone(), reduce_op::sum, comm).wait();
    return g * holds / holders;
  }
};

struct enter_cut_op {
  static constexpr const char* name = "dist::shard (a whole value read by cut work)";
  static constexpr bool saves_inputs = false;
  communicator comm;
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    no_grad plain;
    return all_reduce(g.clone(), reduce_op::sum, comm).wait();
  }
};

// `result` (computed from x without recording) recorded as op(x).
template <class Op, class T>
tensor<T> recorded_as(const Op& op, tensor<T> result, const tensor<T>& x) {
  tandem::detail::record(op, result, x);
  return result;
}

// x, whose gradient the ranks sum: for a whole value that work whose result
// is cut or partial reads. The same tensor when nothing records.
template <class T>
tensor<T> entering_cut(const tensor<T>& x, const communicator& comm) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!is_grad_enabled() || !x.requires_grad()) return x;
    return recorded_as(enter_cut_op{comm}, x.detach(), x);
  } else {
    return x;
  }
}

// Moves a value between layouts, counting what it sends (`after` names the
// op that made the value); the value given is left as it was. Recorded
// for autograd where the value requires a gradient.
template <class T>
tensor<T> relayout(const tensor<T>& value, const layout& from, const layout& to, const communicator& comm,
                   shard_statistics& stats, const std::string& after) {
  if (from == to) return value;
  auto note = [&](const char* collective, std::int64_t& count) {
    ++count;
    stats.collectives.push_back(std::string(collective) + " after " + after + " " + to_string(value.shape()));
  };
  const tensor<T> plain = value.detach();
  if (from.is_partial()) {
    if (to.is_split() && value.shape()[to.axis] % comm.size() == 0) {
      note("reduce_scatter", stats.reduce_scatters);
      return recorded_as(along_ranks_op<false>{to.axis, comm},
                         reduce_scatter_along(plain, to.axis, comm).contiguous(), value);
    }
    note("all_reduce", stats.all_reduces);
    // A copy: the partial value may have other readers.
    tensor<T> summed = recorded_as(sum_over_ranks_op{}, all_reduce(plain.clone(), reduce_op::sum, comm).wait(), value);
    return relayout(summed, layout::replicated(), to, comm, stats, after);
  }
  if (from.is_split()) {
    note("all_gather", stats.all_gathers);
    tensor<T> whole =
        recorded_as(along_ranks_op<true>{from.axis, comm}, gather_along(plain, from.axis, comm).contiguous(), value);
    return relayout(whole, layout::replicated(), to, comm, stats, after);
  }
  if (to.is_split()) {
    if (value.shape()[to.axis] % comm.size() != 0)
      throw shape_error("tandem::dist::shard: the value of " + after + " of shape " + to_string(value.shape()) +
                        " does not cut along axis " + std::to_string(to.axis) + " into " +
                        std::to_string(comm.size()) + " equal parts");
    ++stats.local_slices;
    return block_of(entering_cut(value, comm), to.axis, comm);
  }
  throw error("tandem::dist::shard: a partial sum is made by the graph, never asked for");
}

}  // namespace detail
}  // namespace tandem::dist
