#pragma once
// Running a traced graph: each materialized value is computed once per call
// (pure classes once per type, the others once per runtime instance) by its
// fused loop or its eager kernel, in an order where operands come first.
// When gradients are wanted the run also keeps, per materialized value, how
// to send its gradient on: the group's fused adjoint loop, or the eager
// backward recorded by a non-elementwise kernel. Running those in reverse
// order is the static graph's backward.
//
// This header holds the executor's dispatch (which strategy computes a
// value) and its bookkeeping (memo, gradients, steps); each strategy is
// defined in a header of its own beside it, and graph/execute.hpp includes
// them all.
//
// An executor `OnDevice` runs the same plan on a GPU: each fused group is
// one launch of its kernel (the slot a program's nvcc unit filled, for the
// graph, by tandem::cuda::compile), its backward one launch of its adjoint
// kernel; the summations, products and other ops run as the eager ops do
// on the device. Only a program's nvcc unit instantiates it.

#include <array>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/detail/small_vector.hpp"
#include "tandem/detail/unique_function.hpp"
#include "tandem/graph/execute/rows.hpp"
#include "tandem/graph/kernel.hpp"
#include "tandem/graph/run.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/ops/linalg.hpp"
#include "tandem/ops/reduce.hpp"

namespace tandem::detail {

// A fused group's profile event: its ops as the loop runs them, the bytes
// its operands and its output hold. The strings are built by one function
// for every group; a group's own part is a constant array and a few words.
struct profiled_operand {
  const shape* extent;
  std::int64_t bytes;
};

TANDEM_COLD void describe_fused_group(profile_range& range, std::span<const char* const> ops,
                                      std::span<const profiled_operand> operands, std::int64_t out_bytes) {
  std::string names, shapes;
  for (const char* op : ops) names += (names.empty() ? "" : ", ") + std::string(op);
  std::int64_t bytes = out_bytes;
  for (const auto& o : operands) {
    shapes += (shapes.empty() ? "" : ", ") + to_string(*o.extent);
    bytes += o.bytes;
  }
  range.describe([&](profile_event& e) {
    e.detail = std::move(names);
    e.shapes = std::move(shapes);
    e.bytes = bytes;
  });
}

template <class Kernel>
constexpr auto group_op_names() {
  std::array<const char*, Kernel::n_classes> names{};
  std::size_t i = 0;
  for_each_type<typename Kernel::layout::classes>(
      [&]<class P>(std::type_identity<P>) { names[i++] = node_traits<P>::op::name; });
  return names;
}

template <class Kernel, class Operands, class T>
void describe_group(profile_range& range, const Operands& operands, const tensor<T>& out) {
  static constexpr auto ops = group_op_names<Kernel>();
  const auto described = std::apply(
      [](const auto&... t) {
        return std::array<profiled_operand, sizeof...(t)>{profiled_operand{
            &t.shape(), t.numel() * static_cast<std::int64_t>(sizeof(typename std::decay_t<decltype(t)>::value_type))}...};
      },
      operands);
  describe_fused_group(range, ops, described, out.numel() * static_cast<std::int64_t>(sizeof(T)));
}

// The keys of a group's leaves, in the order of its operands: inline up to
// eight, so that binding a group allocates nothing.
using operand_keys = small_vector<const void*, 8>;

// A control-flow construct's K-th output is kept in the memo under an
// address inside the construct's node, which no other node can have.
inline const void* control_output_key(const void* construct, std::size_t k) {
  return static_cast<const char*>(construct) + 1 + k;
}

template <class Root, class Inputs, bool OnDevice>
class executor final : public graph_run {
 public:
  // `unit_seed` is the key of an output whose backward will be seeded with
  // ones right after this call (a grad of the graph), or null: a fused
  // summation at that output then runs its group's backward in the same pass
  // as its forward (on the host), or, where the caller will not read that
  // output's value (`unit_seed_value_read` false: grad, not value_and_grad),
  // only the backward (on either device).
  executor(const Inputs& inputs, bool for_backward, const void* unit_seed = nullptr, bool unit_seed_value_read = true,
           device where = device::cpu)
      : inputs_(inputs),
        for_backward_(for_backward),
        unit_seed_(unit_seed),
        unit_seed_value_read_(unit_seed_value_read),
        device_(where) {}

