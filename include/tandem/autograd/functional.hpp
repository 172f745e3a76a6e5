#pragma once
// The functional API, after MindSpore's GradOperation and JAX:
//
//   grad(f)                      gradient with respect to the first argument
//   grad(f, args<0, 2>)          with respect to chosen arguments (a tuple)
//   grad(f, all_args)            with respect to every argument (a tuple)
//   grad(f, params)              with respect to a std::vector<tensor<T>> of parameters
//   grad(f, args<0>, params)     both: a pair (arguments' gradients, parameters' gradients)
//   value_and_grad(f, ...)       pair(value of f, gradients)
//   ... sens_param               the call takes the output's sensitivity as a last argument
//   ... has_aux                  f returns pair(output, aux); grad gives pair(gradients, aux),
//                                value_and_grad gives pair(pair(value, aux), gradients)
//
// Without sens_param an output that is not a scalar gets a sensitivity of
// ones (MindSpore's convention). Gradients are returned, never accumulated
// into grad(). Where the output also depends on a tensor that requires a
// gradient other than those asked for (an argument of an enclosing grad, a
// parameter f reads), the backward is itself recorded, so grad composes:
// grad(grad(f)) is the second derivative, and d/dy of grad_x(f)(x, y) the
// mixed one.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/autograd/engine.hpp"
#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/graph/fwd.hpp"

namespace tandem {

template <std::size_t... I>
struct positions {};
template <std::size_t... I>
inline constexpr positions<I...> args{};
struct all_args_t {};
inline constexpr all_args_t all_args{};
struct has_aux_t {};
inline constexpr has_aux_t has_aux{};
struct sens_param_t {};
inline constexpr sens_param_t sens_param{};

namespace detail {

template <class X>
constexpr bool is_positions = false;
template <std::size_t... I>
constexpr bool is_positions<positions<I...>> = true;
template <class X>
constexpr bool is_parameter_list = false;
template <class T>
constexpr bool is_parameter_list<std::vector<tensor<T>>> = true;

template <class O>
constexpr bool is_grad_option = std::is_same_v<O, has_aux_t> || std::is_same_v<O, sens_param_t> ||
                                std::is_same_v<O, all_args_t> || is_positions<O> || is_parameter_list<O>;

// The argument positions asked for, as an index_sequence: the args<...>
// given, else none when only parameters are asked for, else the first.
template <class... Options>
struct given_positions {
  using type = void;
};
template <std::size_t... I, class... Rest>
struct given_positions<positions<I...>, Rest...> {
  using type = std::index_sequence<I...>;
};
template <class O, class... Rest>
  requires(!is_positions<O>)
struct given_positions<O, Rest...> : given_positions<Rest...> {};

template <class... Options>
struct asked_positions {
  using given = typename given_positions<Options...>::type;
  using type = std::conditional_t<
      !std::is_void_v<given>, given,
      std::conditional_t<(is_parameter_list<Options> || ...), std::index_sequence<>, std::index_sequence<0>>>;
};

struct no_parameters {};
inline no_parameters parameters_among() { return {}; }
template <class O, class... Rest>
auto parameters_among(const O& first, const Rest&... rest) {
  if constexpr (is_parameter_list<O>) return first;
  else return parameters_among(rest...);
}

template <std::size_t... P>
constexpr std::array<std::size_t, sizeof...(P)> positions_array(std::index_sequence<P...>) {
  return {P...};
}

template <class T>
tensor<T> gradient_of(const std::optional<any_gradient>& g, const tensor<T>& like) {
  if (!g) return zeros_like(like);
  return std::get<tensor<T>>(*g);
}

// The callable that grad and value_and_grad return.
template <bool WithValue, class F, class Params, class... Options>
struct gradient_function {
  F f;
  Params params;

  static constexpr bool aux = (std::is_same_v<Options, has_aux_t> || ...);
  static constexpr bool sens = (std::is_same_v<Options, sens_param_t> || ...);
  static constexpr bool all = (std::is_same_v<Options, all_args_t> || ...);
  static constexpr bool with_params = !std::is_same_v<Params, no_parameters>;

  template <class... A>
  auto operator()(const A&... a) const {
    static_assert(!(is_symbolic_v<A> || ...),
                  "tandem::grad: a gradient cannot be taken inside a static graph's trace; make the gradient the "
                  "static graph instead: jit(grad(f)) is grad(jit(f))");
    constexpr std::size_t count = sizeof...(A) - (sens ? 1 : 0);
    auto arguments = std::forward_as_tuple(a...);
    if constexpr (all)
      return call(arguments, std::make_index_sequence<count>{}, std::make_index_sequence<count>{});
    else
      return call(arguments, std::make_index_sequence<count>{}, typename asked_positions<Options...>::type{});
  }

