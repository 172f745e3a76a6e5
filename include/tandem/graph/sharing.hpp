#pragma once
// Which plan a call runs. The plan by class (structure.hpp) computes a
// data-holding class read through several slots once, in registers: right
// when the program read one value twice (`h = x * y + 1; h * h`), wrong
// when it made two values of one type (`a * 2 + a * 3`: two products of one
// type, holding different scalars). The type cannot tell the two apart; the
// traced nodes can, by address. One walk over the traced values finds
// whether such a class has a second instance, and the call then runs the
// plan by instance, which computes each instance into a buffer of its own.

#include <array>
#include <cstddef>
#include <type_traits>

#include "tandem/detail/small_vector.hpp"
#include "tandem/graph/structure.hpp"

namespace tandem::detail {

template <class Root>
class instance_walk {
 public:
  explicit instance_walk(const Root& root) {
    apply_operands([&](const auto&... out) { (visit(out), ...); }, root.children);
  }
  // Whether every class that the plan by class computes in registers from
  // several slots has one runtime instance.
  bool one_instance_each() const { return one_instance_each_; }

 private:
  using classes = all_classes<Root>;

  // Each traced value once: the first instance of a class by the table,
  // any further one by the list (found only in graphs that made two values
  // of one type, so it stays short).
  template <class N>
  void visit(const sym<N>& s) {
    if constexpr (!is_pure<N> && arity_v<N> > 0) {
      if (!one_instance_each_) return;
      const void* at = s.identity();
      const void*& first = first_[position_in<classes, N>];
      if (first == at) return;
      if (first != nullptr) {
        if (shared_in_registers_v<Root, N>) {
          one_instance_each_ = false;
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

  std::array<const void*, list_size_v<classes>> first_{};
  small_vector<const void*, 8> further_;
  bool one_instance_each_ = true;
};

// f(std::type_identity<Plan>{}), Plan being the root type whose passes fit
// this traced graph: the graph's own (by class) wherever they hold, else
// by_instance_t of it.
template <class Root, class F>
auto with_plan(const Root& root, F&& f) {
  if constexpr (has_shared_data_classes<Root>) {
    if (!instance_walk<Root>(root).one_instance_each()) return f(std::type_identity<by_instance_t<Root>>{});
  }
  return f(std::type_identity<Root>{});
}

}  // namespace tandem::detail
