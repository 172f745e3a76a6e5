#pragma once
// The static graphs of the library's own modules (a module's call in
// mode::graph, nn/module.hpp's detail::run_as_graph), for float and double
// and the argument types their callers pass, as explicit instantiations.
//
// A module call compiles both of its paths wherever it appears, since the
// mode is a run-time setting: the eager forward and the static graph with its
// fused kernels and compile-time backward. The graph is the expensive one
// (g++ -O2 with tandem::compiled: nn::linear's 4 s, multi_head_attention's
// 7 s), and an eager call inside another module's forward never runs it.
// Declared extern here, a target linking tandem::compiled compiles neither
// these graphs nor, through the eager calls of a parent's forward, its
// children's; nor the graph of a transformer block's body, which every graph
// holding blocks runs (nn::gpt's forward: 36 s of g++ time before, 8 s
// after). A user's own modules, nn::gpt and nn::sequential compile their own
// graph where they are called. Header-only, nothing here applies.

#include <cstdint>
#include <memory>

#include "tandem/nn/attention.hpp"
#include "tandem/nn/conv.hpp"
#include "tandem/nn/dropout.hpp"
#include "tandem/nn/embedding.hpp"
#include "tandem/nn/linear.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/nn/normalization.hpp"
#include "tandem/nn/transformer.hpp"

#if defined(TANDEM_COMPILED_LIBRARY) || defined(TANDEM_BUILDING_COMPILED_LIBRARY)

#if defined(TANDEM_BUILDING_COMPILED_LIBRARY)
#define TANDEM_COMPILED_MODULE_EXTERN
#else
#define TANDEM_COMPILED_MODULE_EXTERN extern
#endif

// One module type M called on one argument of type X, returning R.
#define TANDEM_COMPILED_MODULE_GRAPH(R, M, X)                                                                        \
  TANDEM_COMPILED_MODULE_EXTERN template R tandem::nn::detail::run_as_graph<R, M, X>(                                \
      const M&, const std::shared_ptr<tandem::detail::plan_cache>&, const X&);

namespace tandem::nn::detail {
template <class T>
using batch_norm_1d = batch_norm<T, 2>;
template <class T>
using batch_norm_2d = batch_norm<T, 4>;
}  // namespace tandem::nn::detail

// The layers, on tensors of their element type (embedding on token ids).
#define TANDEM_COMPILED_MODULE_GRAPHS(T)                                                                             \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::linear<T>, tandem::tensor<T>)                          \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::conv2d<T>, tandem::tensor<T>)                          \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::detail::batch_norm_1d<T>, tandem::tensor<T>)           \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::detail::batch_norm_2d<T>, tandem::tensor<T>)           \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::layer_norm<T>, tandem::tensor<T>)                      \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::rms_norm<T>, tandem::tensor<T>)                        \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::dropout, tandem::tensor<T>)                            \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::embedding<T>, tandem::tensor<std::int64_t>)            \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::multi_head_attention<T>, tandem::tensor<T>)            \
  TANDEM_COMPILED_MODULE_GRAPH(tandem::tensor<T>, tandem::nn::transformer_block<T>, tandem::tensor<T>)               \
  TANDEM_COMPILED_MODULE_EXTERN template tandem::tensor<T> tandem::nn::transformer_block<T>::run_body(               \
      const tandem::tensor<T>&) const;

#if !defined(TANDEM_BUILDING_COMPILED_LIBRARY)
TANDEM_COMPILED_MODULE_GRAPHS(float)
TANDEM_COMPILED_MODULE_GRAPHS(double)
#endif

#endif
