#pragma once
// tandem::jit(f) and static_graph<F>. A call traces f on symbolic values
// (one per tensor argument; scalars pass through as runtime values), which
// gives the graph as a type; the compile-time passes of structure.hpp fuse
// it; the plan for the call's signature is found or built; the graph runs
// (eagerly where the traced values do not fit the passes: sharing.hpp).
// While eager autograd records, the whole call becomes one node of the
// eager graph whose backward is the graph's fused backward.

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/autograd/functional.hpp"
#include "tandem/autograd/record.hpp"
#include "tandem/core/profile_tensors.hpp"
#include "tandem/graph/confined_call.hpp"
#include "tandem/graph/dump.hpp"
#include "tandem/graph/execute.hpp"
#include "tandem/graph/join.hpp"
#include "tandem/graph/mode.hpp"
#include "tandem/graph/plan.hpp"
#include "tandem/graph/sharing.hpp"
#include "tandem/graph/trace.hpp"

namespace tandem {
namespace detail {

// The symbolic stand-in for argument I: tensors become inputs, the rest
// (scalars) are handed to f as they are.
template <std::size_t I, class A>
auto symbol_for(const A& a) {
  if constexpr (is_tensor_v<A>) return sym<input_node<I, typename A::value_type>>{};
  else return a;
}

}  // namespace detail

template <class F>
class static_graph;

namespace detail {

template <class A>
bool on_gpu(const A& a) {
  if constexpr (is_tensor_v<A>) return !a.device().is_cpu();
  else return false;
}
template <class... A>
bool any_on_gpu(const A&... a) {
  return (on_gpu(a) || ...);
}

template <class F, class... A>
using eager_result_t = decltype(pair_as_tuple(std::declval<const F&>()(std::declval<const A&>()...)));

// A static graph's runs on a GPU, for arguments of types A: a call (its
// first output seeded with ones right after, or not) and a training step.
// A program's nvcc unit fills them (tandem::cuda::compile,
// kernels/cuda/install.hpp); while they are empty, the graph's function runs
// eagerly on the device, op by op, with the same values and gradients.
template <class F, class... A>
inline std::atomic<eager_result_t<F, A...> (*)(const static_graph<F>& graph, bool unit_seed, bool unit_seed_value_read,
                                               const A&... a)>
    cuda_graph_slot{nullptr};
template <class F, class... A>
inline std::atomic<std::pair<eager_result_t<F, A...>, captured_gradients> (*)(const static_graph<F>& graph,
                                                                               const A&... a)>
    cuda_training_slot{nullptr};

// into() on a GPU, writing a tensor of T.
template <class F, class T, class... A>
inline std::atomic<void (*)(const static_graph<F>& graph, const tensor<T>& out, const A&... a)> cuda_into_slot{nullptr};

template <class F, class... A>
struct gpu_graph_entry;

}  // namespace detail

template <class F>
class static_graph {
 public:
  explicit static_graph(F f) : f_(std::move(f)), cache_(std::make_shared<detail::plan_cache>()) {}
  // A graph whose plans live in `plans`, shared with other graphs of the
  // same function (a module keeps its plans across calls so).
  static_graph(F f, std::shared_ptr<detail::plan_cache> plans) : f_(std::move(f)), cache_(std::move(plans)) {}

  // Called on symbolic values (inside another graph's trace), the function
  // is traced into that graph, which fuses across the boundary: nested jit
  // is inlined, as in JAX.
  template <class... A>
  auto operator()(const A&... a) const {
    if constexpr ((is_symbolic_v<A> || ...)) {
      return detail::pair_as_tuple(f_(a...));
    } else {
      if (!jit_enabled()) return detail::pair_as_tuple(f_(a...));
      if (detail::any_on_gpu(a...)) return run_on_gpu(false, true, a...);
      return run<false>(std::index_sequence_for<A...>{}, false, true, device::cpu, a...);
    }
  }

