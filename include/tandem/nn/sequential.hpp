#pragma once
// nn::sequential: modules applied in order, registered as "0", "1", ... It
// holds its layers by value in a tuple, so the whole network is one type and
// its forward traces into one static graph.

#include <string>
#include <tuple>
#include <utility>

#include "tandem/nn/module.hpp"

namespace tandem::nn {

template <class... Layers>
class sequential : public module<sequential<Layers...>> {
 public:
  std::tuple<Layers...> layers;

  explicit sequential(Layers... l) : layers(std::move(l)...) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (this->register_module(std::to_string(I), std::get<I>(layers)), ...);
    }(std::index_sequence_for<Layers...>{});
  }

  template <class X>
  auto forward(const X& x) const {
    return apply_from<0>(x);
  }

 private:
  template <std::size_t I, class X>
  auto apply_from(const X& x) const {
    if constexpr (I == sizeof...(Layers)) return x;
    else return apply_from<I + 1>(std::get<I>(layers)(x));
  }
};

}  // namespace tandem::nn
