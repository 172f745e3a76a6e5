#pragma once
// The fused kernel of one group: a plain struct (its only runtime state is
// the group's scalars) whose call operator computes the group's value from
// its leaves on registers, and whose `adjoints` runs the group's derivative
// rules backwards on the same registers. The CPU runs it with the one
// elementwise loop; a CUDA kernel can run it per element (it is annotated
// for host and device, and its layout is constexpr tables: group.hpp).

#include <array>
#include <cstddef>
#include <tuple>
#include <utility>

#include "tandem/autograd/derivative.hpp"
#include "tandem/graph/group.hpp"
#include "tandem/graph/lane.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"

namespace tandem::detail {

// Whether the op of class P has a derivative rule for values of type V.
template <class P, class V>
inline constexpr bool differentiable_v = []<class... C>(std::tuple<C...>*) {
  return has_derivative_rule<typename node_traits<P>::op, fused::lane<V>, std::conditional_t<true, fused::lane<V>, C>...>;
}(static_cast<children_of<P>*>(nullptr));

template <class V, std::size_t N>
struct value_with_adjoints {
  V value;
  std::array<V, N> adjoints;
};

template <class Root, class R>
struct group_kernel {
  using layout = group_layout<Root, R>;
  using group_class = R;
  using compute_type = typename R::compute_type;
  // Shape errors of the group name the op at its root.
  static constexpr const char* name = node_traits<R>::op::name;
  static constexpr bool flatten = true;

  static constexpr std::size_t n_classes = layout::n_classes;
  static constexpr std::size_t n_pure = layout::n_pure;
  static constexpr std::size_t n_constants = layout::n_constants;
  static constexpr std::size_t n_operands = layout::n_operands;
  static constexpr bool vectorizable = [] {
    bool all = true;
    for_each_type<typename layout::classes>(
        [&]<class P>(std::type_identity<P>) { all = all && fused::vectorizable<typename node_traits<P>::op>(); });
    return all;
  }();

  // The group's arithmetic, the sum of its ops' (kernels/cpu/elementwise.hpp:
  // whether its loop streams its output).
  static constexpr int instructions_per_batch = [] {
    int sum = 0;
    for_each_type<typename layout::classes>(
        [&]<class P>(std::type_identity<P>) { sum += op_instructions_per_batch<typename node_traits<P>::op>(); });
    return sum;
  }();

  // The first op of the group with no derivative rule (nullptr if none):
  // its group can run forward but cannot send a gradient back.
  static constexpr const char* non_differentiable = [] {
    const char* found = nullptr;
    for_each_type<typename layout::classes>([&]<class P>(std::type_identity<P>) {
      if (!found && std::is_floating_point_v<typename P::value_type> && !differentiable_v<P, compute_type>)
        found = node_traits<P>::op::name;
    });
    return found;
  }();

  // For each operand, the operand whose adjoint always equals its own:
  // itself, or, for the right side of an addition whose two sides are
  // operands read nowhere else, the left side. An addition hands its
  // gradient unchanged to both sides, so the backward pass of
  // relu(x W + b) need not write the same adjoint for the product and for
  // the bias (group_backward.hpp).
  static constexpr std::array<std::size_t, n_operands> adjoint_shared_with = [] {
    constexpr auto& table = layout::table;
    auto operand_read_by = [&](std::size_t slot) {
      if (table.kind[slot] == leaf_kind::pure) return table.position[slot];
      if (table.kind[slot] == leaf_kind::tensor) return n_pure + table.position[slot];
      return n_operands;
    };
    std::array<std::size_t, n_operands> shared{}, reads{};
    for (std::size_t j = 0; j < n_operands; ++j) shared[j] = j;
    for (std::size_t slot = 0; slot < table.first_slot[n_classes]; ++slot)
      if (const std::size_t j = operand_read_by(slot); j < n_operands) ++reads[j];
    std::size_t i = 0;
    for_each_type<typename layout::classes>([&]<class P>(std::type_identity<P>) {
      if constexpr (std::is_same_v<typename node_traits<P>::op, add_op>) {
        const std::size_t left = operand_read_by(table.first_slot[i]);
        const std::size_t right = operand_read_by(table.first_slot[i] + 1);
        if (left < n_operands && right < n_operands && left != right && reads[left] == 1 && reads[right] == 1)
          shared[right] = left;
      }
      ++i;
    });
    return shared;
  }();

  std::array<compute_type, n_constants> constants{};

  template <class V, class... Rest>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE V operator()(const V& first, const Rest&... rest) const {
    static_assert(1 + sizeof...(Rest) == n_operands);
    return values(std::array<V, n_operands>{first, rest...})[n_classes - 1];
  }

  // The gradients of the group's leaves (in operand order), given the
  // gradient g of its value.
  template <class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE std::array<V, n_operands> adjoints(
      const V& g, const std::array<V, n_operands>& in) const {
    return value_and_adjoints(g, in).adjoints;
  }

  // The group's value and its leaves' gradients, from one evaluation.
  template <class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE value_with_adjoints<V, n_operands> value_and_adjoints(
      const V& g, const std::array<V, n_operands>& in) const {
    std::array<V, n_classes> value = values(in);
    // Sums start from -0, not +0: -0 + g is g for every g, so the compiler
    // drops the first addition into each (most have only one). Filled
    // element by element, not by fill(): GCC kept a filled array on the
    // stack and ran a store loop per batch (the six-op gradient's row,
    // AVX2 on Zen 5: docs/benchmarks/cpu_kernels.md).
    std::array<V, n_classes> adjoint = filled<n_classes>(V(compute_type(-0.0)));
    std::array<V, n_operands> result = filled<n_operands>(V(compute_type(-0.0)));
    adjoint[n_classes - 1] = g;
    [&]<std::size_t... I>(std::index_sequence<I...>) TANDEM_INLINE_LAMBDA {
      (back<n_classes - 1 - I>(value, adjoint, result, in), ...);
    }(std::make_index_sequence<n_classes>{});
    return {value[n_classes - 1], result};
  }