  // A call whose first output's backward is seeded with ones right after
  // (grad and value_and_grad of the graph make it): a sum or mean at that
  // output runs its group's backward in the same pass as its forward, or
  // runs the backward alone where the caller will not read the output
  // (`value_read` false, grad: the output is then NaN).
  template <class... A>
  auto call_with_unit_seed(const std::tuple<A...>& arguments, bool value_read = true) const {
    return std::apply(
        [&](const A&... a) {
          if (!jit_enabled()) return detail::pair_as_tuple(f_(a...));
          if (detail::any_on_gpu(a...)) return run_on_gpu(true, value_read, a...);
          return run<false>(std::index_sequence_for<A...>{}, true, value_read, device::cpu, a...);
        },
        arguments);
  }

  // The graph and its backward from ones at its output, in one call and
  // outside eager autograd: what a fused training step runs. Returns the
  // output and the gradients the backward left at the tensors the graph
  // captured (a model's parameters), found by the tensor they came from.
  template <class... A>
  auto value_and_captured_gradients(const A&... a) const {
    if (detail::any_on_gpu(a...)) {
      if (auto compiled = detail::cuda_training_slot<F, A...>.load(std::memory_order_acquire))
        return compiled(*this, a...);
      return eager_value_and_gradients(a...);
    }
    return train<false>(device::cpu, a...);
  }

  // Runs the graph and writes its output into `out` (a tensor or a view of
  // one) instead of a fresh tensor: with a fused group at the output, its
  // loop writes there and the call allocates nothing. `out` must have the
  // output's shape and element type. Like PyTorch's `out=` arguments, it
  // records no gradient: where a call would record, it throws (run it under
  // tandem::no_grad, or use the value a call returns).
  template <class T, class... A>
  void into(const tensor<T>& out, const A&... a) const {
    static_assert(!(is_symbolic_v<A> || ...),
                  "tandem::jit: into() runs a graph on tensors; inside another graph's trace, call the graph itself");
    using root_type = decltype(trace(a...));
    static_assert(std::tuple_size_v<decltype(output_keys(std::declval<const root_type&>()))> == 1,
                  "tandem::jit: into() writes one output, but this function returns several");
    // As a call would record: an input that requires a gradient, or any
    // captured tensor (a module's parameters), while autograd is on.
    bool inputs_record = is_grad_enabled() && (detail::input_requires_grad(a) || ...);
    bool captures_record = is_grad_enabled() && detail::reads_captured<root_type>();
    if (inputs_record || captures_record || (out.requires_grad() && is_grad_enabled()))
      throw error(std::string("tandem::jit::into: writes into an existing tensor and records no gradient, but ") +
                  (inputs_record     ? "an input requires one"
                   : captures_record ? "the function captures tensors, which autograd would record"
                                     : "the tensor written into requires one") +
                  "; run it under tandem::no_grad, or use the value the graph returns");
    if (!jit_enabled()) return assign_output(out, f_(a...));
    if (detail::any_on_gpu(a...)) {
      if (auto compiled = detail::cuda_into_slot<F, T, A...>.load(std::memory_order_acquire))
        return compiled(*this, out, a...);
      return assign_output(out, f_(a...));
    }
    run_into<false>(device::cpu, out, a...);
  }

  plan_statistics statistics() const { return cache_->statistics(); }
  const F& function() const { return f_; }

  // The graph traced for these arguments, forward and backward, with its
  // fusion groups: as text, and as Graphviz dot.
  template <class... A>
  std::string text(const A&... a) const {
    return detail::graph_text(trace(a...));
  }
  template <class... A>
  std::string dot(const A&... a) const {
    return detail::graph_dot(trace(a...));
  }

  // The traced graph for these arguments, as a type: for tests and dumps.
  template <class... A>
  auto trace(const A&... a) const {
    const std::array<const shape*, sizeof...(A) + 1> shapes{detail::argument_shape(a)..., nullptr};
    detail::trace_inputs_scope scope(shapes.data(), sizeof...(A));
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::outputs_root(f_(detail::symbol_for<I>(a)...));
    }(std::index_sequence_for<A...>{});
  }

