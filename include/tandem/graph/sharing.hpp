#pragma once
// Whether a traced graph's values fit the passes. The passes compute a
// scalar-holding class read through several slots once, in registers
// (structure.hpp): right when every slot reads one value (`h * h`, or
// `y + 2` written at two places: two nodes holding equal scalars), wrong
// when the program made two different values of one type (`a * 2 + a * 3`).
// The type cannot tell these apart; the traced nodes can. One walk over
// them compares each further instance of such a class with the first, by
// address, then by value (scalars bit for bit, operands alike). A graph
// whose values differ runs eagerly (static_graph.hpp): a second plan for
// the case cost every graph that reads a scalar-holding value twice 30%
// more compile time (docs/benchmarks/compile_time.md).

#include <array>
#include <cstddef>
#include <cstring>
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

// Whether every scalar-holding class the passes share has one value in
// this traced graph.
template <class Root>
bool one_value_per_shared_class(const Root& root) {
  if constexpr (has_shared_data_classes<Root>) return sharing_check<Root>(root).fits();
  else return true;
}

}  // namespace tandem::detail
