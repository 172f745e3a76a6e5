#pragma once
// Running a traced graph: each materialized value is computed once per call
// (pure classes once per type, the others once per runtime instance) by its
// fused loop or its eager kernel, in an order where operands come first.
// When gradients are wanted the run also keeps, per materialized value, how
// to send its gradient on: the group's fused adjoint loop, or the eager
// backward recorded by a non-elementwise kernel. Running those in reverse
// order is the static graph's backward.

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/detail/unique_function.hpp"
#include "tandem/graph/kernel.hpp"
#include "tandem/graph/run.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/ops/linalg.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

template <class Root, class Inputs>
class executor final : public graph_run {
 public:
  // `unit_seed` is the key of an output whose backward will be seeded with
  // ones right after this call (a grad of the graph), or null: a fused
  // summation at that output then runs its group's backward in the same pass
  // as its forward.
  executor(const Inputs& inputs, bool for_backward, const void* unit_seed = nullptr)
      : inputs_(inputs), for_backward_(for_backward), unit_seed_(unit_seed) {}

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
      if constexpr (fused_summation<Root, N>()) result = run_summation(s, key);
      else if constexpr (node_traits<N>::is_apply) result = run_apply(s, key);
      else result = run_group(s, key);
      memo_.emplace(key, result);
      return result;
    }
  }

  // Backward from the gradients of the outputs (by key); afterwards
  // gradient(key) gives what reached an input or a captured tensor.
  void backward(std::vector<std::pair<const void*, any_tensor>> seeds) override {
    for (auto& [key, g] : seeds)
      std::visit(
          [&, key = key](auto& t) {
            using T = typename std::decay_t<decltype(t)>::value_type;
            if constexpr (takes_gradients<T>) add_gradient(key, std::move(t));
          },
          g);
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

  // Only the floating types the graph computes in ever add gradients: a
  // visit over every alternative of any_tensor would instantiate eager
  // addition (and its autograd) for bool, integers and the other float
  // type in every translation unit that jits anything.
  template <class T>
  static constexpr bool takes_gradients = [] {
    bool found = false;
    for_each_type<all_classes<Root>>([&]<class C>(std::type_identity<C>) {
      if constexpr (!std::is_void_v<value_of_t<C>>) found = found || std::is_same_v<value_of_t<C>, T>;
    });
    return found && std::is_floating_point_v<T>;
  }();

  template <class T>
  void add_gradient(const void* key, tensor<T> g) {
    auto [at, fresh] = gradients_.try_emplace(key, g);
    if (!fresh) {
      tensor<T>& sum = std::get<tensor<T>>(at->second);
      sum = sum + g;
    }
  }

 private:
  struct step {
    const void* key;
    unique_function<void(executor&, const any_tensor&)> send;
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
    auto wanted = apply_operands(
        [&](const auto&... c) { return std::array<bool, sizeof...(c)>{needs_gradient(c)...}; }, node.children);
    auto leaves = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::tuple{fresh_leaf(std::get<K>(operands), wanted[K])...};
    }(std::make_index_sequence<std::tuple_size_v<decltype(operands)>>{});
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
  static tensor<T> fresh_leaf(const tensor<T>& t, bool wanted) {
    tensor<T> leaf = t.detach();
    if constexpr (std::is_floating_point_v<T>) leaf.set_requires_grad(wanted);
    return leaf;
  }

  // Whether a gradient reaching this value has anywhere to go: a leaf that
  // requires one depends on it. Eager backwards recorded for the graph's
  // kernels skip the operands that do not (the images fed to a first layer,
  // say), as the eager engine does.
  template <class N>
  bool needs_gradient(const sym<N>& s) {
    if constexpr (!std::is_floating_point_v<value_of_t<N>> || node_traits<N>::is_constant) {
      return false;
    } else if constexpr (node_traits<N>::is_input) {
      return std::get<node_traits<N>::index>(inputs_).requires_grad();
    } else if constexpr (node_traits<N>::is_captured) {
      return s.node().value.requires_grad();
    } else {
      const void* key = key_of(s);
      if (auto found = needs_gradient_.find(key); found != needs_gradient_.end()) return found->second;
      bool any = apply_operands([&](const auto&... c) { return (needs_gradient(c) || ...); }, s.node().children);
      needs_gradient_.emplace(key, any);
      return any;
    }
  }
  template <class T>
  void send_leaf(const tensor<T>& leaf, const void* key) {
    if constexpr (std::is_floating_point_v<T>)
      if (leaf.has_grad()) add_gradient(key, leaf.grad());
  }

  template <class R>
  struct group_operands {
    using layout = group_layout<Root, R>;
    template <std::size_t... P, std::size_t... T>
    static auto make(std::index_sequence<P...>, std::index_sequence<T...>)
        -> std::tuple<tensor<value_of_t<typename layout::template pure_leaf<P>>>...,
                      tensor<value_of_t<typename layout::template tensor_leaf<T>>>...>;
    using tensors = decltype(make(std::make_index_sequence<layout::n_pure>{}, std::make_index_sequence<layout::n_tensors>{}));
  };

  // A matmul whose group runs as its epilogue: its operands, bound in place
  // of the product, which the group computes itself.
  template <class T>
  struct product_operands {
    tensor<T> a, b;
    const void* key_a = nullptr;
    const void* key_b = nullptr;
    bool grad_a = false, grad_b = false;
  };
  struct no_product_operands {};

  // Binds the group's scalars and tensor leaves, walking from its root
  // through the data-holding classes inside it (each has one instance here).
  // The operand at position Skip (a matmul with an epilogue) is not run: its
  // operands go to `product`. The kernel and operand types are deduced,
  // never spelled from R: GCC 12 matches a parameter spelled
  // `group_kernel<Root, R>&` against its argument by walking both types'
  // arguments as trees, which costs time exponential in the depth of the
  // graph.
  template <std::size_t Skip, class P, class Kernel, class Operands, class Product>
  void bind_group(const sym<P>& p, Kernel& kernel, Operands& operands, std::vector<const void*>& keys,
                  Product& product) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (bind_slot<Skip, P, K>(operand_at<K>(p.node().children), kernel, operands, keys, product), ...);
    }(std::make_index_sequence<arity_v<P>>{});
  }

  template <std::size_t Skip, class P, std::size_t K, class C, class Kernel, class Operands, class Product>
  void bind_slot(const sym<C>& c, Kernel& kernel, Operands& operands, std::vector<const void*>& keys,
                 Product& product) {
    if constexpr (fused_into_parent<Root, C>()) {
      if constexpr (!is_pure<C>) bind_group<Skip>(c, kernel, operands, keys, product);
    } else if constexpr (node_traits<C>::is_constant) {
      constexpr std::size_t s = Kernel::layout::template slot_of_class<P, K>;
      kernel.constants[Kernel::layout::table.position[s]] = static_cast<typename Kernel::compute_type>(c.node().value);
    } else if constexpr (!is_pure<C>) {
      constexpr std::size_t s = Kernel::layout::template slot_of_class<P, K>;
      constexpr std::size_t at = Kernel::n_pure + Kernel::layout::table.position[s];
      keys[at] = key_of(c);
      if constexpr (at == Skip) {
        product.a = value(operand_at<0>(c.node().children));
        product.b = value(operand_at<1>(c.node().children));
        product.key_a = key_of(operand_at<0>(c.node().children));
        product.key_b = key_of(operand_at<1>(c.node().children));
        if (for_backward_) {
          product.grad_a = needs_gradient(operand_at<0>(c.node().children));
          product.grad_b = needs_gradient(operand_at<1>(c.node().children));
        }
      } else {
        std::get<at>(operands) = value(c);
      }
    }
  }

  // The group's scalars and leaves, bound for one run.
  template <std::size_t Skip = no_product, class R, class Kernel, class Operands, class Product = no_product_operands>
  void bind_leaves(const sym<R>& s, Kernel& kernel, Operands& operands, std::vector<const void*>& keys,
                   Product&& product = {}) {
    keys.assign(Kernel::n_operands, nullptr);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
        using L = typename Kernel::layout::template pure_leaf<J>;
        std::get<J>(operands) = value(sym<L>{});
        keys[J] = key_of(sym<L>{});
      };
      (one(std::integral_constant<std::size_t, I>{}), ...);
      (void)one;
    }(std::make_index_sequence<Kernel::n_pure>{});
    bind_group<Skip>(s, kernel, operands, keys, product);
  }

  template <class R>
  tensor<value_of_t<R>> run_group(const sym<R>& s, const void* key) {
    using kernel_type = group_kernel<Root, R>;
    using C = typename kernel_type::compute_type;
    using T = value_of_t<R>;
    ++counters_.fused_loops;
    kernel_type kernel;
    typename group_operands<R>::tensors operands;
    std::vector<const void*> keys;
    shape out_shape;
    std::optional<tensor<T>> done;
    constexpr std::size_t product_slot = kernel_type::layout::product;
    if constexpr (product_slot != no_product) {
      constexpr std::size_t at = kernel_type::n_pure + product_slot;
      product_operands<value_of_t_tensor<std::tuple_element_t<at, decltype(operands)>>> product;
      bind_leaves<at>(s, kernel, operands, keys, product);
      done = multiply_then_group<at, T>(kernel, product, operands, keys[at], out_shape);
    } else {
      bind_leaves(s, kernel, operands, keys);
      out_shape = std::apply([](const auto&... t) { return broadcast_all<kernel_type>(t...); }, operands);
    }
    tensor<T> out = done ? *done : tensor<T>(out_shape);
    if (!done) {
      std::apply(
          [&](const auto&... t) {
            if (common_contiguous_shape(t...))
              elementwise_flat<T, C>(kernel, out.numel(), out.data(), flat_operand<value_of_t_tensor<decltype(t)>>{t.data(), 1}...);
            else
              elementwise<T, C>(kernel, out_shape, out.data(), contiguous_strides(out_shape),
                                operand<value_of_t_tensor<decltype(t)>>{t.data(), broadcast_strides(t, out_shape)}...);
          },
          operands);
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (for_backward_) {
        require_derivatives<kernel_type>();
        steps_.push_back({key, [kernel, operands, keys, out_shape](executor& self, const any_tensor& g) {
                            self.group_backward(kernel, std::get<tensor<T>>(g), operands, keys, out_shape);
                          }});
      }
    }
    return out;
  }

  // The matmul read by a group, run by the GEMM with the group as its
  // epilogue where the group has the product's shape: each block of the
  // product goes through the group as soon as it is final, while it is in
  // cache. In a run without gradients the product is written into the
  // group's output (when that has the product's type) and updated in place.
  // Returns the group's value, or nothing where the group must still run on
  // its own (operands that are not both 2-d; a group broadcasting the
  // product to a larger shape): the product is then the eager kernel's.
  template <std::size_t At, class T, class Kernel, class P, class Operands>
  std::optional<tensor<T>> multiply_then_group(const Kernel& kernel, const product_operands<P>& product,
                                               Operands& operands, const void* key, shape& out_shape) {
    using C = typename Kernel::compute_type;
    ++counters_.eager_kernels;
    const tensor<P>& a = product.a;
    const tensor<P>& b = product.b;
    bool fits = a.dim() == 2 && b.dim() == 2 && a.shape(1) == b.shape(0);
    shape product_shape;
    if (fits) {
      product_shape = {a.shape(0), b.shape(1)};
      out_shape = extent_with<Kernel, At>(operands, product_shape);
      fits = out_shape == product_shape;
    }
    std::optional<tensor<T>> result;
    tensor<P> p;
    if (!fits) {
      no_grad plain;
      p = matmul(a, b);
      std::get<At>(operands) = p;
      out_shape = std::apply([](const auto&... t) { return broadcast_all<Kernel>(t...); }, operands);
    } else {
      ++counters_.matmul_epilogues;
      tensor<T> out(out_shape);
      if constexpr (std::is_same_v<T, P>) p = for_backward_ ? tensor<P>(product_shape) : out;
      else p = tensor<P>(product_shape);
      std::get<At>(operands) = p;
      std::apply(
          [&](const auto&... t) {
            dims out_strides = contiguous_strides(out_shape);
            std::array<dims, sizeof...(t)> strides{broadcast_strides(t, out_shape)...};
            auto space = [&]<std::size_t... K>(std::index_sequence<K...>) {
              return merge_axes<1 + sizeof...(t)>(out_shape, {&out_strides, &strides[K]...});
            }(std::index_sequence_for<decltype(t)...>{});
            const std::tuple<const value_of_t_tensor<decltype(t)>*...> bases{t.data()...};
            const std::int64_t m = product_shape[0], n = product_shape[1];
            auto group = [&](const gemm_block& block) {
              auto span = [&](std::int64_t begin, std::int64_t end) {
                elementwise_range<T, C>(kernel, space, out.data() + begin, bases, begin, end);
              };
              if (block.cols == n) span(block.row * n, (block.row + block.rows) * n);
              else
                for (std::int64_t i = block.row; i < block.row + block.rows; ++i)
                  span(i * n + block.col, i * n + block.col + block.cols);
            };
            gemm<P>(m, n, a.shape(1), {a.data(), a.strides()[0], a.strides()[1]},
                    {b.data(), b.strides()[0], b.strides()[1]}, p.data(), n, group);
          },
          operands);
      result = out;
    }
    if (for_backward_) record_product(p, product, key);
    return result;
  }

  // The group's shape, with the product's shape in place of operand At
  // (not computed yet).
  template <class Kernel, std::size_t At, class Operands>
  static shape extent_with(const Operands& operands, const shape& product_shape) {
    auto shape_at = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) -> const shape& {
      if constexpr (J == At) return product_shape;
      else return std::get<J>(operands).shape();
    };
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      shape out;
      if ((try_broadcast(out, shape_at(std::integral_constant<std::size_t, J>{})) && ...)) return out;
      std::string all;
      ((all += (all.empty() ? "" : ", ") + to_string(shape_at(std::integral_constant<std::size_t, J>{}))), ...);
      throw shape_error(std::string("tandem::") + Kernel::name + ": shapes " + all + " cannot be broadcast together");
    }(std::make_index_sequence<std::tuple_size_v<Operands>>{});
  }

  // The product's backward: the eager matmul rule, recorded on fresh leaves
  // standing for its operands, as run_apply does for every eager kernel.
  template <class P>
  void record_product(const tensor<P>& p, const product_operands<P>& product, const void* key) {
    enable_grad recording;
    tensor<P> a = fresh_leaf(product.a, product.grad_a), b = fresh_leaf(product.b, product.grad_b);
    if (!product.grad_a && !product.grad_b) return;
    tensor<P> tracked = p.detach();
    record(matmul_op{}, tracked, a, b);
    steps_.push_back({key, [tracked, a, b, key_a = product.key_a, key_b = product.key_b](executor& self,
                                                                                         const any_tensor& g) {
                        tracked.backward(std::get<tensor<P>>(g));
                        self.send_leaf(a, key_a);
                        self.send_leaf(b, key_b);
                      }});
  }

  template <class Kernel>
  static void require_derivatives() {
    if (Kernel::non_differentiable)
      throw error(std::string("tandem::") + Kernel::non_differentiable +
                  ": this op has no derivative rule, but an input requires a gradient; give the op a "
                  "derivative<I>(g, y, x...) member or specialize tandem::derivative");
  }

  // A sum or mean computed inside the loop of the group feeding it: the
  // group runs a tile at a time into a per-thread buffer that the reduction
  // reads while it is in cache, so the group's value never reaches memory.
  // Its backward is the group's adjoint loop with the reduction's gradient
  // as a broadcast seed; at a unit-seeded output it runs in the same pass.
  template <class N>
  tensor<value_of_t<N>> run_summation(const sym<N>& s, const void* key) {
    using R = std::tuple_element_t<0, typename node_traits<N>::children>;
    using kernel_type = group_kernel<Root, R>;
    using T = value_of_t<N>;
    ++counters_.fused_loops;
    const N& node = s.node();
    kernel_type kernel;
    typename group_operands<R>::tensors operands;
    std::vector<const void*> keys;
    bind_leaves(operand_at<0>(node.children), kernel, operands, keys);
    shape extent = std::apply([](const auto&... t) { return broadcast_all<kernel_type>(t...); }, operands);
    reduction_shape plan = plan_reduction(extent, node.fn.ax, node.fn.keepdims, node.name);

    // Rows ([kept..., reduced...]) unless every reduced axis comes before
    // every kept one: then columns, so the group's loop still runs along
    // its innermost axis.
    bool columns = !plan.kept_order.empty() && !plan.reduced_order.empty() &&
                   plan.reduced_order.back() < plan.kept_order[0];
    dims order = columns ? plan.reduced_order : plan.kept_order;
    for (auto axis : columns ? plan.kept_order : plan.reduced_order) order.push_back(axis);
    shape arranged;
    for (auto axis : order) arranged.push_back(extent[axis]);
    auto arrange_strides = [&](const dims& strides) {
      dims result;
      for (auto axis : order) result.push_back(strides[axis]);
      return result;
    };

    // Only an output read by nothing else is seeded with exactly ones.
    constexpr bool may_run_one_pass = edge_count_v<Root, N> == 1 && std::is_floating_point_v<T> &&
                                      floating_operands<decltype(operands)>().size() > 0;
    bool one_pass = may_run_one_pass && for_backward_ && key == unit_seed_;
    if (for_backward_) require_derivatives<kernel_type>();
    if (one_pass) ++counters_.forward_backward_passes;
    constexpr bool is_mean = N::fn_type::is_mean;
    T seed_scale = is_mean ? T(1) / static_cast<T>(plan.length) : T(1);
    auto finish = [&] {
      if constexpr (is_mean)
        return [length = static_cast<T>(plan.length)](T total) { return total / length; };
      else
        return [](T total) { return total; };
    }();

    tensor<T> out(plan.out_shape);
    std::apply(
        [&](const auto&... t) {
          dims tile_strides = contiguous_strides(arranged);
          std::array<dims, sizeof...(t)> strides{arrange_strides(broadcast_strides(t, extent))...};
          auto space = [&]<std::size_t... K>(std::index_sequence<K...>) {
            return merge_axes<1 + sizeof...(t)>(arranged, {&tile_strides, &strides[K]...});
          }(std::index_sequence_for<decltype(t)...>{});
          auto reduce = [&](const auto& source) {
            if (columns)
              reduce_columns_from<sum_reducer, T>(sum_reducer{}, source, plan.kept, plan.length, out.data(), finish);
            else
              reduce_rows_from<sum_reducer, T>(sum_reducer{}, source, plan.kept, plan.length, out.data(), finish);
          };
          using bases_type = std::tuple<const value_of_t_tensor<decltype(t)>*...>;
          if (!one_pass) {
            reduce(fused_source<T, 0, kernel_type, 1 + sizeof...(t), value_of_t_tensor<decltype(t)>...>{
                kernel, space, bases_type{t.data()...}});
            return;
          }
          if constexpr (may_run_one_pass) {
            static constexpr auto wanted = floating_operands<decltype(operands)>();
            [&]<std::size_t... F>(std::index_sequence<F...>) {
              std::array<tensor<T>, wanted.size()> adjoint{(static_cast<void>(F), tensor<T>(arranged))...};
              value_then_adjoints<kernel_type, wanted[F]...> op{kernel, seed_scale};
              reduce(fused_source<T, wanted.size(), decltype(op), 1 + sizeof...(t), value_of_t_tensor<decltype(t)>...>{
                  op, space, bases_type{t.data()...}, {adjoint[F].data()...}});
              dims back(order.size());
              for (std::size_t i = 0; i < order.size(); ++i) back[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
              auto in_place = [&](const tensor<T>& a) { return a.permute(std::span<const std::int64_t>(back.data(), back.size())); };
              (send_adjoint<wanted[F]>(in_place(adjoint[F]), operands, keys), ...);
            }(std::make_index_sequence<wanted.size()>{});
          }
        },
        operands);

    if constexpr (std::is_floating_point_v<T>) {
      if (for_backward_ && !one_pass) {
        shape kept_dims = plan_reduction(extent, node.fn.ax, true, node.name).out_shape;
        steps_.push_back({key, [kernel, operands, keys, extent, kept_dims, seed_scale](executor& self, const any_tensor& g) {
                            tensor<T> seed = std::get<tensor<T>>(g).reshape(kept_dims);
                            if (seed_scale != T(1)) seed = seed * seed_scale;
                            self.group_backward(kernel, seed, operands, keys, extent);
                          }});
      }
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
        (send_adjoint<wanted[F]>(adjoint[F], operands, keys), ...);
      }(std::make_index_sequence<m>{}, std::make_index_sequence<std::tuple_size_v<Operands>>{});
    }
  }

  // Operand J's gradient from a group-shaped adjoint: summed over the axes
  // the operand was broadcast along, in the operand's own type.
  template <std::size_t J, class C, class Operands>
  void send_adjoint(const tensor<C>& adjoint, const Operands& operands, const std::vector<const void*>& keys) {
    const auto& leaf = std::get<J>(operands);
    add_gradient(keys[J], converted<value_of_t_tensor<decltype(leaf)>>(sum_to(adjoint, leaf.shape())));
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

  const Inputs& inputs_;
  bool for_backward_;
  const void* unit_seed_;
  std::unordered_map<const void*, any_tensor> memo_;
  std::unordered_map<const void*, any_tensor> gradients_;
  std::unordered_map<const void*, any_tensor> captured_;
  std::unordered_map<const void*, bool> needs_gradient_;
  std::vector<step> steps_;
  run_counters counters_;
};

}  // namespace tandem::detail
