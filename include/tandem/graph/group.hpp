#pragma once
// The layout of one fused group, as a constexpr table: its classes (the
// elementwise classes computed in registers, children before parents, the
// group's root last) and, for every operand slot of those classes, where
// its value is found when the group runs:
//
//   fused     a register of the group (the child's class is in the group);
//   pure      a pure leaf, one operand per class however often it is read;
//   constant  a scalar of the group, one per slot;
//   tensor    a tensor operand, one per slot (nodes holding runtime data).
//
// The kernel (kernel.hpp) reads slots by these positions and the executor
// binds the leaves by them, so a group costs instantiations linear in its
// size.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tandem/graph/structure.hpp"

namespace tandem::detail {

// The walk over R's group (all_classes' walk, entering only children fused
// into their parent) gives its classes, children before parents, R last.
template <class Root>
struct walk_fused {
  template <class C>
  static constexpr bool enters = fused_into_parent<Root, C>();
};

enum class leaf_kind : unsigned char { fused, pure, constant, tensor };

template <std::size_t Classes, std::size_t Slots>
struct group_table {
  // Class I's operand slots are first_slot[I] up to first_slot[I + 1].
  std::array<std::size_t, Classes + 1> first_slot{};
  std::array<std::size_t, Slots> owner{};
  std::array<leaf_kind, Slots> kind{};
  // Within the group's registers, its pure leaves, scalars or tensors.
  std::array<std::size_t, Slots> position{};
  // Pure leaf J is class pure_class[J] of the graph; tensor leaf J is read
  // through slot tensor_slot[J].
  std::array<std::size_t, Slots> pure_class{};
  std::array<std::size_t, Slots> tensor_slot{};
  // The first slot reading class I in registers: a data-holding class read
  // through several slots is bound from that one.
  std::array<std::size_t, Classes> first_fused_read{};
  std::size_t pure = 0, constants = 0, tensors = 0;
};

template <class Root, class C>
constexpr leaf_kind leaf_kind_of() {
  if constexpr (fused_into_parent<Root, C>()) return leaf_kind::fused;
  else if constexpr (is_pure<C>) return leaf_kind::pure;
  else if constexpr (node_traits<C>::is_constant) return leaf_kind::constant;
  else return leaf_kind::tensor;
}

// Where slot child C is found: its class's position in the group's
// registers when fused, else its position among the graph's classes.
template <class Root, class Group, class C>
constexpr std::size_t class_position() {
  if constexpr (fused_into_parent<Root, C>()) return position_in<Group, C>;
  else return position_in<all_classes<Root>, C>;
}

template <class Root, class Group>
constexpr auto lay_out_group() {
  constexpr std::size_t classes = list_size_v<Group>;
  constexpr std::size_t slots =
      []<class... P>(seen_list<P...>*) { return (std::size_t{0} + ... + arity_v<P>); }(static_cast<Group*>(nullptr));
  group_table<classes, slots> table;
  table.first_fused_read.fill(slots);
  std::size_t s = 0, i = 0;
  auto place = [&](leaf_kind kind, std::size_t at) {
    table.owner[s] = i;
    table.kind[s] = kind;
    if (kind == leaf_kind::fused) {
      table.position[s] = at;
      if (table.first_fused_read[at] == slots) table.first_fused_read[at] = s;
    } else if (kind == leaf_kind::pure) {
      std::size_t j = 0;
      while (j < table.pure && table.pure_class[j] != at) ++j;
      if (j == table.pure) table.pure_class[table.pure++] = at;
      table.position[s] = j;
    } else if (kind == leaf_kind::constant) {
      table.position[s] = table.constants++;
    } else {
      table.tensor_slot[table.tensors] = s;
      table.position[s] = table.tensors++;
    }
    ++s;
  };
  for_each_type<Group>([&]<class P>(std::type_identity<P>) {
    table.first_slot[i] = s;
    [&]<class... C>(std::tuple<C...>*) {
      (place(leaf_kind_of<Root, C>(), class_position<Root, Group, C>()), ...);
    }(static_cast<children_of<P>*>(nullptr));
    ++i;
  });
  table.first_slot[classes] = s;
  return table;
}

template <class Root, class R>
struct group_layout {
  using classes = typename postorder<R, seen_list<>, walk_fused<Root>>::type;
  static constexpr auto table = lay_out_group<Root, classes>();

  static constexpr std::size_t n_classes = list_size_v<classes>;
  static constexpr std::size_t n_pure = table.pure;
  static constexpr std::size_t n_constants = table.constants;
  static constexpr std::size_t n_tensors = table.tensors;
  // The kernel's operands: the pure leaves, then the tensor leaves.
  static constexpr std::size_t n_operands = n_pure + n_tensors;

  template <std::size_t I>
  using class_at = type_at<classes, I>;
  template <class P>
  static constexpr std::size_t index_of = position_in<classes, P>;

  // Operand slot K of the group's class I (or of class P).
  template <std::size_t I, std::size_t K>
  static constexpr std::size_t slot_of = table.first_slot[I] + K;
  template <class P, std::size_t K>
  static constexpr std::size_t slot_of_class = table.first_slot[index_of<P>] + K;

  template <std::size_t J>
  using pure_leaf = type_at<all_classes<Root>, table.pure_class[J]>;
  // The node read through the slot of tensor leaf J.
  template <std::size_t J>
  using tensor_leaf = std::tuple_element_t<table.tensor_slot[J] - table.first_slot[table.owner[table.tensor_slot[J]]],
                                           children_of<class_at<table.owner[table.tensor_slot[J]]>>>;

  // The tensor leaf that is a matmul running this group as its epilogue,
  // or no_product.
  static constexpr std::size_t product = []<std::size_t... J>(std::index_sequence<J...>) {
    std::size_t found = no_product;
    ((found = found == no_product && runs_epilogue<Root, tensor_leaf<J>>() ? J : found), ...);
    return found;
  }(std::make_index_sequence<n_tensors>{});
};

}  // namespace tandem::detail