  template <class N>
  tensor<value_of_t<N>> value(const sym<N>& s) {
    using T = value_of_t<N>;
    if constexpr (node_traits<N>::is_input) {
      return static_cast<const tensor<T>&>(std::get<node_traits<N>::index>(inputs_));
    } else if constexpr (node_traits<N>::is_captured) {
      return captured_value(s);
    } else if constexpr (node_traits<N>::is_constant) {
      return full<T>({}, s.node().value, device_);
    } else if constexpr (is_control_node<N>) {
      // A construct's value is a placeholder (an empty tensor allocates
      // nothing); its outputs in the memo say that it ran.
      const void* key = key_of(s);
      if (!memo_.find(control_output_key(key, 0))) run_control(s, key);
      return tensor<bool>();
    } else {
      static_assert(node_traits<N>::is_apply || materialized_v<Root, N>,
                    "tandem internal: a fused value was asked for outside its group");
      const void* key = key_of(s);
      // A construct's output is in the memo already; only a backward step
      // must be recorded once.
      if constexpr (is_control_output_node<N>)
        if (!for_backward_) return read_control_output(s, key);
      // A value that only the graph's outputs read is asked for once per
      // run: it is not kept (the memo's entry cost a cached call of
      // jit(x + y) a tenth of its instructions).
      constexpr bool asked_once = read_only_by_outputs<Root, N>;
      if constexpr (!asked_once)
        if (any_tensor* found = memo_.find(key)) return std::get<tensor<T>>(*found);
      // Initialized by the strategy's result, not assigned to: a default
      // tensor and a move were a tenth of jit(x + y)'s call.
      auto compute = [&] {
        if constexpr (fused_summation<Root, N>()) {
          if constexpr (OnDevice) return run_summation_on_device(s, key);
          else return run_summation(s, key);
        } else if constexpr (is_control_output_node<N>) {
          return read_control_output(s, key);
        } else if constexpr (node_traits<N>::is_apply) {
          return run_apply(s, key);
        } else if constexpr (OnDevice) {
          return run_group_on_device(s, key);
        } else {
          return run_group(s, key);
        }
      };
      if constexpr (asked_once) {
        return compute();
      } else {
        tensor<T> result = compute();
        memo_.emplace(key, result);
        return result;
      }
    }
  }

  // A value as value() gives it, but a graph's input as the caller's
  // tensor itself and a captured tensor as its node holds it, without a
  // copy.
  template <class N>
  decltype(auto) value_or_input(const sym<N>& s) {
    if constexpr (node_traits<N>::is_input)
      return static_cast<const tensor<value_of_t<N>>&>(std::get<node_traits<N>::index>(inputs_));
    else if constexpr (node_traits<N>::is_captured)
      return captured_value(s);
    else return value(s);
  }

  // The caller reads no captured(): a top-level call that records no
  // backward. (A sub-graph's construct reads its run's captured tensors
  // even then: a loop's recompute for its backward.) The map's entry and a
  // copy of the tensor out of its node were 14% of a cached call of
  // jit(x * w) under no_grad.
  void discard_captured() { keeps_captured_ = false; }

  // Backward from the gradients of the outputs (by key); afterwards
  // gradient(key) gives what reached an input or a captured tensor.
  // As eager autograd frees each node's saved tensors once it has run, the
  // forward's values are dropped here (each step holds what its backward
  // reads) and each step once it has run: the CNN's training step at batch
  // 128 otherwise kept its forward activations and all its gradients alive
  // at once, twice the memory eager touches, and ran 9% slower than eager
  // (3% at batch 8). So a run is differentiated once.
  void backward(std::vector<std::pair<const void*, any_tensor>> seeds) override {
    if (differentiated_)
      throw error("tandem::backward: a static graph's run was differentiated already (its saved values are freed)");
    differentiated_ = true;
    profile_range range(profile_category::backward, "backward steps of static_graph");
    memo_.clear();
    for (auto& [key, g] : seeds)
      std::visit(
          [&, key = key](auto& t) {
            using T = typename std::decay_t<decltype(t)>::value_type;
            if constexpr (takes_gradients<T>) add_gradient(key, std::move(t));
          },
          g);
    while (!steps_.empty()) {
      step last = std::move(steps_.back());
      steps_.pop_back();
      any_tensor* found = gradients_.find(last.key);
      if (!found) continue;
      any_tensor g = std::move(*found);
      gradients_.erase(last.key);
      last.send(*this, g);
    }
  }

  const any_tensor* gradient(const void* key) const override {
    return gradients_.find(key);
  }
  // The captured tensors read by this run, by key.
  const captured_tensors& captured() const { return captured_; }
  const run_counters& counters() const { return counters_; }

  // static_graph::into: the tensor the value of `key` is to be written into.
  // The fused group computing that value writes there directly when the
  // shapes agree and no operand of the group shares its storage; otherwise
  // the value is computed as usual and the caller copies it.
  template <class T>
  void write_into(const void* key, const tensor<T>& destination) {
    destination_key_ = key;
    destination_ = &destination;
  }
  bool wrote_into_destination() const { return wrote_into_destination_; }

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

