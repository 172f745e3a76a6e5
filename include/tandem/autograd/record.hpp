#pragma once
// Recording eager ops. record(op, out, x...) is called by every op after it
// has computed `out`: when recording is on and an input requires a gradient,
// it attaches an op_node to `out`. The node saves what the op's derivative
// rule needs (inputs by handle, with the storage version at save time, and
// the output without its autograd link, to avoid a cycle) and edges to the
// inputs' nodes. Running it applies the rule for every input that needs a
// gradient, sums broadcast axes back to the input's shape, and hands the
// result on.

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "tandem/autograd/derivative.hpp"
#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/meta.hpp"
#include "tandem/autograd/node.hpp"
#include "tandem/core/dtype.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::detail {

// A node whose output has element type T; it collects that output's gradient.
template <class T>
class typed_node : public node {
 public:
  void receive(const tensor<float>& g) override { add(g); }
  void receive(const tensor<double>& g) override { add(g); }
  bool has_pending() const override { return pending_.has_value(); }
  any_gradient pending() const override { return *pending_; }
  any_gradient pending_plus(const any_gradient& other) const override {
    return std::visit(
        [&](const auto& g) -> any_gradient {
          if constexpr (std::is_same_v<std::decay_t<decltype(g)>, tensor<T>>) return *pending_ + g;
          else return *pending_ + g.template astype<T>();
        },
        other);
  }
  void clear_pending() override { pending_.reset(); }

 protected:
  tensor<T> take_pending() {
    tensor<T> g = std::move(*pending_);
    pending_.reset();
    return g;
  }

 private:
  template <class U>
  void add(const tensor<U>& g) {
    tensor<T> same = [&] {
      if constexpr (std::is_same_v<U, T>) return g;
      else return g.template astype<T>();
    }();
    pending_ = pending_ ? *pending_ + same : same;
  }

  std::optional<tensor<T>> pending_;
};

// The end of the graph at a leaf: adds the gradient into the leaf's grad().
template <class T>
class leaf_accumulator final : public typed_node<T> {
 public:
  explicit leaf_accumulator(std::weak_ptr<autograd_meta<T>> meta) : meta_(std::move(meta)) {}

  void run(const backward_context& context) override {
    tensor<T> g = this->take_pending();
    auto meta = meta_.lock();
    if (!context.accumulate_into_leaves || !meta) return;
    // The gradient may share storage with another (add hands g to both
    // inputs) or be a broadcast view: a leaf keeps its own buffer.
    if (!context.create_graph && (g.storage().use_count() > 1 || !g.is_contiguous())) g = g.clone();
    meta->grad = meta->grad ? *meta->grad + g : g;
    // A copy: a hook may remove itself.
    const auto hooks = meta->ready_hooks;
    for (const auto& hook : hooks) hook.second(*meta->grad);
  }
  bool runs_when_ready() const override {
    auto meta = meta_.lock();
    return meta && !meta->ready_hooks.empty();
  }
  std::string name() const override {
    auto meta = meta_.lock();
    return meta && !meta->name.empty() ? "leaf " + meta->name : "leaf";
  }
  bool is_leaf_accumulator() const override { return true; }

 private:
  std::weak_ptr<autograd_meta<T>> meta_;
};

template <class X>
constexpr bool is_floating_tensor = false;
template <class X>
  requires is_tensor_v<X>
constexpr bool is_floating_tensor<X> = std::is_floating_point_v<typename X::value_type>;

template <class X>
bool input_requires_grad(const X& x) {
  if constexpr (is_floating_tensor<X>) return x.requires_grad();
  else return false;
}

// The node a gradient for x must go to: the op that made x, or x's accumulator.
template <class X>
std::shared_ptr<node> edge_of(const X& x) {
  if constexpr (is_floating_tensor<X>) {
    if (!x.requires_grad()) return nullptr;
    auto& meta = x.autograd();
    if (meta->grad_fn) return meta->grad_fn;
    using T = typename X::value_type;
    if (!meta->accumulator) meta->accumulator = make_cached<leaf_accumulator<T>>(meta);
    return meta->accumulator;
  } else {
    return nullptr;
  }
}

template <class Op>
constexpr bool saves_inputs() {
  if constexpr (requires { Op::saves_inputs; }) return Op::saves_inputs;
  else return true;
}
template <class Op>
constexpr bool saves_output() {
  if constexpr (requires { Op::saves_output; }) return Op::saves_output;
  else return false;
}

// A value saved for backward: a tensor handle and its storage version, or a scalar.
template <class X>
struct saved_value {
  X value;
  X unpack(const std::string&) const { return value; }
};
template <class T>
struct saved_value<tensor<T>> {
  std::optional<tensor<T>> value;
  std::uint64_t version = 0;

  tensor<T> unpack(const std::string& op) const {
    if (!value) return tensor<T>();
    if (value->storage()->version() != version)
      throw error("tandem::backward: a tensor of shape " + to_string(value->shape()) + " saved by " + op +
                  " was modified in place after it was saved (version " + std::to_string(version) + ", now " +
                  std::to_string(value->storage()->version()) + ")");
    return *value;
  }
};

template <class X>
saved_value<X> save(const X& x, bool keep) {
  if constexpr (is_tensor_v<X>) {
    if (!keep) return {};
    return {x, x.storage()->version()};
  } else {
    return {x};
  }
}

template <class X>
shape shape_of(const X& x) {
  if constexpr (is_tensor_v<X>) return x.shape();
  else return {};
}

