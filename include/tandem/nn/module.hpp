#pragma once
// nn::module, MindSpore's Cell: a class whose parameters, buffers (state
// that is saved but not trained, like batch norm's running statistics) and
// sub-modules are registered by name, and whose generic `forward` runs
// eagerly or, in mode::graph, as a static graph.
//
//   struct mlp : nn::module<mlp> {
//     nn::linear<float> hidden{784, 256, gen}, out{256, 10, gen};
//     mlp() { register_module("hidden", hidden); register_module("out", out); }
//     auto forward(const auto& x) const { return out(relu(hidden(x))); }
//   };
//
// Registration keeps each member's offset inside the module, not its
// address, so a module may be copied or moved (into a sequential, say) and
// its registry still names its own members. Parameters are tensor handles:
// an optimizer updates them in place, and a static graph reads them on
// every call as inputs, so an update never needs a recompile.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/graph/mode.hpp"
#include "tandem/graph/static_graph.hpp"

namespace tandem::nn {

// A parameter or buffer of a module tree: its dotted name and a handle that
// shares its values and gradient.
struct named_tensor {
  std::string name;
  std::variant<tensor<float>, tensor<double>> value;
};

class module_base {
 public:
  // Every parameter of this module and its sub-modules, depth first, in
  // registration order, named like "features.0.weight".
  std::vector<named_tensor> named_parameters() const {
    std::vector<named_tensor> out;
    collect(out, "", entry_kind::parameter);
    return out;
  }
  std::vector<named_tensor> named_buffers() const {
    std::vector<named_tensor> out;
    collect(out, "", entry_kind::buffer);
    return out;
  }
  // How many numbers the parameters hold.
  std::int64_t parameter_count() const {
    std::int64_t n = 0;
    for (const auto& p : named_parameters()) std::visit([&](const auto& t) { n += t.numel(); }, p.value);
    return n;
  }

  // Training mode (the default) or evaluation mode, for this module and
  // every sub-module: dropout and batch norm read it.
  void train(bool on = true) {
    training_ = on;
    for (const auto& child : children_) child_at(child.offset).train(on);
  }
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Forgets every parameter's gradient.
  void zero_grad() {
    for (auto& p : named_parameters()) std::visit([](auto& t) { t.zero_grad(); }, p.value);
  }

  // Moves every parameter, buffer and gradient of this module and its
  // sub-modules to `where`: the members become handles to copies there
  // (parameters stay named leaves). Handles taken before, an optimizer's
  // among them, keep the old tensors, so build the optimizer after the move.
  void to(device where) {
    for (const auto& e : entries_) {
      if (e.is_double) move_entry(member_at<double>(e.offset), where);
      else move_entry(member_at<float>(e.offset), where);
    }
    for (const auto& child : children_) child_at(child.offset).to(where);
  }

 protected:
  module_base() = default;
  ~module_base() = default;

  enum class entry_kind { parameter, buffer };
  struct entry {
    std::string name;
    entry_kind kind;
    bool is_double;
    std::ptrdiff_t offset;
  };
  struct child_entry {
    std::string name;
    std::ptrdiff_t offset;
  };

  // Registration, checked: a name is one non-empty word, unique within its
  // module, and the member lies inside the module object (`extent` bytes).
  template <class T>
  void add_entry(const std::string& name, tensor<T>& member, entry_kind kind, std::size_t extent) {
    check_name(name);
    entries_.push_back({name, kind, std::is_same_v<T, double>, offset_of(&member, extent, name)});
  }
  void add_child(const std::string& name, module_base& child, std::size_t extent) {
    check_name(name);
    if (&child == this) throw value_error("tandem::nn::module: a module cannot be its own sub-module ('" + name + "')");
    children_.push_back({name, offset_of(&child, extent, name)});
  }

 private:
  void collect(std::vector<named_tensor>& out, const std::string& prefix, entry_kind kind) const {
    for (const auto& e : entries_) {
      if (e.kind != kind) continue;
      if (e.is_double) out.push_back({prefix + e.name, member_at<double>(e.offset)});
      else out.push_back({prefix + e.name, member_at<float>(e.offset)});
    }
    for (const auto& child : children_) child_at(child.offset).collect(out, prefix + child.name + ".", kind);
  }

  void check_name(const std::string& name) const {
    if (name.empty() || name.find('.') != std::string::npos)
      throw value_error("tandem::nn::module: '" + name + "' is not a valid name (one non-empty word without '.')");
    for (const auto& e : entries_)
      if (e.name == name) throw value_error("tandem::nn::module: the name '" + name + "' is already registered");
    for (const auto& c : children_)
      if (c.name == name) throw value_error("tandem::nn::module: the name '" + name + "' is already registered");
  }

