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

// What the eager graph keeps of a run that recorded for backward: its
// backward and the gradients it leaves. The eager graph's nodes see only
// this, never the executor's type, which names the whole graph type.
class graph_run {
 public:
  virtual ~graph_run() = default;
  virtual void backward(std::vector<std::pair<const void*, any_tensor>> seeds) = 0;
  virtual const any_tensor* gradient(const void* key) const = 0;
};

template <class Root, class Inputs>
class executor final : public graph_run {
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
  void backward(std::vector<std::pair<const void*, any_tensor>> seeds) override {
    for (auto& [key, g] : seeds) add_gradient(key, std::move(g));
    for (auto step = steps_.rbegin(); step != steps_.rend(); ++step) {
      auto found = gradients_.find(step->key);
      if (found == gradients_.end()) continue;
      any_tensor g = std::move(found->second);
      gradients_.erase(found);
      step->send(*this, g);
    }
  }

  const any_tensor* gradient(const void* key) const override {
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
    auto operands = apply_operands([&](const auto&... c) { return std::tuple{value(c)...}; }, node.children);
    if (!for_backward_) {
      no_grad plain;
      return std::apply(node.fn, operands);
    }
    // The eager kernel records its own backward on fresh leaves standing for
    // the operands; the step runs it and hands the leaves' gradients on.
    enable_grad recording;
    auto leaves = std::apply([](const auto&... t) { return std::tuple{fresh_leaf(t)...}; }, operands);
    auto result = std::apply(node.fn, leaves);
    auto keys = apply_operands([](const auto&... c) { return std::array<const void*, sizeof...(c)>{key_of(c)...}; },
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
  // The kernel and operand types are deduced, never spelled from R: GCC 12
  // matches a parameter spelled `group_kernel<Root, R>&` against its argument
  // by walking both types' arguments as trees, which costs time exponential
  // in the depth of the graph.
  template <class P, class Kernel, class Operands>
  void bind_group(const sym<P>& p, Kernel& kernel, Operands& operands, std::vector<const void*>& keys) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (bind_slot<P, K>(operand_at<K>(p.node().children), kernel, operands, keys), ...);
    }(std::make_index_sequence<std::tuple_size_v<typename node_traits<P>::children>>{});
  }

  template <class P, std::size_t K, class C, class Kernel, class Operands>
  void bind_slot(const sym<C>& c, Kernel& kernel, Operands& operands, std::vector<const void*>& keys) {
    if constexpr (fused_into_parent<Root, C>()) {
      if constexpr (!is_pure<C>) bind_group(c, kernel, operands, keys);
    } else if constexpr (node_traits<C>::is_constant) {
      kernel.constants[index_in<typename Kernel::constant_list, slot<P, K>>()] =
          static_cast<typename Kernel::compute_type>(c.node().value);
    } else if constexpr (!is_pure<C>) {
      constexpr std::size_t at = Kernel::n_pure + index_in<typename Kernel::tensor_list, slot<P, K>>();
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
    bind_group(s, kernel, operands, keys);

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
      if (for_backward_ && kernel_type::non_differentiable)
        throw error(std::string("tandem::") + kernel_type::non_differentiable +
                    ": this op has no derivative rule, but an input requires a gradient; give the op a "
                    "derivative<I>(g, y, x...) member or specialize tandem::derivative");
      if (for_backward_)
        steps_.push_back({key, [kernel, operands, keys, out_shape](executor& self, const any_tensor& g) {
                            self.group_backward(kernel, std::get<tensor<T>>(g), operands, keys, out_shape);
                          }});
    }
    return out;
  }

  template <class X>
  using value_of_t_tensor = typename std::decay_t<X>::value_type;

  // One pass over the group's output writes the adjoint of every floating
  // operand (the forward is recomputed in registers, never stored); each is
  // then summed over the axes its operand was broadcast along.
  template <class Kernel, class G, class Operands>
  void group_backward(const Kernel& kernel, const G& g, const Operands& operands, const std::vector<const void*>& keys,
                      const shape& out_shape) {
    using C = typename Kernel::compute_type;
    constexpr auto wanted = floating_operands<Operands>();
    constexpr std::size_t m = wanted.size();
    if constexpr (m > 0) {
      tensor<C> seed = converted<C>(g);
      std::array<tensor<C>, m> adjoint;
      output_set<C, m> outs;
      for (std::size_t k = 0; k < m; ++k) {
        adjoint[k] = tensor<C>(out_shape);
        outs.data[k] = adjoint[k].data();
      }
      [&]<std::size_t... F, std::size_t... J>(std::index_sequence<F...>, std::index_sequence<J...>) {
        gather_adjoints<Kernel, wanted[F]...> op{kernel};
        if (common_contiguous_shape(seed, std::get<J>(operands)...))
          elementwise_flat<C, C>(op, numel(out_shape), outs, flat_operand<C>{seed.data(), 1},
                                 flat_operand<value_of_t_tensor<std::tuple_element_t<J, Operands>>>{
                                     std::get<J>(operands).data(), 1}...);
        else
          elementwise<C, C>(op, out_shape, outs, contiguous_strides(out_shape),
                            operand<C>{seed.data(), broadcast_strides(seed, out_shape)},
                            operand<value_of_t_tensor<std::tuple_element_t<J, Operands>>>{
                                std::get<J>(operands).data(), broadcast_strides(std::get<J>(operands), out_shape)}...);
        (add_gradient(keys[wanted[F]],
                      converted<value_of_t_tensor<std::tuple_element_t<wanted[F], Operands>>>(
                          sum_to(adjoint[F], std::get<wanted[F]>(operands).shape()))),
         ...);
      }(std::make_index_sequence<m>{}, std::make_index_sequence<std::tuple_size_v<Operands>>{});
    }
  }

  // The positions of the operands whose type takes a gradient.
  template <class Operands>
  static constexpr auto floating_operands() {
    return []<std::size_t... J>(std::index_sequence<J...>) {
      constexpr std::size_t count =
          (std::size_t{0} + ... + std::is_floating_point_v<value_of_t_tensor<std::tuple_element_t<J, Operands>>>);
      std::array<std::size_t, count> positions{};
      std::size_t k = 0;
      ((std::is_floating_point_v<value_of_t_tensor<std::tuple_element_t<J, Operands>>> ? (positions[k++] = J) : 0),
       ...);
      return positions;
    }(std::make_index_sequence<std::tuple_size_v<Operands>>{});
  }

  template <class U, class T>
  static tensor<U> converted(const tensor<T>& t) {
    if constexpr (std::is_same_v<U, T>) return t;
    else return t.template astype<U>();
  }

  template <class Kernel, std::size_t... I>
  struct gather_adjoints {
    static constexpr const char* name = "fused_backward";
    static constexpr bool vectorizable = Kernel::vectorizable;
    Kernel kernel;
    template <class V, class... In>
    TANDEM_ALWAYS_INLINE std::array<V, sizeof...(I)> operator()(const V& g, const In&... in) const {
      std::array<V, sizeof...(In)> all = kernel.adjoints(g, std::array<V, sizeof...(In)>{in...});
      return {all[I]...};
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