 private:
  template <class G, class... A>
  friend struct detail::gpu_graph_entry;

  // On GPU tensors: the graph's kernels where a program's nvcc unit
  // compiled them for these argument types, else the function eagerly.
  template <class... A>
  auto run_on_gpu(bool unit_seed, bool unit_seed_value_read, const A&... a) const {
    detail::profile_range range(profile_category::graph, "static_graph");
    if (range.recording()) detail::describe_operands(range, a...);
    if (auto compiled = detail::cuda_graph_slot<F, A...>.load(std::memory_order_acquire))
      return compiled(*this, unit_seed, unit_seed_value_read, a...);
    return detail::pair_as_tuple(f_(a...));
  }

  // Eagerly, the backward leaves the gradients in the tensors' .grad.
  template <class... A>
  auto eager_value_and_gradients(const A&... a) const {
    enable_grad recording;
    auto loss = f_(a...);
    if (loss.requires_grad()) loss.backward();
    return std::pair{loss.detach(), detail::captured_gradients()};
  }

  template <class T, class V>
  static void assign_output(const tensor<T>& out, const V& value) {
    static_assert(std::is_same_v<typename V::value_type, T>,
                  "tandem::jit: into() needs a tensor of the element type the function returns");
    if (value.shape() != out.shape())
      throw shape_error("tandem::jit::into: the graph's output has shape " + to_string(value.shape()) +
                        ", the tensor to write into has shape " + to_string(out.shape()));
    tensor<T> target = out;
    target.assign(value);
  }

  // into()'s run: the group at the output writes into `out` where it may
  // (same shape and device, no input shares its storage); otherwise the
  // output is copied there.
  template <bool OnDevice, class T, class... A>
  void run_into(device where, const tensor<T>& out, const A&... a) const {
    detail::profile_range range(profile_category::graph, "static_graph into");
    if (range.recording()) detail::describe_operands(range, a...);
    detail::confined_call on_this_thread;
    auto root = trace(a...);
    // Two different values of one scalar-holding type (sharing.hpp): as
    // with jit disabled.
    if (!detail::one_value_per_shared_class(root)) return assign_output(out, f_(a...));
    using inputs_type = std::tuple<const A&...>;
    bool known = cache_->known_call(a...);
    inputs_type inputs{a...};
    detail::executor<decltype(root), inputs_type, OnDevice> exec(inputs, false, nullptr, true, where);
    exec.discard_captured();
    exec.write_into(output_keys(root)[0], out);
    auto output = detail::apply_operands([&](const auto& o) { return exec.value(o); }, root.children);
    if (!known) remember<decltype(root)>(detail::signature_of(a...));
    if (exec.wrote_into_destination()) out.storage()->bump_version();
    else assign_output(out, output);
  }

  template <bool OnDevice, class... A>
  auto train(device where, const A&... a) const {
    detail::profile_range range(profile_category::graph, "static_graph training step");
    if (range.recording()) detail::describe_operands(range, a...);
    detail::confined_call on_this_thread;
    auto root = trace(a...);
    auto keys = output_keys(root);
    static_assert(keys.size() == 1, "tandem::jit: a training step's function must return one value, its loss");
    if (!detail::one_value_per_shared_class(root)) return eager_value_and_gradients(a...);
    const void* key = keys[0];
    bool known = cache_->known_call(a...);
    using inputs_type = std::tuple<const A&...>;
    using exec_type = detail::executor<decltype(root), inputs_type, OnDevice>;
    inputs_type inputs{a...};
    std::shared_ptr<detail::graph_run> run(
        static_cast<detail::graph_run*>(new exec_type(inputs, true, key, true, where)));
    auto* exec = static_cast<exec_type*>(run.get());
    auto output = detail::apply_operands([&](const auto& loss) { return exec->value(loss); }, root.children);
    static_assert(std::is_floating_point_v<typename decltype(output)::value_type>,
                  "tandem::jit: a training step's loss must be a float or double tensor");
    if (!known) remember<decltype(root)>(detail::signature_of(a...));
    exec->backward({{key, detail::any_tensor(ones_like(output))}});
    return std::pair{output, detail::captured_gradients(std::move(run), exec->captured())};
  }

