#pragma once
// Which plan a call runs. The plan by class (structure.hpp) computes a
// data-holding class read through several slots once, in registers: right
// when every slot reads one value (`h * h`, or `y + 2` written at two
// places: two nodes holding equal data), wrong when the program made two
// different values of one type (`a * 2 + a * 3`, or two blocks of one
// module type with their own parameters). The type cannot tell these
// apart; the traced nodes can. One walk over them compares each further
// instance of such a class with the first: by address, then by value
// (scalars bit for bit, captured tensors by identity, operands alike; a
// non-elementwise node by address only, its arguments being opaque). Where
// two differ, the call runs the plan by instance, which computes each
// instance of such a class into a buffer of its own, or eagerly (see
// has_instance_plan).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tandem/detail/small_vector.hpp"
#include "tandem/graph/structure.hpp"

namespace tandem::detail {

template <class Root>
class sharing_check {
 public:
  explicit sharing_check(const Root& root) {
    apply_operands([&](const auto&... out) { (visit(out), ...); }, root.children);
  }
  bool fits() const { return fits_; }

 private:
  using classes = all_classes<Root>;

  // Each traced node once: the first of its class by the table, any
  // further one by the list (found only where a program built one type at
  // several places, so it stays short).
  template <class N>
  void visit(const sym<N>& s) {
    if constexpr (!is_pure<N> && arity_v<N> > 0) {
      if (!fits_) return;
      const void* at = s.identity();
      const void*& first = first_[position_in<classes, N>];
      if (first == at) return;
      if (first != nullptr) {
        if constexpr (shared_in_registers_v<Root, N>) {
          // An equal value's operands are the first's, or equal to them.
          fits_ = same_node(*static_cast<const N*>(first), s.node());
          return;
        }
        for (const void* seen : further_)
          if (seen == at) return;
        further_.push_back(at);
      } else {
        first = at;
      }
      apply_operands([&](const auto&... c) { (visit(c), ...); }, s.node().children);
    }
  }

  template <class N>
  bool same_value(const sym<N>& a, const sym<N>& b) {
    if constexpr (is_pure<N>) return true;
    else return a.identity() == b.identity() || same_node(a.node(), b.node());
  }

  template <class N>
  bool same_node(const N& a, const N& b) {
    if constexpr (node_traits<N>::is_constant) {
      return std::memcmp(&a.value, &b.value, sizeof a.value) == 0;
    } else if constexpr (node_traits<N>::is_captured) {
      return a.value.storage() == b.value.storage() && a.value.data() == b.value.data() &&
             a.value.shape() == b.value.shape() && std::ranges::equal(a.value.strides(), b.value.strides()) &&
             a.value.autograd() == b.value.autograd();
    } else if constexpr (node_traits<N>::is_map) {
      // Pairs found equal are remembered: two equal copies of a graph that
      // reads its values twice are compared once per node, not per path.
      for (const node_pair& known : equal_pairs_)
        if (known.a == &a && known.b == &b) return true;
      bool equal = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return (same_value(operand_at<K>(a.children), operand_at<K>(b.children)) && ...);
      }(std::make_index_sequence<arity_v<N>>{});
      if (equal) equal_pairs_.push_back({&a, &b});
      return equal;
    } else {
      return false;
    }
  }

  std::array<const void*, list_size_v<classes>> first_{};
  small_vector<const void*, 8> further_;
  struct node_pair {
    const void* a;
    const void* b;
  };
  small_vector<node_pair, 8> equal_pairs_;
  bool fits_ = true;
};

// Whether a class's value depends on a tensor some node holds: a captured
// tensor, or a non-elementwise op, at it or below it.
template <class N>
inline constexpr bool holds_tensors_v =
    node_traits<N>::is_captured || node_traits<N>::is_apply ||
    []<class... C>(std::tuple<C...>*) { return (holds_tensors_v<C> || ...); }(static_cast<children_of<N>*>(nullptr));

// Whether the graph compiles the plan by instance: some class that the
// plan by class shares holds tensors, as the blocks of one module type do,
// each with its own parameters (`first(x) + second(x)`). Where the shared
// classes hold scalars only, a call whose values differ (`a * 2 + a * 3`)
// runs eagerly instead: a second plan for every graph that reads a
// scalar-holding value twice cost 30% more compile time
// (docs/benchmarks/cpu_kernels.md), for graphs a rewrite makes one value.
template <class Root>
inline constexpr bool has_instance_plan = []<class... C>(seen_list<C...>*) {
  return ((shared_in_registers_v<Root, C> && holds_tensors_v<C>) || ...);
}(static_cast<all_classes<Root>*>(nullptr));

// f(std::type_identity<Plan>{}), Plan being the root type whose passes fit
// this traced graph: the graph's own (by class) wherever they hold, else
// by_instance_t of it where the graph has that plan; else eager().
template <class Root, class F, class Eager>
auto with_plan(const Root& root, F&& f, Eager&& eager) {
  if constexpr (has_shared_data_classes<Root>) {
    if (!sharing_check<Root>(root).fits()) {
      if constexpr (has_instance_plan<Root>) return f(std::type_identity<by_instance_t<Root>>{});
      else return eager();
    }
  }
  return f(std::type_identity<Root>{});
}

}  // namespace tandem::detail