  // A gradient of a type known at run time (a control-flow construct's,
  // graph/execute/control.hpp).
  void add_any_gradient(const void* key, const any_tensor& g) {
    std::visit(
        [&](const auto& t) {
          if constexpr (std::is_floating_point_v<typename std::decay_t<decltype(t)>::value_type>) add_gradient(key, t);
        },
        g);
  }

  template <class T>
  void add_gradient(const void* key, tensor<T> g) {
    auto [at, fresh] = gradients_.try_emplace(key, g);
    if (!fresh) accumulate(std::get<tensor<T>>(*at), g);
  }

 private:
  struct step {
    const void* key;
    unique_function<void(executor&, const any_tensor&)> send;
  };

  // graph/execute/eager_kernel.hpp: a non-elementwise op by its eager kernel, recording its backward.
  template <class N>
  auto run_apply(const sym<N>& s, const void* key);

  // graph/execute/control.hpp: a control-flow construct, and its outputs.
  template <class N>
  void run_control(const sym<N>& s, const void* key);
  template <class N>
  tensor<value_of_t<N>> read_control_output(const sym<N>& s, const void* key);

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
    if constexpr (is_control_node<N>) {
      // What its sub-graphs capture is known only once they ran.
      return for_backward_;
    } else if constexpr (!std::is_floating_point_v<value_of_t<N>> || node_traits<N>::is_constant) {
      return false;
    } else if constexpr (node_traits<N>::is_input) {
      return std::get<node_traits<N>::index>(inputs_).requires_grad();
    } else if constexpr (node_traits<N>::is_captured) {
      return s.node().value.requires_grad();
    } else {
      const void* key = key_of(s);
      if (const bool* found = needs_gradient_.find(key)) return *found;
      bool any = apply_operands([&](const auto&... c) { return (needs_gradient(c) || ...); }, s.node().children);
      if constexpr (holds_parameters<N>)
        for (const auto& held : s.node().fn.held_parameters()) any = any || held.requires_grad();
      needs_gradient_.emplace(key, any);
      return any;
    }
  }
  template <class T>
  void send_leaf(const tensor<T>& leaf, const void* key) {
    if constexpr (std::is_floating_point_v<T>)
      if (leaf.has_grad()) add_gradient(key, leaf.grad());
  }
  // The gradient a nested backward (backward_within_run) found for a
  // kernel's stand-in for an operand.
  template <class T>
  void send_gradient(const tensor<T>&, const std::optional<any_gradient>& g, const void* key) {
    if constexpr (std::is_floating_point_v<T>)
      if (g) add_gradient(key, std::get<tensor<T>>(*g));
  }

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
  struct no_product_result {
    explicit operator bool() const { return false; }
  };

  // graph/execute/binding.hpp: a group's scalars and leaves, bound for one run.
  template <std::size_t Skip, class P, class Kernel, class Operands, class Product>
  void bind_group(const sym<P>& p, Kernel& kernel, Operands& operands, operand_keys& keys,
                  Product& product);

  template <std::size_t Skip, class P, std::size_t K, class C, class Kernel, class Operands, class Product>
  void bind_slot(const sym<C>& c, Kernel& kernel, Operands& operands, operand_keys& keys,
                 Product& product);

  template <std::size_t Skip, class R, class Kernel, class Operands, class Product>
  void bind_leaves(const sym<R>& s, Kernel& kernel, Operands& operands, operand_keys& keys,
                   Product& product);
  // The operands of a group whose every tensor leaf is pure (read by class:
  // graph inputs, values computed once per class), and their keys.
  template <class Kernel>
  auto pure_operands();
  template <class Kernel>
  operand_keys pure_keys();
  // A group without a product among its leaves. (An overload, not default
  // template arguments: nvcc's front end repeats those on the out-of-class
  // definition, which its host compiler then refuses.)
  template <class R, class Kernel, class Operands>
  void bind_leaves(const sym<R>& s, Kernel& kernel, Operands& operands, operand_keys& keys) {
    no_product_operands none;
    bind_leaves<no_product>(s, kernel, operands, keys, none);
  }

  // graph/execute/group.hpp: a fused group's loop.
  template <class R>
  tensor<value_of_t<R>> run_group(const sym<R>& s, const void* key);