template <rule Rule, class Op, class R, class... X>
class op_node final : public typed_node<R> {
 public:
  // `edges` must exist before the node does: a leaf's accumulator made on
  // first use needs a smaller sequence number than the nodes that feed it.
  op_node(std::vector<std::shared_ptr<node>> edges, const Op& op, const tensor<R>& out, const X&... x)
      : op_(op), inputs_{save(x, saves_inputs<Op>())...}, shapes_{shape_of(x)...} {
    if constexpr (saves_output<Op>()) output_ = save(out.detach(), true);
    this->next_ = std::move(edges);
  }

  void run(const backward_context& context) override {
    if (released_)
      throw error(std::string("tandem::backward: the graph through ") + Op::name +
                  " was freed by an earlier backward; pass retain_graph = true to run backward through it twice");
    tensor<R> g = this->take_pending();
    tensor<R> y = unpack_output(context);
    std::apply([&](const auto&... saved) { send_all(g, y, saved.unpack(Op::name)...); }, inputs_);
    if (!context.retain_graph) {
      inputs_ = {};
      output_.value.reset();
      released_ = true;
    }
  }

  std::string name() const override { return Op::name; }

 private:
  // The saved output, linked back to this node when the backward itself is
  // recorded (so that a second derivative flows through it).
  tensor<R> unpack_output(const backward_context& context) {
    if constexpr (!saves_output<Op>()) {
      return tensor<R>();
    } else {
      tensor<R> y = output_.unpack(Op::name);
      if (context.create_graph) {
        y.autograd() = make_cached<autograd_meta<R>>();
        y.autograd()->requires_grad = true;
        y.autograd()->grad_fn = this->shared_from_this();
      }
      return y;
    }
  }

  template <class... V>
  void send_all(const tensor<R>& g, const tensor<R>& y, const V&... x) {
    if constexpr (Rule == rule::built_in && has_joint_gradients<Op, tensor<R>, V...>) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        const std::array<bool, sizeof...(V)> wanted{wants<I>()...};
        auto gradients = op_.gradients(wanted, g, y, x...);
        (deliver<I>(std::get<I>(gradients)), ...);
      }(std::index_sequence_for<V...>{});
    } else {
      [&]<std::size_t... I>(std::index_sequence<I...>) { (send<I>(g, y, x...), ...); }(std::index_sequence_for<V...>{});
    }
  }

  template <std::size_t I>
  bool wants() const {
    return is_floating_tensor<std::tuple_element_t<I, std::tuple<X...>>> && this->next_[I] != nullptr;
  }

  // Input I's gradient to its node, summed to its shape where it was
  // broadcast; nothing where it wants none.
  template <std::size_t I, class Gradient>
  void deliver(const Gradient& gi) {
    if constexpr (is_floating_tensor<std::tuple_element_t<I, std::tuple<X...>>>) {
      if (wants<I>()) this->next_[I]->receive(sum_to(gi, shapes_[I]));
    }
  }

  template <std::size_t I, class... V>
  void send(const tensor<R>& g, const tensor<R>& y, const V&... x) {
    if constexpr (is_floating_tensor<std::tuple_element_t<I, std::tuple<X...>>>) {
      if (wants<I>()) deliver<I>(apply_rule<I, Op, Rule>(op_, g, y, x...));
    }
  }

  Op op_;
  std::tuple<saved_value<X>...> inputs_;
  saved_value<tensor<R>> output_;
  std::array<shape, sizeof...(X)> shapes_;
  bool released_ = false;
};

// What a node keeps of an input: a parameter<T> is kept as its tensor<T>.
template <class X>
struct as_recorded {
  using type = X;
};
template <class X>
  requires is_tensor_v<X>
struct as_recorded<X> {
  using type = tensor<typename X::value_type>;
};

// Called by every op with its result: attaches a node when it must.
template <class Op, class R, class... X>
void record(const Op& op, tensor<R>& out, const X&... x) {
  if constexpr (std::is_floating_point_v<R>) {
    if (!is_grad_enabled() || !(input_requires_grad(x) || ...)) return;
    if constexpr (has_derivative_rule<Op, tensor<R>, X...>) {
      require_rule_of_compiled_library<Op>();
      std::vector<std::shared_ptr<node>> edges{edge_of(x)...};
      bool in_capture = active_deferred_work() != nullptr;
      for (const auto& e : edges) in_capture = in_capture || (e && e->recorded_in_capture);
      auto n = make_cached<op_node<rule_of<Op>, Op, R, typename as_recorded<X>::type...>>(
          std::move(edges), op, out, static_cast<const typename as_recorded<X>::type&>(x)...);
      n->recorded_in_capture = in_capture;
      out.autograd() = make_cached<autograd_meta<R>>();
      out.autograd()->requires_grad = true;
      out.autograd()->grad_fn = std::move(n);
    } else {
      throw error(std::string("tandem::") + Op::name +
                  ": this op has no derivative rule, but an input requires a gradient; give the op a "
                  "derivative<I>(g, y, x...) member or specialize tandem::derivative");
    }
  } else if constexpr (is_reduced_float_v<R>) {
    // A 16-bit result carries no gradient: an input that needs one would
    // lose it here without a word.
    if (is_grad_enabled() && (input_requires_grad(x) || ...))
      throw value_error(std::string("tandem::") + Op::name + ": a " + std::string(dtype_name(dtype_of<R>)) +
                        " result cannot carry a gradient, but an input requires one; compute in float or "
                        "double, or detach() the input");
  }
}

}  // namespace tandem::detail
