#pragma once
// GPU support, for a translation unit compiled by nvcc. Including this
// header in one such unit of a program gives every unit of it (g++'s too)
// CUDA tensors: it installs the CUDA runtime (kernels/cuda/runtime.hpp) and
// compiles the GPU kernels of the built-in elementwise ops for float,
// double, int32 and int64, of copies and conversions between every element type
// (kernels/cuda/elementwise.hpp), of the reductions (sum, mean, prod, max,
// min: kernels/cuda/reduce.hpp) and of matmul (cuBLAS: kernels/cuda/gemm.hpp;
// link CUDA::cublas). Other units include <tandem/tandem.hpp> as usual;
// including this one in several units only compiles the same kernels again.
//
// Ops without a GPU kernel yet throw a device_error naming the op when
// given a GPU tensor: they never read device memory on the host.

#ifndef __CUDACC__
#error "<tandem/cuda.hpp> is for translation units compiled by nvcc; host code reaches GPUs through <tandem/tandem.hpp>"
#endif

#include <cstdint>
#include <tuple>

#include "tandem/kernels/cuda/elementwise.hpp"
#include "tandem/kernels/cuda/gemm.hpp"
#include "tandem/kernels/cuda/reduce.hpp"
#include "tandem/kernels/cuda/runtime.hpp"
#include "tandem/kernels/cuda/update.hpp"
#include "tandem/ops/elementwise/builtin.hpp"
#include "tandem/tandem.hpp"

namespace tandem {
namespace cuda {

// Compiles the GPU kernel of a user's elementwise op (a struct as
// tandem::elementwise takes, whose operator() is __host__ __device__) for
// operands of element types In..., and makes it the one that
// tandem::elementwise runs on GPU tensors of those types.
template <class Op, class... In>
void compile_elementwise() {
  detail::cuda::install_elementwise<typename Op::template result<In...>, typename Op::template compute<In...>, Op,
                                    In...>();
}

}  // namespace cuda

namespace detail::cuda {

using element_types = std::tuple<float, double, std::int32_t, std::int64_t, bool>;

template <class T>
void install_builtin_rows() {
  [&]<class... Op>(std::tuple<Op...>*) { (tandem::cuda::compile_elementwise<Op, T>(), ...); }(
      static_cast<builtin_unary_ops*>(nullptr));
  [&]<class... Op>(std::tuple<Op...>*) { (tandem::cuda::compile_elementwise<Op, T, T>(), ...); }(
      static_cast<builtin_binary_ops*>(nullptr));
  tandem::cuda::compile_elementwise<where_op, bool, T, T>();
  tandem::cuda::compile_elementwise<clamp_op, T, T, T>();
}

// Copies and conversions: astype (To from From) and assign (into To, read as
// To), over every pair of element types.
template <class To, class From>
void install_conversion() {
  install_elementwise<To, From, identity_op, From>();
  install_elementwise<To, To, identity_op, From>();
}

// The reducers as sum, mean, prod, max and min call them on T.
template <class T>
void install_reductions() {
  using total = accumulate_t<T>;
  using average = floating_t<T>;
  install_reduce<total, total, T, sum_reducer>();
  install_reduce<average, average, T, sum_reducer>();
  install_reduce<total, total, T, prod_reducer>();
  install_reduce<T, T, T, max_reducer>();
  install_reduce<T, T, T, min_reducer>();
}

// The optimizers' fused updates (nn/optimizer.hpp).
template <class T>
void install_updates() {
  install_update<T, 0, nn::detail::sgd_plain_op<T>>();
  install_update<T, 1, nn::detail::sgd_momentum_op<T>>();
  install_update<T, 2, nn::detail::adam_op<T>>();
}

inline bool install_kernels() {
  install_runtime();
  install_builtin_rows<float>();
  install_builtin_rows<double>();
  install_builtin_rows<std::int32_t>();
  install_builtin_rows<std::int64_t>();
  install_gemm<float>();
  install_gemm<double>();
  install_updates<float>();
  install_updates<double>();
  [&]<class... T>(std::tuple<T...>*) { (install_reductions<T>(), ...); }(static_cast<element_types*>(nullptr));
  [&]<class... To>(std::tuple<To...>*) {
    [&]<class... From>(std::tuple<From...>*) {
      auto for_target = [&]<class Target>(Target*) { (install_conversion<Target, From>(), ...); };
      (for_target(static_cast<To*>(nullptr)), ...);
    }(static_cast<element_types*>(nullptr));
  }(static_cast<element_types*>(nullptr));
  return true;
}

inline const bool kernels_installed = install_kernels();

}  // namespace detail::cuda
}  // namespace tandem
