#pragma once
// What a tensor knows about autograd, shared by all handles of one tensor
// (views get their own): whether it requires a gradient, the node that made
// it (none for a leaf), a leaf's accumulator, its gradient and name.

#include <memory>
#include <optional>
#include <string>

#include "tandem/autograd/node.hpp"

namespace tandem::detail {

template <class T>
struct autograd_meta {
  bool requires_grad = false;
  std::shared_ptr<node> grad_fn;      // the recorded op that produced the tensor; empty for a leaf
  std::shared_ptr<node> accumulator;  // a leaf's gradient sink, made when the leaf is first used
  std::optional<tensor<T>> grad;      // a leaf's accumulated gradient
  std::string name;                   // a parameter's name
};

}  // namespace tandem::detail