  std::ptrdiff_t offset_of(const void* member, std::size_t extent, const std::string& name) const {
    auto at = reinterpret_cast<std::uintptr_t>(member), self = reinterpret_cast<std::uintptr_t>(this);
    if (at < self || at >= self + extent)
      throw value_error("tandem::nn::module: '" + name +
                        "' is not a member of the module registering it (register members, not locals)");
    return static_cast<std::ptrdiff_t>(at - self);
  }

  template <class T>
  static void move_entry(tensor<T>& member, device where) {
    if (member.device() == where) return;
    std::shared_ptr<detail::autograd_meta<T>> meta = member.autograd();
    tensor<T> moved = member.detach().to(where);
    if (meta) {
      moved.set_requires_grad(meta->requires_grad);
      moved.autograd()->name = meta->name;
      if (meta->grad) moved.autograd()->grad = meta->grad->detach().to(where);
    }
    member = moved;
  }

  template <class T>
  tensor<T>& member_at(std::ptrdiff_t offset) const {
    auto* self = const_cast<char*>(reinterpret_cast<const char*>(this));
    return *std::launder(reinterpret_cast<tensor<T>*>(self + offset));
  }
  module_base& child_at(std::ptrdiff_t offset) const {
    auto* self = const_cast<char*>(reinterpret_cast<const char*>(this));
    return *std::launder(reinterpret_cast<module_base*>(self + offset));
  }

  std::vector<entry> entries_;
  std::vector<child_entry> children_;
  bool training_ = true;
};

namespace detail {
template <class M>
struct forward_of {
  const M* self;
  template <class... A>
  auto operator()(const A&... a) const {
    return self->forward(a...);
  }
};

// A module's call in mode::graph, returning R: the eager forward's type,
// which the graph's equals. R is given, not deduced, so that tandem::compiled
// can declare the library's own modules' graphs extern (compiled/modules.hpp)
// without instantiating anything: a declaration cannot keep the compiler from
// instantiating a function whose type it must deduce, and each of these
// graphs costs seconds (nn::gpt's and its blocks' about 28 s of g++ time)
// in every translation unit that calls the module, eagerly or not.
template <class R, class M, class... A>
R run_as_graph(const M& self, const std::shared_ptr<tandem::detail::plan_cache>& plans, const A&... a) {
  return static_graph<forward_of<M>>(forward_of<M>{&self}, plans)(a...);
}
}  // namespace detail

// The base of a module type M (M derives from module<M>): registration, and
// a call operator that runs M::forward eagerly, or as a static graph in
// mode::graph. Called on symbolic values (inside another module's graph),
// it traces M::forward into that graph.
template <class M>
class module : public module_base {
 public:
  template <class... A>
  auto operator()(const A&... a) const {
    const M& self = static_cast<const M&>(*this);
    if constexpr ((tandem::is_symbolic_v<A> || ...)) {
      return self.forward(a...);
    } else {
      if (get_mode() == mode::graph && jit_enabled())
        return detail::run_as_graph<decltype(self.forward(a...))>(self, plans_, a...);
      return self.forward(a...);
    }
  }

  // The plans of this module's static graph (mode::graph).
  plan_statistics graph_statistics() const { return plans_->statistics(); }

 protected:
  // `inline` keeps the line from starting with `module`, which nvcc 13 reads
  // as the start of a C++20 module declaration and warns about (#3189).
  inline module() = default;

  // Makes `member` a trained parameter named `name`: it requires a
  // gradient, and optimizers and checkpoints see it.
  template <floating_element T>
  tensor<T>& register_parameter(const std::string& name, tensor<T>& member) {
    add_entry(name, member, entry_kind::parameter, sizeof(M));
    member.set_requires_grad(true);
    member.autograd()->name = name;
    return member;
  }
  // Makes `member` saved state that is not trained (no gradient).
  template <floating_element T>
  tensor<T>& register_buffer(const std::string& name, tensor<T>& member) {
    add_entry(name, member, entry_kind::buffer, sizeof(M));
    return member;
  }
  template <class Child>
  Child& register_module(const std::string& name, Child& child) {
    static_assert(std::is_base_of_v<module_base, Child>,
                  "tandem::nn::module::register_module: the sub-module must derive from nn::module<itself>");
    add_child(name, child, sizeof(M));
    return child;
  }

 private:
  std::shared_ptr<tandem::detail::plan_cache> plans_ = std::make_shared<tandem::detail::plan_cache>();
};

}  // namespace tandem::nn
