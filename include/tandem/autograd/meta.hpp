#pragma once
// What a tensor knows about autograd, shared by all handles of one tensor
// (views get their own): whether it requires a gradient, the node that made
// it (none for a leaf), a leaf's accumulator, its gradient and name, and
// what to call when a backward has finished a leaf's gradient.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/autograd/node.hpp"

namespace tandem::detail {

template <class T>
struct autograd_meta {
  bool requires_grad = false;
  std::shared_ptr<node> grad_fn;      // the recorded op that produced the tensor; empty for a leaf
  std::shared_ptr<node> accumulator;  // a leaf's gradient sink, made when the leaf is first used
  std::optional<tensor<T>> grad;      // a leaf's accumulated gradient
  std::string name;                   // a parameter's name
  // Called with grad() each time a backward has added all of its part
  // (autograd/gradient_ready.hpp), by the handle's number.
  std::vector<std::pair<std::uint64_t, std::function<void(const tensor<T>&)>>> ready_hooks;
};

}  // namespace tandem::detail
