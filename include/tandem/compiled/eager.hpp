#pragma once
// The eager side of the built-in ops, for float and double, as explicit
// instantiations: the ops' entry points with their kernels (eager_map per op
// and operand form, the reductions, matmul, softmax, conv and pooling) and
// their autograd nodes. Every translation unit that calls an op would
// otherwise instantiate its kernel and its node, and a node's backward (a
// virtual function, so instantiated with the node) calls the ops of its
// derivative rule, whose nodes are instantiated in turn: 8-10 s of g++ time
// in every translation unit that uses one op, and the eager fallback of every
// jit graph (jit off at run time) instantiates each op the graph calls.
//
// Header-only by default: nothing here changes a program. A target that
// links tandem::compiled gets TANDEM_COMPILED_LIBRARY, and the functions and
// classes below become explicit instantiation declarations; the library
// compiles them once (src/eager_*.cpp). Declarations do not change what a
// type or function means, so translation units with and without them link
// together. A program that replaces a built-in op's rule (specializing
// tandem::derivative) gets nodes of another type (op_node<rule::replaced,
// ...>), instantiated where the replacement is visible, but the compiled
// ops would still record the built-in rule: that program must link
// tandem::tandem, and a static_assert says so.

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

// The tensor class's members, for one element type.
#define TANDEM_COMPILED_TENSOR(T)                                                                                    \
  namespace tandem {                                                                                                 \
  TANDEM_COMPILED_EXTERN template class tensor<T>;                                                                   \
  }

// The nodes that inline code reaches in any translation unit: the engine's
// base classes, a leaf's accumulator, the casts that accumulation runs, the
// product a static graph's matmul epilogue records, and convolution (its
// form with a bias is a template of users' translation units). Declared in
// users' translation units, defined in the library.
#define TANDEM_COMPILED_REACHED_NODES(T)                                                                             \
  namespace tandem::detail {                                                                                         \
  TANDEM_COMPILED_EXTERN template class typed_node<T>;                                                               \
  TANDEM_COMPILED_EXTERN template class leaf_accumulator<T>;                                                         \
  TANDEM_COMPILED_EXTERN template void backward<T>(const tensor<T>&, const tensor<T>&,                               \
                                                   const backward_options&);                                         \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, cast_op, T, tensor<float>>;                          \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, cast_op, T, tensor<double>>;                         \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, matmul_op, T, tensor<T>, tensor<T>>;                 \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, conv2d_op, T, tensor<T>, tensor<T>>;                 \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, conv2d_op, T, tensor<T>, tensor<T>, tensor<T>>;      \
  }

// Every other op's node is reached only from its eager entry point, which
// the library compiles (TANDEM_COMPILED_EAGER_OPS), so users' translation
// units never instantiate them and are not given their declarations: each
// declaration instantiates the node class, and the whole list took 19 MB of
// the front end's memory in every translation unit that includes tandem.hpp.
#define TANDEM_COMPILED_EAGER_NODES(T)                                                                               \
  TANDEM_COMPILED_REACHED_NODES(T)                                                                                   \
  namespace tandem::detail {                                                                                         \
  /* views and reductions */                                                                                         \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, sum_op, T, tensor<T>>;                               \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, mean_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, prod_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, extreme_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, reshape_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, permute_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, expand_op, T, tensor<T>>;                            \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, take_op, T, tensor<T>>;                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, embed_op, T, tensor<T>>;                             \
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
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, gelu_tanh_op, T, tensor<T>>;                         \
  /* the layers' ops */                                                                                              \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, softmax_op, T, tensor<T>>;                           \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, log_softmax_op, T, tensor<T>>;                       \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, cross_entropy_op, T, tensor<T>, tensor<std::int64_t>>; \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, max_pool2d_op, T, tensor<T>>;                        \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, avg_pool2d_op, T, tensor<T>>;                        \
  TANDEM_COMPILED_EXTERN template class op_node<rule::built_in, batch_variance_op<T>, T, tensor<T>>;                 \
  }

// An elementwise op's eager entry for one operand form; scalars reach it
// converted to the element type (detail::as_map_operand).
#define TANDEM_COMPILED_MAP1(Op, A) \
  TANDEM_COMPILED_EXTERN template map_result_t<Op, A> eager_map<Op, A>(const Op&, const A&);
