#pragma once
// on_gradient_ready(leaf, hook): hook(leaf.grad()) each time a backward has
// finished adding to a leaf's gradient (PyTorch's post-accumulate-grad
// hook). The engine runs such a leaf as soon as every op that sends it a
// gradient has run, so the hook fires while the backward goes on through
// earlier layers: data-parallel training starts averaging the last layers'
// gradients there (dist/data_parallel.hpp). grad() and value_and_grad,
// which leave no gradient in leaves, call no hook.
//
//   auto handle = on_gradient_ready(weight, [](const tensor<float>& g) { ... });
//   loss.backward();   // the hook runs once weight's gradient is complete
//
// The hook lives as long as its handle.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "tandem/autograd/meta.hpp"
#include "tandem/autograd/node.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem {

// Removes its hook when destroyed or reset.
class hook_handle {
 public:
  hook_handle() = default;
  explicit hook_handle(std::function<void()> remove) : remove_(std::move(remove)) {}
  hook_handle(hook_handle&& other) noexcept : remove_(std::exchange(other.remove_, nullptr)) {}
  hook_handle& operator=(hook_handle&& other) noexcept {
    if (this != &other) {
      reset();
      remove_ = std::exchange(other.remove_, nullptr);
    }
    return *this;
  }
  hook_handle(const hook_handle&) = delete;
  hook_handle& operator=(const hook_handle&) = delete;
  ~hook_handle() { reset(); }

  void reset() {
    if (remove_) std::exchange(remove_, nullptr)();
  }

 private:
  std::function<void()> remove_;
};

template <class T>
  requires std::is_floating_point_v<T>
[[nodiscard]] hook_handle on_gradient_ready(const tensor<T>& leaf,
                                          std::type_identity_t<std::function<void(const tensor<T>&)>> hook) {
  if (!leaf.requires_grad() || leaf.autograd()->grad_fn)
    throw error("tandem::on_gradient_ready: the tensor of shape " + to_string(leaf.shape()) +
                " is not a leaf that requires a gradient (a parameter, or a tensor given set_requires_grad(true))");
  static std::atomic<std::uint64_t> numbers{0};
  const std::uint64_t number = numbers.fetch_add(1, std::memory_order_relaxed);
  const std::shared_ptr<detail::autograd_meta<T>>& meta = leaf.autograd();
  meta->ready_hooks.emplace_back(number, std::move(hook));
  detail::ready_hook_count().fetch_add(1, std::memory_order_relaxed);
  return hook_handle([weak = std::weak_ptr<detail::autograd_meta<T>>(meta), number] {
    detail::ready_hook_count().fetch_sub(1, std::memory_order_relaxed);
    if (auto alive = weak.lock())
      std::erase_if(alive->ready_hooks, [number](const auto& h) { return h.first == number; });
  });
}

}  // namespace tandem
