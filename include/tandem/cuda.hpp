#pragma once
// GPU support, for a translation unit compiled by nvcc. Including this
// header in one such unit of a program gives every unit of it (g++'s too)
// CUDA tensors: it installs the CUDA runtime (kernels/cuda/runtime.hpp) and
// the GPU kernels (kernels/cuda/install.hpp lists them): the built-in
// elementwise ops for float, double, int32 and int64, copies and
// conversions between every element type (kernels/cuda/elementwise.hpp),
// the reductions (sum, mean, prod, max, min: kernels/cuda/reduce.hpp),
// matmul (cuBLAS: kernels/cuda/gemm.hpp; link CUDA::cublas), fused
// attention (kernels/cuda/attention.hpp), the
// optimizers' updates (kernels/cuda/update.hpp), random draws
// (kernels/cuda/random.hpp), and softmax, cross-entropy, one_hot, conv2d,
// pooling and batch normalization composed from them (ops/composed/). Other units include <tandem/tandem.hpp> as
// usual; including this one in several units only compiles the same
// kernels again.
//
// Ops without a GPU kernel yet throw a device_error naming the op when
// given a GPU tensor: they never read device memory on the host.

#ifndef __CUDACC__
#error "<tandem/cuda.hpp> is for translation units compiled by nvcc; host code reaches GPUs through <tandem/tandem.hpp>"
#endif

#include "tandem/kernels/cuda/attention.hpp"
#include "tandem/kernels/cuda/elementwise.hpp"
#include "tandem/kernels/cuda/gemm.hpp"
#include "tandem/kernels/cuda/index.hpp"
#include "tandem/kernels/cuda/install.hpp"
#include "tandem/kernels/cuda/random.hpp"
#include "tandem/kernels/cuda/reduce.hpp"
#include "tandem/kernels/cuda/runtime.hpp"
#include "tandem/kernels/cuda/update.hpp"
#include "tandem/tandem.hpp"

namespace tandem {
namespace detail::cuda {

// The kernels as kernels/cuda/install.hpp asks for them.
struct cuda_backend {
  template <class R, class C, class Op, class... In>
  static cuda_elementwise_kernel<R, C, Op, In...> elementwise() {
    return &launch_elementwise<R, C, Op, In...>;
  }
  template <class A, class R, class T, class Reducer>
  static cuda_reduce_kernel<A, R, T, Reducer> reduce() {
    return &launch_reduce<A, R, T, Reducer>;
  }
  template <class R, class Op, class... In>
  static cuda_group_sum_kernel<R, Op, In...> group_sum() {
    return &launch_group_sum<R, Op, In...>;
  }
  template <class R, class Op, std::size_t M, class... In>
  static cuda_group_sum_adjoints_kernel<R, Op, M, In...> group_sum_adjoints() {
    return &launch_group_sum_adjoints<R, Op, M, In...>;
  }
  template <class T, bool Largest>
  static cuda_arg_extreme_kernel<T, Largest> arg_extreme() {
    return &launch_arg_extreme<T, Largest>;
  }
  template <class T>
  static cuda_index_kernel<T> index() {
    return &launch_index<T>;
  }
  template <class T>
  static cuda_gemm_kernel<T> gemm() {
    return &launch_gemm<T>;
  }
  template <class T, class Law>
  static cuda_random_kernel<T, Law> random() {
    return &launch_random<T, Law>;
  }
  template <class T, std::size_t S, class Op>
  static cuda_update_kernel<T, S, Op> update() {
    return &launch_update<T, S, Op>;
  }
  template <class R, class C, class Op, std::size_t M, class... In>
  static cuda_elementwise_outputs_kernel<R, C, Op, M, In...> elementwise_outputs() {
    return &launch_elementwise_outputs<R, C, Op, M, In...>;
  }
  template <class T>
  static cuda_attention_forward_kernel<T> attention_forward() {
    return &launch_attention_forward<T>;
  }
  template <class T>
  static cuda_attention_backward_kernel<T> attention_backward() {
    return &launch_attention_backward<T>;
  }
  static const device_runtime& runtime() { return cuda::runtime(); }
};

inline const bool kernels_installed = device_kernels::install_all<cuda_backend>();

}  // namespace detail::cuda

namespace cuda {

// Compiles the GPU kernel of a user's elementwise op (a struct as
// tandem::elementwise takes, whose operator() is __host__ __device__) for
// operands of element types In..., and makes it the one that
// tandem::elementwise runs on GPU tensors of those types.
template <class Op, class... In>
void compile_elementwise() {
  detail::device_kernels::install_op<detail::cuda::cuda_backend, Op, In...>();
}

// The same for static_graph<F> called with arguments of types A..., where
// the types are known but not the objects (a program whose graphs live in
// units compiled by the host compiler: examples/cuda_kernels.cu). A
// train_step's graph is static_graph<Loss>.
template <class F, class... A>
void compile_graph() {
  detail::device_kernels::install_graph<detail::cuda::cuda_backend, F, A...>();
}

// Compiles a static graph's fused kernels for the GPU, for arguments of the
// types of `a` (their values and devices do not matter): each fusion group
// becomes one kernel forward and one backward, built from the same
// compile-time group structs as the host's loops. From then on, the graph
// called on GPU tensors of those types runs them (without this, it runs
// its function eagerly on the device). Graphs with cond, while_loop or
// scan are refused at compile time.
template <class F, class... A>
void compile(const static_graph<F>&, const A&...) {
  compile_graph<F, A...>();
}

// A training step under jit (nn::train_step): its graph.
template <class Loss, class... A>
void compile(const nn::train_step<Loss>& step, const A&... a) {
  compile(step.graph(), a...);
}

}  // namespace cuda
}  // namespace tandem
