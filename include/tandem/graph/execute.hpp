#pragma once
// Running a traced graph: each materialized value is computed once per call
// (pure classes once per type, the others once per runtime instance) by its
// fused loop or its eager kernel, in an order where operands come first.
// When gradients are wanted the run also keeps, per materialized value, how
// to send its gradient on: the group's fused adjoint loop, or the eager
// backward recorded by a non-elementwise kernel. Running those in reverse
// order is the static graph's backward.

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/graph/kernel.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

using any_tensor =
    std::variant<tensor<float>, tensor<double>, tensor<std::int32_t>, tensor<std::int64_t>, tensor<bool>>;

template <class N>
inline constexpr char class_tag = 0;

// How a value is found again: by type for pure classes, by address else.
template <class N>
const void* key_of(const sym<N>& s) {
  if constexpr (is_pure<N>) return &class_tag<N>;
  else return s.identity();
}

// Counts kept for tests and the plan statistics: fused loops and eager
// kernels run, and buffers made for values that are not outputs.
struct run_counters {
  std::int64_t fused_loops = 0;
  std::int64_t eager_kernels = 0;
};

template <class Root, class Inputs>
class executor {
 public:
  executor(const Inputs& inputs, bool for_backward) : inputs_(inputs), for_backward_(for_backward) {}

  template <class N>
  tensor<value_of_t<N>> value(const sym<N>& s) {
    using T = value_of_t<N>;
    if constexpr (node_traits<N>::is_input) {
      return static_cast<const tensor<T>&>(std::get<node_traits<N>::index>(inputs_));
    } else if constexpr (node_traits<N>::is_captured) {
      captured_.emplace(key_of(s), s.node().value);
      return s.node().value;
    } else if constexpr (node_traits<N>::is_constant) {
      return full<T>({}, s.node().value);
    } else {
      static_assert(node_traits<N>::is_apply || materialized_v<Root, N>,
                    "tandem internal: a fused value was asked for outside its group");
      const void* key = key_of(s);
      if (auto found = memo_.find(key); found != memo_.end()) return std::get<tensor<T>>(found->second);
      tensor<T> result;
      if constexpr (node_traits<N>::is_apply) result = run_apply(s, key);
      else result = run_group(s, key);
      memo_.emplace(key, result);
      return result;
    }
  }

  // Backward from the gradients of the outputs (by key); afterwards
  // gradient(key) gives what reached an input or a captured tensor.
  void backward(std::vector<std::pair<const void*, any_tensor>> seeds) {
    for (auto& [key, g] : seeds) add_gradient(key, std::move(g));
    for (auto step = steps_.rbegin(); step != steps_.rend(); ++step) {
      auto found = gradients_.find(step->key);
      if (found == gradients_.end()) continue;
      any_tensor g = std::move(found->second);
      gradients_.erase(found);
      step->send(*this, g);
    }
  }

  const any_tensor* gradient(const void* key) const {
    auto found = gradients_.find(key);
    return found == gradients_.end() ? nullptr : &found->second;
  }
  // The captured tensors read by this run, by key.
  const std::unordered_map<const void*, any_tensor>& captured() const { return captured_; }
  const run_counters& counters() const { return counters_; }

  void add_gradient(const void* key, any_tensor g) {
    auto [at, fresh] = gradients_.try_emplace(key, g);
    if (!fresh)
      std::visit([&](auto& sum) { sum = sum + std::get<std::decay_t<decltype(sum)>>(g); }, at->second);
  }

 private:
  struct step {
    const void* key;
    std::function<void(executor&, const any_tensor&)> send;
  };

  template <class N>
  auto run_apply(const sym<N>& s, const void* key) {
    ++counters_.eager_kernels;
    const N& node = s.node();
    auto operands = std::apply([&](const auto&... c) { return std::tuple{value(c)...}; }, node.children);
    if (!for_backward_) {
      no_grad plain;
      return std::apply(node.fn, operands);
    }
    // The eager kernel records its own backward on fresh leaves standing for
    // the operands; the step runs it and hands the leaves' gradients on.
    enable_grad recording;
    auto leaves = std::apply([](const auto&... t) { return std::tuple{fresh_leaf(t)...}; }, operands);
    auto result = std::apply(node.fn, leaves);
    auto keys = std::apply([](const auto&... c) { return std::array<const void*, sizeof...(c)>{key_of(c)...}; },
                           node.children);
    if constexpr (std::is_floating_point_v<value_of_t<N>>) {
      if (result.requires_grad())
        steps_.push_back({key, [result, leaves, keys](executor& self, const any_tensor& g) {
                            result.backward(std::get<tensor<value_of_t<N>>>(g));
                            std::size_t k = 0;
                            std::apply([&](const auto&... leaf) { (self.send_leaf(leaf, keys[k++]), ...); }, leaves);
                          }});
    }
    return result.detach();
  }

  template <class T>
  static tensor<T> fresh_leaf(const tensor<T>& t) {
    tensor<T> leaf = t.detach();
    if constexpr (std::is_floating_point_v<T>) leaf.set_requires_grad(true);
    return leaf;
  }
  template <class T>
  void send_leaf(const tensor<T>& leaf, const void* key) {
    if constexpr (std::is_floating_point_v<T>)
      if (leaf.has_grad()) add_gradient(key, leaf.grad());
  }

  template <class R>
  struct group_operands {
    using kernel = group_kernel<Root, R>;
    template <class P, std::size_t K>
    static auto child_of(slot<P, K>) -> std::tuple_element_t<K, typename node_traits<P>::children>;
    template <class... L, class... S>
    static auto make(hana::tuple<L...>, hana::tuple<S...>)
        -> std::tuple<tensor<value_of_t<typename L::type>>...,
                      tensor<value_of_t<decltype(child_of(typename S::type{}))>>...>;
    using tensors = decltype(make(typename kernel::pure_list{}, typename kernel::tensor_list{}));
  };