 private:
  template <class Args, std::size_t... I, std::size_t... P>
  auto call(const Args& arguments, std::index_sequence<I...>, std::index_sequence<P...>) const {
    constexpr std::size_t count = sizeof...(I);
    static_assert(((P < count) && ...), "tandem::grad: args<...> names a position beyond the function's arguments");
    auto chosen = [](std::size_t i) { return ((i == P) || ...); };

    // Chosen arguments become fresh leaves. One that already requires a
    // gradient (inside an enclosing grad, or a parameter) enters through a
    // recorded alias instead: its gradient is taken at the alias, apart from
    // any other use of the same tensor, and the backward is recorded so that
    // an enclosing grad can differentiate it.
    enable_grad recording;
    bool nested = false;
    auto prepare = [&](std::size_t i, const auto& x) {
      using X = typename as_recorded<std::decay_t<decltype(x)>>::type;
      if constexpr (is_floating_tensor<X>) {
        if (!chosen(i)) return X(x);
        if (x.requires_grad()) {
          nested = true;
          return x.reshape(x.shape());
        }
        X leaf = x.detach();
        leaf.set_requires_grad(true);
        return leaf;
      } else {
        return X(x);
      }
    };
    auto inputs = std::make_tuple(prepare(I, std::get<I>(arguments))...);
    // A function that can use it (a static graph) learns that its output is
    // about to be seeded with ones, so it may run the backward of a final
    // sum inside its forward pass, and whether its value will be read.
    auto result = [&] {
      if constexpr (!sens && requires { f.call_with_unit_seed(inputs, WithValue); })
        if (!nested) return f.call_with_unit_seed(inputs, WithValue);
      return std::apply(f, inputs);
    }();
    const auto& output = [&]() -> const auto& {
      if constexpr (aux) return std::get<0>(result);
      else return result;
    }();
    using out_type = std::decay_t<decltype(output)>;
    static_assert(is_floating_tensor<out_type>,
                  "tandem::grad: f must return a float or double tensor (with has_aux: a pair whose first element is one)");

    capture_request capture;
    (capture.targets.push_back(edge_of(std::get<P>(inputs)).get()), ...);
    if constexpr (with_params)
      for (const auto& p : params) capture.targets.push_back(edge_of(p).get());
    capture.results.resize(capture.targets.size());

    if (output.requires_grad()) {
      nested = nested || reaches_other_leaves(*edge_of(output), capture.targets);
      out_type seed = [&] {
        if constexpr (sens) return std::get<count>(arguments).detach();
        else return ones_like(output);
      }();
      if (seed.shape() != output.shape())
        throw shape_error("tandem::grad: the sensitivity of shape " + to_string(seed.shape()) +
                          " does not match the output of shape " + to_string(output.shape()));
      std::shared_ptr<node> root = edge_of(output);
      root->receive(seed);
      run_graph(*root, {nested, nested, false}, &capture);
    }

    // Results come in target order: the chosen positions, then the parameters.
    auto positional = collect(capture, inputs, std::index_sequence<P...>{}, std::make_index_sequence<sizeof...(P)>{});
    auto gradients = [&] {
      if constexpr (with_params) {
        Params of_params;
        std::size_t at = sizeof...(P);
        for (const auto& p : params) of_params.push_back(gradient_of(capture.results[at++], p));
        if constexpr (sizeof...(P) > 0) return std::make_pair(positional, of_params);
        else return of_params;
      } else {
        return positional;
      }
    }();
    out_type value = nested ? output : output.detach();
    if constexpr (WithValue && aux) return std::make_pair(std::make_pair(value, std::get<1>(result)), gradients);
    else if constexpr (WithValue) return std::make_pair(value, gradients);
    else if constexpr (aux) return std::make_pair(gradients, std::get<1>(result));
    else return gradients;
  }

  // (The positions come as a type, not a second pack: nvcc mixes up two packs here.)
  template <class Inputs, class Positions, std::size_t... J>
  static auto collect(const capture_request& capture, const Inputs& inputs, Positions, std::index_sequence<J...>) {
    constexpr auto position = positions_array(Positions{});
    if constexpr (sizeof...(J) == 1 && !all) return gradient_of(capture.results[0], std::get<position[0]>(inputs));
    else return std::tuple{gradient_of(capture.results[J], std::get<position[J]>(inputs))...};
  }
};

template <bool WithValue, class F, class... Options>
auto make_gradient_function(F f, const Options&... options) {
  static_assert((is_grad_option<Options> && ...),
                "tandem::grad: options are args<i...>, all_args, a std::vector<tensor<T>> of parameters, has_aux "
                "and sens_param");
  using params_type = decltype(parameters_among(options...));
  return gradient_function<WithValue, F, params_type, Options...>{std::move(f), parameters_among(options...)};
}

}  // namespace detail

template <class F, class... Options>
auto grad(F f, const Options&... options) {
  return detail::make_gradient_function<false>(std::move(f), options...);
}

template <class F, class... Options>
auto value_and_grad(F f, const Options&... options) {
  return detail::make_gradient_function<true>(std::move(f), options...);
}

}  // namespace tandem
