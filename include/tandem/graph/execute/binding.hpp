#pragma once
// Binding a group for one run: its pure leaves by class, its scalars and
// tensor leaves by the slot that reads them.

#include "tandem/graph/execute/executor.hpp"

namespace tandem::detail {

// Binds the group's scalars and tensor leaves, walking from its root
// through the data-holding classes inside it. Each has one value here
// (graph/sharing.hpp), so a class read through several slots is entered
// from the first: the walk visits each class once, however often
// the graph reads it (binding `h * h` per slot would take 2^n steps for n
// such steps).
// The operand at position Skip (a matmul with an epilogue) is not run: its
// operands go to `product`. The kernel and operand types are deduced,
// never spelled from R: GCC 12 matches a parameter spelled
// `group_kernel<Root, R>&` against its argument by walking both types'
// arguments as trees, which costs time exponential in the depth of the
// graph.
template <class Root, class Inputs, bool OnDevice>
template <std::size_t Skip, class P, class Kernel, class Operands, class Product>
void executor<Root, Inputs, OnDevice>::bind_group(const sym<P>& p, Kernel& kernel, Operands& operands, operand_keys& keys,
                                        Product& product) {
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (bind_slot<Skip, P, K>(operand_at<K>(p.node().children), kernel, operands, keys, product), ...);
  }(std::make_index_sequence<arity_v<P>>{});
}

template <class Root, class Inputs, bool OnDevice>
template <std::size_t Skip, class P, std::size_t K, class C, class Kernel, class Operands, class Product>
void executor<Root, Inputs, OnDevice>::bind_slot(const sym<C>& c, Kernel& kernel, Operands& operands, operand_keys& keys,
                                       Product& product) {
  if constexpr (fused_into_parent<Root, C>()) {
    using layout = typename Kernel::layout;
    if constexpr (!is_pure<C> &&
                  layout::template slot_of_class<P, K> == layout::table.first_fused_read[layout::template index_of<C>])
      bind_group<Skip>(c, kernel, operands, keys, product);
  } else if constexpr (node_traits<C>::is_constant) {
    constexpr std::size_t s = Kernel::layout::template slot_of_class<P, K>;
    kernel.constants[Kernel::layout::table.position[s]] = static_cast<typename Kernel::compute_type>(c.node().value);
  } else if constexpr (!is_pure<C>) {
    constexpr std::size_t s = Kernel::layout::template slot_of_class<P, K>;
    constexpr std::size_t at = Kernel::n_pure + Kernel::layout::table.position[s];
    keys[at] = key_of(c);
    if constexpr (at == Skip) {
      product.a = value_or_input(operand_at<0>(c.node().children));
      product.b = value_or_input(operand_at<1>(c.node().children));
      product.key_a = key_of(operand_at<0>(c.node().children));
      product.key_b = key_of(operand_at<1>(c.node().children));
      if (for_backward_) {
        product.grad_a = needs_gradient(operand_at<0>(c.node().children));
        product.grad_b = needs_gradient(operand_at<1>(c.node().children));
      }
    } else {
      bind_operand(std::get<at>(operands), value_or_input(c));
    }
  }
}

// The group's scalars and leaves, bound for one run.
template <class Root, class Inputs, bool OnDevice>
template <std::size_t Skip, class R, class Kernel, class Operands, class Product>
void executor<Root, Inputs, OnDevice>::bind_leaves(const sym<R>& s, Kernel& kernel, Operands& operands, operand_keys& keys,
                                         Product& product) {
  keys = operand_keys(Kernel::n_operands, nullptr);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
      using L = typename Kernel::layout::template pure_leaf<J>;
      bind_operand(std::get<J>(operands), value_or_input(sym<L>{}));
      keys[J] = key_of(sym<L>{});
    };
    (one(std::integral_constant<std::size_t, I>{}), ...);
    (void)one;
  }(std::make_index_sequence<Kernel::n_pure>{});
  bind_group<Skip>(s, kernel, operands, keys, product);
}

// A group of pure leaves binds each graph input by reference and each other
// leaf by value, in one expression: copying the inputs into a tuple of
// tensors was about 400 of the 1,717 instructions of a cached call of
// jit(x + y), and default tensors assigned afterwards, as bind_leaves does,
// cost another 300.
template <class Root, class Inputs, bool OnDevice>
template <class Kernel>
auto executor<Root, Inputs, OnDevice>::pure_operands() {
  static_assert(Kernel::n_operands == Kernel::n_pure, "tandem internal: a group with data-holding leaves is bound by bind_leaves");
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<decltype(value_or_input(sym<typename Kernel::layout::template pure_leaf<I>>{}))...>{
        value_or_input(sym<typename Kernel::layout::template pure_leaf<I>>{})...};
  }(std::make_index_sequence<Kernel::n_pure>{});
}

// Their keys, which only a backward step reads.
template <class Root, class Inputs, bool OnDevice>
template <class Kernel>
operand_keys executor<Root, Inputs, OnDevice>::pure_keys() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return operand_keys{key_of(sym<typename Kernel::layout::template pure_leaf<I>>{})...};
  }(std::make_index_sequence<Kernel::n_pure>{});
}

}  // namespace tandem::detail