  template <class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE std::array<V, n_classes> values(const std::array<V, n_operands>& in) const {
    std::array<V, n_classes> value;
    [&]<std::size_t... I>(std::index_sequence<I...>) TANDEM_INLINE_LAMBDA {
      ((value[I] = compute<I>(value, in)), ...);
    }(std::make_index_sequence<n_classes>{});
    return value;
  }

 private:
  template <std::size_t N, class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE static std::array<V, N> filled(const V& v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) TANDEM_INLINE_LAMBDA {
      return std::array<V, N>{((void)I, v)...};
    }(std::make_index_sequence<N>{});
  }

  // The value read through operand slot K of the group's class I.
  template <std::size_t I, std::size_t K, class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE V read(const std::array<V, n_classes>& value,
                                                 const std::array<V, n_operands>& in) const {
    constexpr std::size_t s = layout::template slot_of<I, K>;
    constexpr std::size_t at = layout::table.position[s];
    constexpr leaf_kind kind = layout::table.kind[s];
    if constexpr (kind == leaf_kind::fused) return value[at];
    else if constexpr (kind == leaf_kind::pure) return in[at];
    else if constexpr (kind == leaf_kind::constant) return V(constants[at]);
    else return in[n_pure + at];
  }

  template <std::size_t I, class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE V compute(const std::array<V, n_classes>& value,
                                                    const std::array<V, n_operands>& in) const {
    using P = typename layout::template class_at<I>;
    return [&]<std::size_t... K>(std::index_sequence<K...>) TANDEM_INLINE_LAMBDA {
      return fused::apply(typename node_traits<P>::op{}, read<I, K>(value, in)...);
    }(std::make_index_sequence<arity_v<P>>{});
  }

  template <std::size_t I, class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE void back(const std::array<V, n_classes>& value, std::array<V, n_classes>& adjoint,
                                                    std::array<V, n_operands>& result,
                                                    const std::array<V, n_operands>& in) const {
    using P = typename layout::template class_at<I>;
    if constexpr (std::is_floating_point_v<typename P::value_type> && differentiable_v<P, compute_type>) {
      [&]<std::size_t... K>(std::index_sequence<K...>) TANDEM_INLINE_LAMBDA {
        (send<P, I, K>(value, adjoint, result, in), ...);
      }(std::make_index_sequence<arity_v<P>>{});
    }
  }

  template <class P, std::size_t I, std::size_t K, class V>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE void send(const std::array<V, n_classes>& value,
                                                    std::array<V, n_classes>& adjoint, std::array<V, n_operands>& result,
                                                    const std::array<V, n_operands>& in) const {
    using C = std::tuple_element_t<K, children_of<P>>;
    if constexpr (std::is_floating_point_v<typename C::value_type> && !node_traits<C>::is_constant) {
      auto contribution = [&]<std::size_t... J>(std::index_sequence<J...>) TANDEM_INLINE_LAMBDA {
        return apply_rule<K>(typename node_traits<P>::op{}, fused::lane<V>{adjoint[I]}, fused::lane<V>{value[I]},
                             fused::lane<V>{read<I, J>(value, in)}...);
      }(std::make_index_sequence<arity_v<P>>{});
      V g = fused::value_of<V>(contribution);
      constexpr std::size_t s = layout::template slot_of<I, K>;
      constexpr std::size_t at = layout::table.position[s];
      constexpr leaf_kind kind = layout::table.kind[s];
      if constexpr (kind == leaf_kind::fused) adjoint[at] += g;
      else if constexpr (kind == leaf_kind::pure) result[at] += g;
      else result[n_pure + at] += g;
    }
  }
};

// A unit-seeded fused summation's op: the group's value (to reduce), then
// the adjoints of the operands I..., for a seed of `seed` everywhere. The
// rules run from a seed of exactly 1, a constant the compiler multiplies
// away, and only the adjoints are scaled (a mean's 1/n; a sum's 1 costs one
// multiplication per operand).
template <class Kernel, std::size_t... I>
struct value_then_adjoints {
  static constexpr const char* name = "fused_forward_backward";
  static constexpr bool vectorizable = Kernel::vectorizable, flatten = true;
  // The group's values, then its derivative rules: about as many again.
  static constexpr int instructions_per_batch = 2 * Kernel::instructions_per_batch;
  Kernel kernel;
  typename Kernel::compute_type seed;
  template <class V, class... Rest>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE std::array<V, 1 + sizeof...(I)> operator()(const V& first, const Rest&... rest) const {
    using C = typename Kernel::compute_type;
    auto both = kernel.value_and_adjoints(V(C(1)), std::array<V, 1 + sizeof...(Rest)>{first, rest...});
    return {both.value, both.adjoints[I] * V(seed)...};
  }
};

template <class Kernel, std::size_t... I>
struct gather_adjoints {
  static constexpr const char* name = "fused_backward";
  static constexpr bool vectorizable = Kernel::vectorizable, flatten = true;
  static constexpr int instructions_per_batch = 2 * Kernel::instructions_per_batch;
  Kernel kernel;
  template <class V, class... In>
  TANDEM_HOST_DEVICE TANDEM_ALWAYS_INLINE std::array<V, sizeof...(I)> operator()(const V& g, const In&... in) const {
    std::array<V, sizeof...(In)> all = kernel.adjoints(g, std::array<V, sizeof...(In)>{in...});
    return {all[I]...};
  }
};

}  // namespace tandem::detail