  template <bool OnDevice, class... A, std::size_t... I>
  auto run(std::index_sequence<I...>, bool unit_seed, bool unit_seed_value_read, device where, const A&... a) const {
    detail::profile_range range(profile_category::graph, "static_graph");
    if (range.recording()) detail::describe_operands(range, a...);
    detail::confined_call on_this_thread;
    auto root = trace(a...);
    // Two different values of one scalar-holding type (sharing.hpp): as
    // with jit disabled.
    if (!detail::one_value_per_shared_class(root)) return detail::pair_as_tuple(f_(a...));
    return run_traced<OnDevice>(root, unit_seed, unit_seed_value_read, where, a...);
  }

  // run()'s graph, traced. (A function of its own so that its one return
  // names its result: run()'s other return kept GCC from constructing the
  // result in place, a move per call.)
  template <bool OnDevice, class Root, class... A>
  auto run_traced(const Root& root, bool unit_seed, bool unit_seed_value_read, device where, const A&... a) const {
    using inputs_type = std::tuple<const A&...>;
    bool known = cache_->known_call(a...);
    bool recording = is_grad_enabled() && (detail::input_requires_grad(a) || ... || detail::reads_captured<Root>());
    inputs_type inputs{a...};
    // Types that name the graph type never reach std::make_shared, std::tuple
    // or a shared_ptr conversion: GCC 12 checks those in time exponential in
    // the depth of the graph (30 steps of h*h+h took minutes).
    // The run lives on the stack unless the autograd graph keeps it.
    const void* seeded = unit_seed ? output_keys(root)[0] : nullptr;
    using exec_type = detail::executor<Root, inputs_type, OnDevice>;
    exec_type exec(inputs, recording, seeded, unit_seed_value_read, where);
    if (!recording) exec.discard_captured();
    // One output is returned as it was computed: moving it into and out of
    // a tuple was a tenth of a cached call of jit(x + y).
    constexpr bool one_output = std::tuple_size_v<decltype(output_keys(std::declval<const Root&>()))> == 1;
    auto outputs = detail::apply_operands(
        [&](const auto&... out) {
          if constexpr (one_output) return exec.value(out...);
          else return std::tuple{exec.value(out)...};
        },
        root.children);
    if (!known) remember<Root>(detail::signature_of(a...));
    if (recording) {
      std::shared_ptr<detail::graph_run> run(static_cast<detail::graph_run*>(new exec_type(std::move(exec))));
      const auto& kept = static_cast<const exec_type&>(*run);
      if constexpr (one_output) {
        auto tied = std::tie(outputs);
        connect(std::move(run), kept.captured(), output_keys(root), tied, a...);
      } else {
        connect(std::move(run), kept.captured(), output_keys(root), outputs, a...);
      }
    }
    return outputs;
  }

  // A call with a new signature: the signature, and the constructs whose
  // sub-graphs' runs statistics() counts.
  template <class Root>
  void remember(const detail::signature& signature) const {
    static_assert(!std::is_reference_v<Root>, "tandem internal: remember() takes the graph's type, not a reference to it");
    cache_->insert(signature);
    detail::for_each_construct<Root>([&](const detail::construct_counters& c) { cache_->add_construct(&c); });
  }

  template <class Root>
  static auto output_keys(const Root& root) {
    return detail::apply_operands(
        [](const auto&... out) { return std::array<const void*, sizeof...(out)>{detail::key_of(out)...}; },
        root.children);
  }