#define TANDEM_COMPILED_MAP2(Op, A, B) \
  TANDEM_COMPILED_EXTERN template map_result_t<Op, A, B> eager_map<Op, A, B>(const Op&, const A&, const B&);
#define TANDEM_COMPILED_MAP3(Op, A, B, C)                                                         \
  TANDEM_COMPILED_EXTERN template map_result_t<Op, A, B, C> eager_map<Op, A, B, C>(const Op&, const A&, \
                                                                                   const B&, const C&);
#define TANDEM_COMPILED_BINARY(Op, T) \
  TANDEM_COMPILED_MAP2(Op, tensor<T>, tensor<T>) TANDEM_COMPILED_MAP2(Op, tensor<T>, T) TANDEM_COMPILED_MAP2(Op, T, tensor<T>)

#define TANDEM_COMPILED_EAGER_OPS(T)                                                                                 \
  namespace tandem::detail {                                                                                         \
  TANDEM_COMPILED_BINARY(add_op, T)                                                                                  \
  TANDEM_COMPILED_BINARY(sub_op, T)                                                                                  \
  TANDEM_COMPILED_BINARY(mul_op, T)                                                                                  \
  TANDEM_COMPILED_BINARY(div_op, T)                                                                                  \
  TANDEM_COMPILED_BINARY(pow_op, T)                                                                                  \
  TANDEM_COMPILED_BINARY(maximum_op, T)                                                                              \
  TANDEM_COMPILED_BINARY(minimum_op, T)                                                                              \
  TANDEM_COMPILED_BINARY(eq_op, T)                                                                                   \
  TANDEM_COMPILED_BINARY(ne_op, T)                                                                                   \
  TANDEM_COMPILED_BINARY(lt_op, T)                                                                                   \
  TANDEM_COMPILED_BINARY(le_op, T)                                                                                   \
  TANDEM_COMPILED_BINARY(gt_op, T)                                                                                   \
  TANDEM_COMPILED_BINARY(ge_op, T)                                                                                   \
  TANDEM_COMPILED_MAP2(relu_backward_op, tensor<T>, tensor<T>)                                                       \
  TANDEM_COMPILED_MAP3(where_op, tensor<bool>, tensor<T>, tensor<T>)                                                 \
  TANDEM_COMPILED_MAP3(where_op, tensor<bool>, tensor<T>, T)                                                         \
  TANDEM_COMPILED_MAP3(where_op, tensor<bool>, T, tensor<T>)                                                         \
  TANDEM_COMPILED_MAP3(clamp_op, tensor<T>, T, T)                                                                    \
  TANDEM_COMPILED_MAP1(neg_op, tensor<T>)                                                                            \
  TANDEM_COMPILED_MAP1(abs_op, tensor<T>)                                                                            \
  TANDEM_COMPILED_MAP1(sign_op, tensor<T>)                                                                           \
  TANDEM_COMPILED_MAP1(square_op, tensor<T>)                                                                         \
  TANDEM_COMPILED_MAP1(exp_op, tensor<T>)                                                                            \
  TANDEM_COMPILED_MAP1(log_op, tensor<T>)                                                                            \
  TANDEM_COMPILED_MAP1(log1p_op, tensor<T>)                                                                          \
  TANDEM_COMPILED_MAP1(expm1_op, tensor<T>)                                                                          \
  TANDEM_COMPILED_MAP1(sqrt_op, tensor<T>)                                                                           \
  TANDEM_COMPILED_MAP1(rsqrt_op, tensor<T>)                                                                          \
  TANDEM_COMPILED_MAP1(sin_op, tensor<T>)                                                                            \
  TANDEM_COMPILED_MAP1(cos_op, tensor<T>)                                                                            \
  TANDEM_COMPILED_MAP1(erf_op, tensor<T>)                                                                            \
  TANDEM_COMPILED_MAP1(erfc_op, tensor<T>)                                                                           \
  TANDEM_COMPILED_MAP1(tanh_op, tensor<T>)                                                                           \
  TANDEM_COMPILED_MAP1(sigmoid_op, tensor<T>)                                                                        \
  TANDEM_COMPILED_MAP1(relu_op, tensor<T>)                                                                           \
  TANDEM_COMPILED_MAP1(gelu_op, tensor<T>)                                                                           \
  TANDEM_COMPILED_MAP1(gelu_tanh_op, tensor<T>)                                                                      \
  TANDEM_COMPILED_MAP1(softplus_op, tensor<T>)                                                                       \
  TANDEM_COMPILED_MAP1(isnan_op, tensor<T>)                                                                          \
  TANDEM_COMPILED_MAP1(isinf_op, tensor<T>)                                                                          \
  TANDEM_COMPILED_MAP1(isfinite_op, tensor<T>)                                                                       \
  TANDEM_COMPILED_EXTERN template tensor<T> matmul_same<T>(const tensor<T>&, const tensor<T>&);                     \
  TANDEM_COMPILED_EXTERN template tensor<T> conv2d<T>(const tensor<T>&, const tensor<T>&, const tensor<T>*,          \
                                                      const conv2d_options&);                                        \
  TANDEM_COMPILED_EXTERN template tensor<T> conv2d_input_gradient<T>(const tensor<T>&, const tensor<T>&,             \
                                                                     const shape&, const conv2d_options&);           \
  TANDEM_COMPILED_EXTERN template tensor<T> conv2d_kernel_gradient<T>(const tensor<T>&, const tensor<T>&,            \
                                                                      const shape&, const conv2d_options&);          \
  }                                                                                                                  \
  namespace tandem {                                                                                                 \
  TANDEM_COMPILED_EXTERN template tensor<accumulate_t<T>> sum<T>(const tensor<T>&, const axes&, bool);      \
  TANDEM_COMPILED_EXTERN template tensor<accumulate_t<T>> sum_to<T>(const tensor<T>&, const shape&);         \
  TANDEM_COMPILED_EXTERN template tensor<T> mean<T>(const tensor<T>&, const axes&, bool);                            \
  TANDEM_COMPILED_EXTERN template tensor<accumulate_t<T>> prod<T>(const tensor<T>&, const axes&, bool);     \
  TANDEM_COMPILED_EXTERN template tensor<T> max<T>(const tensor<T>&, const axes&, bool);                             \
  TANDEM_COMPILED_EXTERN template tensor<T> min<T>(const tensor<T>&, const axes&, bool);                             \
  TANDEM_COMPILED_EXTERN template tensor<std::int64_t> argmax<T>(const tensor<T>&, const axes&, bool);               \
  TANDEM_COMPILED_EXTERN template tensor<std::int64_t> argmin<T>(const tensor<T>&, const axes&, bool);               \
  TANDEM_COMPILED_EXTERN template tensor<T> var<T>(const tensor<T>&, const axes&, bool, std::int64_t);               \
  TANDEM_COMPILED_EXTERN template tensor<T> logsumexp<T>(const tensor<T>&, const axes&, bool);                       \
  TANDEM_COMPILED_EXTERN template tensor<T> softmax<T>(const tensor<T>&, std::int64_t);                              \
  TANDEM_COMPILED_EXTERN template tensor<T> log_softmax<T>(const tensor<T>&, std::int64_t);                          \
  TANDEM_COMPILED_EXTERN template tensor<T> cross_entropy<T, std::int64_t>(const tensor<T>&,                         \
                                                                           const tensor<std::int64_t>&, reduction);  \
  TANDEM_COMPILED_EXTERN template tensor<T> conv2d<T>(const tensor<T>&, const tensor<T>&, const conv2d_options&);   \
  TANDEM_COMPILED_EXTERN template tensor<T> max_pool2d<T>(const tensor<T>&, const pool2d_options&);                  \
  TANDEM_COMPILED_EXTERN template tensor<T> avg_pool2d<T>(const tensor<T>&, const pool2d_options&);                  \
  TANDEM_COMPILED_EXTERN template tensor<T> batch_variance<T>(const tensor<T>&, tensor<T>*);                         \
  }

#if !defined(TANDEM_BUILDING_COMPILED_LIBRARY)
TANDEM_COMPILED_TENSOR(float)
TANDEM_COMPILED_TENSOR(double)
TANDEM_COMPILED_REACHED_NODES(float)
TANDEM_COMPILED_REACHED_NODES(double)
TANDEM_COMPILED_EAGER_OPS(float)
TANDEM_COMPILED_EAGER_OPS(double)
#endif

#endif