  // Binds the group's scalars and tensor leaves, walking from its root
  // through the data-holding classes inside it (each has one instance here).
  template <class R, class P>
  void bind(const sym<P>& p, group_kernel<Root, R>& kernel, typename group_operands<R>::tensors& operands,
            std::vector<const void*>& keys) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (bind_slot<R, P, K>(std::get<K>(p.node().children), kernel, operands, keys), ...);
    }(std::make_index_sequence<std::tuple_size_v<typename node_traits<P>::children>>{});
  }

  template <class R, class P, std::size_t K, class C>
  void bind_slot(const sym<C>& c, group_kernel<Root, R>& kernel, typename group_operands<R>::tensors& operands,
                 std::vector<const void*>& keys) {
    using kernel_type = group_kernel<Root, R>;
    if constexpr (fused_into_parent<Root, C>()) {
      if constexpr (!is_pure<C>) bind<R>(c, kernel, operands, keys);
    } else if constexpr (node_traits<C>::is_constant) {
      kernel.constants[index_in<typename kernel_type::constant_list, slot<P, K>>()] =
          static_cast<typename kernel_type::compute_type>(c.node().value);
    } else if constexpr (!is_pure<C>) {
      constexpr std::size_t at = kernel_type::n_pure + index_in<typename kernel_type::tensor_list, slot<P, K>>();
      std::get<at>(operands) = value(c);
      keys[at] = key_of(c);
    }
  }

  template <class R>
  tensor<value_of_t<R>> run_group(const sym<R>& s, const void* key) {
    using kernel_type = group_kernel<Root, R>;
    using C = typename kernel_type::compute_type;
    using T = value_of_t<R>;
    ++counters_.fused_loops;
    kernel_type kernel;
    typename group_operands<R>::tensors operands;
    std::vector<const void*> keys(kernel_type::n_operands);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
        using L = type_at<typename kernel_type::pure_list, J>;
        std::get<J>(operands) = value(sym<L>{});
        keys[J] = key_of(sym<L>{});
      };
      (one(std::integral_constant<std::size_t, I>{}), ...);
      (void)one;
    }(std::make_index_sequence<kernel_type::n_pure>{});
    bind<R>(s, kernel, operands, keys);

    shape out_shape = std::apply([](const auto&... t) { return broadcast_all<kernel_type>(t...); }, operands);
    tensor<T> out(out_shape);
    std::apply(
        [&](const auto&... t) {
          if (common_contiguous_shape(t...))
            elementwise_flat<T, C>(kernel, out.numel(), out.data(), flat_operand<value_of_t_tensor<decltype(t)>>{t.data(), 1}...);
          else
            elementwise<T, C>(kernel, out_shape, out.data(), contiguous_strides(out_shape),
                              operand<value_of_t_tensor<decltype(t)>>{t.data(), broadcast_strides(t, out_shape)}...);
        },
        operands);
    if constexpr (std::is_floating_point_v<T>) {
      if (for_backward_)
        steps_.push_back({key, [kernel, operands, keys, out_shape](executor& self, const any_tensor& g) {
                            self.group_backward(kernel, std::get<tensor<T>>(g), operands, keys, out_shape);
                          }});
    }
    return out;
  }

  template <class X>
  using value_of_t_tensor = typename std::decay_t<X>::value_type;

  template <class Kernel, class G, class Operands>
  void group_backward(const Kernel& kernel, const G& g, const Operands& operands, const std::vector<const void*>& keys,
                      const shape& out_shape) {
    using C = typename Kernel::compute_type;
    constexpr std::size_t n = Kernel::n_operands;
    std::array<tensor<C>, n> adjoint;
    tensor<C> seed = g.template astype<C>();
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      auto one = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
        using L = value_of_t_tensor<std::tuple_element_t<I, Operands>>;
        if constexpr (std::is_floating_point_v<L>) {
          adjoint[I] = tensor<C>(out_shape);
          select_adjoint<Kernel, I> pick{kernel};
          elementwise<C, C>(pick, out_shape, adjoint[I].data(), contiguous_strides(out_shape),
                            operand<C>{seed.data(), broadcast_strides(seed, out_shape)},
                            operand<value_of_t_tensor<std::tuple_element_t<J, Operands>>>{
                                std::get<J>(operands).data(), broadcast_strides(std::get<J>(operands), out_shape)}...);
          add_gradient(keys[I], sum_to(adjoint[I], std::get<I>(operands).shape()).template astype<L>());
        }
      };
      (one(std::integral_constant<std::size_t, J>{}), ...);
    }(std::make_index_sequence<n>{});
  }

  template <class Kernel, std::size_t I>
  struct select_adjoint {
    static constexpr const char* name = "fused_backward";
    static constexpr bool vectorizable = Kernel::vectorizable;
    Kernel kernel;
    template <class V, class... In>
    TANDEM_ALWAYS_INLINE V operator()(const V& g, const In&... in) const {
      return kernel.adjoints(g, std::array<V, sizeof...(In)>{in...})[I];
    }
  };

  const Inputs& inputs_;
  bool for_backward_;
  std::unordered_map<const void*, any_tensor> memo_;
  std::unordered_map<const void*, any_tensor> gradients_;
  std::unordered_map<const void*, any_tensor> captured_;
  std::vector<step> steps_;
  run_counters counters_;
};

}  // namespace tandem::detail