  // graph/execute/on_device.hpp: the strategies of an executor OnDevice.
  template <class R>
  tensor<value_of_t<R>> run_group_on_device(const sym<R>& s, const void* key);
  template <class N>
  tensor<value_of_t<N>> run_summation_on_device(const sym<N>& s, const void* key);
  template <class R, class C, class Kernel, class Operands>
  void launch_group(const Kernel& kernel, const tensor<R>& out, const Operands& operands);
  template <class T, class Op, std::size_t M, class Operands>
  void launch_group_sum(const Op& op, tensor<T>& out, std::array<tensor<T>, M>& adjoints, const shape& extent,
                        const axes& ax, bool keepdims, bool is_mean, const Operands& operands);
  template <class C, class Op, std::size_t M, class... In>
  void launch_adjoints(const Op& op, std::array<tensor<C>, M>& adjoints, const shape& out_shape, const tensor<C>& seed,
                       const tensor<In>&... operands);

  // graph/execute/epilogue.hpp: a matmul running its reader's group as its epilogue.
  template <std::size_t At, class T, class Kernel, class P, class Operands>
  std::optional<tensor<T>> multiply_then_group(const Kernel& kernel, const product_operands<P>& product,
                                               Operands& operands, const void* key, shape& out_shape);

  template <class Kernel, std::size_t At, class Operands>
  static shape extent_with(const Operands& operands, const shape& product_shape);

  template <class P>
  void record_product(const tensor<P>& p, const product_operands<P>& product, const void* key);

  template <class Kernel>
  static void require_derivatives() {
    if (Kernel::non_differentiable)
      throw error(std::string("tandem::") + Kernel::non_differentiable +
                  ": this op has no derivative rule, but an input requires a gradient; give the op a "
                  "derivative<I>(g, y, x...) member or specialize tandem::derivative");
  }

  // graph/execute/summation.hpp: a sum or mean inside the loop of the group
  // feeding it; and, on either device, its backward alone (at a unit seed
  // whose value is not read) or as a step of the backward.
  template <class N>
  tensor<value_of_t<N>> run_summation(const sym<N>& s, const void* key);
  template <class T, class Kernel, class Operands>
  tensor<T> summation_backward_alone(const Kernel& kernel, const Operands& operands, const operand_keys& keys,
                                     const shape& extent, const shape& kept_dims, const shape& out_shape,
                                     T seed_scale);
  template <class T, class Kernel, class Operands>
  void push_summation_backward(const Kernel& kernel, const Operands& operands, const operand_keys& keys,
                               const shape& extent, const shape& kept_dims, T seed_scale, const void* key);

  template <class X>
  using value_of_t_tensor = typename std::decay_t<X>::value_type;

  // graph/execute/group_backward.hpp: a group's fused adjoint loop.
  template <class Kernel, class G, class Operands>
  void group_backward(const Kernel& kernel, const G& g, const Operands& operands, const operand_keys& keys,
                      const shape& out_shape);

  template <std::size_t J, class C, class Operands>
  void send_adjoint(const tensor<C>& adjoint, const Operands& operands, const operand_keys& keys);

  // A group's output: the destination of into() where it may be written
  // directly, else a fresh tensor.
  template <class T, class Operands>
  tensor<T> output_of_group(const void* key, const shape& out_shape, const Operands& operands) {
    if (key && key == destination_key_) {
      // The value at destination_key_ has the destination's type (into() checks).
      const tensor<T>& destination = *static_cast<const tensor<T>*>(destination_);
      bool shares = std::apply([&](const auto&... t) { return (false || ... || (t.storage() == destination.storage())); },
                               operands);
      if (destination.shape() == out_shape && destination.device() == device_ && !shares) {
        wrote_into_destination_ = true;
        return destination;
      }
    }
    return tensor<T>(out_shape, device_);
  }

  template <class N>
  const tensor<value_of_t<N>>& captured_value(const sym<N>& s) {
    if (keeps_captured_) captured_.emplace(key_of(s), s.node().value);
    return s.node().value;
  }

  template <class U, class T>
  static tensor<U> converted(const tensor<T>& t) {
    if constexpr (std::is_same_v<U, T>) return t;
    else return t.template astype<U>();
  }

  const Inputs& inputs_;
  bool for_backward_;
  const void* unit_seed_;
  bool unit_seed_value_read_;
  key_map<any_tensor, 8> memo_;
  key_map<any_tensor> gradients_;
  captured_tensors captured_;
  key_map<bool> needs_gradient_;
  // Control-flow constructs' outputs' gradients, until the construct's
  // backward step. (Their outputs are in the memo, control_output_key.)
  key_map<std::vector<std::optional<any_tensor>>> control_seeds_;
  std::vector<step> steps_;
  run_counters counters_;
  device device_;
  const void* destination_key_ = nullptr;
  const void* destination_ = nullptr;
  bool wrote_into_destination_ = false;
  bool differentiated_ = false;
  bool keeps_captured_ = true;
};

}  // namespace tandem::detail
