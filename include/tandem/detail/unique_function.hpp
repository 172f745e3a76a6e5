#pragma once
// A move-only callable holder: the closure on the heap, called and destroyed
// through two plain function pointers. std::function's type erasure brings
// a manager and the closure's type information with every closure type,
// and a static graph's closures have the graph's whole type in their names:
// one executor held nineteen of them.

#include <utility>

namespace tandem::detail {

template <class Signature>
class unique_function;

template <class R, class... A>
class unique_function<R(A...)> {
 public:
  template <class F>
  unique_function(F f)
      : closure_(new F(std::move(f))),
        call_([](void* c, A... a) -> R { return (*static_cast<F*>(c))(std::forward<A>(a)...); }),
        destroy_([](void* c) { delete static_cast<F*>(c); }) {}
  unique_function(unique_function&& other) noexcept
      : closure_(std::exchange(other.closure_, nullptr)), call_(other.call_), destroy_(other.destroy_) {}
  unique_function& operator=(unique_function&& other) noexcept {
    unique_function(std::move(other)).swap(*this);
    return *this;
  }
  unique_function(const unique_function&) = delete;
  unique_function& operator=(const unique_function&) = delete;
  ~unique_function() {
    if (closure_) destroy_(closure_);
  }

  R operator()(A... a) const { return call_(closure_, std::forward<A>(a)...); }

 private:
  void swap(unique_function& other) noexcept {
    std::swap(closure_, other.closure_);
    std::swap(call_, other.call_);
    std::swap(destroy_, other.destroy_);
  }

  void* closure_;
  R (*call_)(void*, A...);
  void (*destroy_)(void*);
};

}  // namespace tandem::detail
