#pragma once
// A loop with a fixed count for code that builds static graphs: each step
// may change the value's type (a symbolic value's type is its graph), which
// a run-time `for` cannot express. repeat<3>(x, f) is f(f(f(x))).

#include <cstddef>

namespace tandem {

template <std::size_t N, class X, class F>
auto repeat(const X& x, const F& step) {
  if constexpr (N == 0) return x;
  else return repeat<N - 1>(step(x), step);
}

}  // namespace tandem
