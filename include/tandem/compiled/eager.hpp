#pragma once
// The eager autograd nodes of the built-in ops, for float and double, as
// explicit instantiations. Every translation unit that records an op
// instantiates its node, and a node's backward (a virtual function, so
// instantiated with the node) calls the ops of its derivative rule, whose
// nodes are instantiated in turn: the closure costs 8-10 s of g++ time in
// every translation unit that uses one op.
//
// Header-only by default: nothing here changes a program. A target that
// links tandem::compiled gets TANDEM_COMPILED_LIBRARY, and the nodes below
// become explicit instantiation declarations; the library compiles them once
// (src/eager_nodes_*.cpp). Declarations do not change what a type means, so
// translation units with and without them link together. A program that
// replaces a built-in op's rule (specializing tandem::derivative) gets nodes
// of another type (op_node<rule::replaced, ...>), instantiated where the
// replacement is visible: the compiled nodes never stand in for it.

#include <cstdint>

#include "tandem/autograd/engine.hpp"
#include "tandem/autograd/record.hpp"
#include "tandem/ops/conv.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/linalg.hpp"
#include "tandem/ops/normalization.hpp"
#include "tandem/ops/pool.hpp"
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/shape.hpp"
#include "tandem/ops/softmax.hpp"

#if defined(TANDEM_COMPILED_LIBRARY) || defined(TANDEM_BUILDING_COMPILED_LIBRARY)

#if defined(TANDEM_BUILDING_COMPILED_LIBRARY)
#define TANDEM_COMPILED_EXTERN
#else
#define TANDEM_COMPILED_EXTERN extern
#endif

// One list, written once per element type T: declarations in users'
// translation units, definitions in the library's (one per T).
#define TANDEM_COMPILED_EAGER_NODES(T)                                                                               \
  namespace tandem::detail {                                                                                         \
  TANDEM_COMPILED_EXTERN template class typed_node<T>;                                                               \
  TANDEM_COMPILED_EXTERN template class leaf_accumulator<T>;                                                         \
  TANDEM_COMPILED_EXTERN template void backward<T>(const tensor<T>&, const tensor<T>&,                               \
                                                   const backward_options&);                                         \
  /* views, casts and reductions: the closure every derivative reaches */                                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sum_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, mean_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, prod_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, extreme_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, reshape_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, permute_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, expand_op, T, tensor<T>>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, take_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, embed_op, T, tensor<T>>;                             \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, cast_op, T, tensor<float>>;                          \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, cast_op, T, tensor<double>>;                         \
  /* arithmetic: tensor-tensor, tensor-scalar and scalar-tensor */                                                   \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, add_op, T, tensor<T>, tensor<T>>;                    \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, add_op, T, tensor<T>, T>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sub_op, T, tensor<T>, tensor<T>>;                    \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sub_op, T, tensor<T>, T>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sub_op, T, T, tensor<T>>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, mul_op, T, tensor<T>, tensor<T>>;                    \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, mul_op, T, tensor<T>, T>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, div_op, T, tensor<T>, tensor<T>>;                    \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, div_op, T, tensor<T>, T>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, div_op, T, T, tensor<T>>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, neg_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, where_op, T, tensor<bool>, tensor<T>, tensor<T>>;    \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, where_op, T, tensor<bool>, tensor<T>, T>;            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, where_op, T, tensor<bool>, T, tensor<T>>;            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, maximum_op, T, tensor<T>, tensor<T>>;                \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, minimum_op, T, tensor<T>, tensor<T>>;                \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, pow_op, T, tensor<T>, tensor<T>>;                    \
  /* unary math and activations */                                                                                   \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, abs_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, square_op, T, tensor<T>>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, exp_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, log_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sqrt_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sin_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, cos_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, tanh_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sigmoid_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, relu_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, relu_backward_op, T, tensor<T>, tensor<T>>;          \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, softplus_op, T, tensor<T>>;                          \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, gelu_op, T, tensor<T>>;                              \
  /* the layers' ops */                                                                                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, matmul_op, T, tensor<T>, tensor<T>>;                 \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, softmax_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, log_softmax_op, T, tensor<T>>;                       \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, cross_entropy_op, T, tensor<T>, tensor<std::int64_t>>; \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, conv2d_op, T, tensor<T>, tensor<T>>;                 \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, conv2d_op, T, tensor<T>, tensor<T>, tensor<T>>;      \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, max_pool2d_op, T, tensor<T>>;                        \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, avg_pool2d_op, T, tensor<T>>;                        \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, batch_variance_op<T>, T, tensor<T>>;                 \
  }

#if !defined(TANDEM_BUILDING_COMPILED_LIBRARY)
TANDEM_COMPILED_EAGER_NODES(float)
TANDEM_COMPILED_EAGER_NODES(double)
#endif

#endif