  // The call replayed eagerly, for a backward that must be recorded or run
  // again (graph/join.hpp): f on copies of the arguments (tensors share
  // their data and their place on the autograd graph), its outputs seeded.
  template <std::size_t N, class... A>
  detail::recorded_backward replay(const std::array<const void*, N>& output_keys, const A&... a) const {
    return [f = f_, arguments = std::tuple<A...>(a...), output_keys](const detail::graph_seeds& seeds) {
      enable_grad recording;
      auto result = std::apply(f, arguments);
      std::vector<std::shared_ptr<detail::node>> seeded;
      auto hand = [&]<class T>(const void* key, const tensor<T>& out) {
        if constexpr (std::is_floating_point_v<T>) {
          std::shared_ptr<detail::node> target = detail::edge_of(out);
          if (!target) return;
          for (const auto& [seed_key, g] : seeds)
            if (seed_key == key)
              std::visit(
                  [&](const auto& t) {
                    if constexpr (std::is_floating_point_v<typename std::decay_t<decltype(t)>::value_type>)
                      target->receive(t);
                  },
                  g);
          if (target->has_pending()) seeded.push_back(std::move(target));
        }
      };
      if constexpr (is_tensor_v<decltype(result)>) {
        hand(output_keys[0], result);
      } else {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
          (hand(output_keys[K], std::get<K>(result)), ...);
        }(std::make_index_sequence<N>{});
      }
      return seeded;
    };
  }

  template <class Outputs, std::size_t N, class... A>
  void connect(std::shared_ptr<detail::graph_run> run,
               const detail::captured_tensors& captured,
               const std::array<const void*, N>& output_keys, Outputs& outputs, const A&... a) const {
    std::vector<std::shared_ptr<detail::node>> edges;
    std::vector<const void*> keys;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto add = [&]<std::size_t J, class X>(std::integral_constant<std::size_t, J>, const X& x) {
        if constexpr (is_tensor_v<X>) {
          edges.push_back(detail::edge_of(x));
          keys.push_back(detail::key_of(sym<detail::input_node<J, typename X::value_type>>{}));
        }
      };
      (add(std::integral_constant<std::size_t, I>{}, a), ...);
    }(std::index_sequence_for<A...>{});
    captured.for_each([&](const void* key, const detail::any_tensor& value) {
      std::visit(
          [&](const auto& x) {
            edges.push_back(detail::edge_of(x));
            keys.push_back(key);
          },
          value);
    });
    bool any_edge = false;
    for (const auto& e : edges) any_edge = any_edge || e;
    if (!any_edge) return;
    auto join = std::make_shared<detail::graph_join_node>(std::move(run), replay(output_keys, a...), std::move(edges),
                                                          std::move(keys));
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (attach(join, output_keys[K], std::get<K>(outputs)), ...);
    }(std::make_index_sequence<N>{});
  }

  template <class T>
  static void attach(const std::shared_ptr<detail::graph_join_node>& join, const void* key, tensor<T>& out) {
    if constexpr (std::is_floating_point_v<T>) {
      out.autograd() = detail::make_cached<detail::autograd_meta<T>>();
      out.autograd()->requires_grad = true;
      out.autograd()->grad_fn = std::make_shared<detail::graph_output_node<T>>(join, key);
    }
  }

  F f_;
  std::shared_ptr<detail::plan_cache> cache_;
};

template <class F>
auto jit(F f) {
  return static_graph<F>(std::move(f));
}

// A static graph already is one.
template <class F>
auto jit(static_graph<F> g) {
  return g;
}

// jit(grad(f)) is grad(jit(f)): the gradient of a static graph runs its
// fused forward and its fused backward. The rule applies all the way down,
// so jit(grad(jit(grad(f)))) is grad(grad(jit(f))).
template <bool WithValue, class F, class Params, class... Options>
auto jit(detail::gradient_function<WithValue, F, Params, Options...> g) {
  auto inner = jit(std::move(g.f));
  return detail::gradient_function<WithValue, decltype(inner), Params, Options...>{std::move(inner),
                                                                                   std::move(g.params)};
}

// A member function as a static graph: `f(object, args...)` is traced with
// the object bound, so its members are read on every call.
template <class Object, class F>
auto jit(Object* object, F f) {
  auto bound = [object, f](const auto&... a) { return f(*object, a...); };
  return static_graph<decltype(bound)>(std::move(bound));
}

}  // namespace tandem
