#pragma once
// One instruction set's build of the kernels tandem::compiled chooses among
// at run time (kernels/cpu/dispatch.hpp). Each src/kernels_<level>.cpp
// includes this header once, compiled with that level's flags: the kernels
// it instantiates live in the level's namespace (kernels/cpu/isa.hpp), and
// its installer points the dispatch slots at them or clears them: the rows
// of the elementwise ops, the matrix products (float, double, bfloat16),
// the reductions' inner loops, softmax, batch normalization's passes,
// convolution, 2x2 max pooling and capture's register chains.
//
// The rows are those of the elementwise ops compiled/eager.hpp compiles
// (TANDEM_COMPILED_EAGER_OPS), in the operand types their eager entry points
// run: an op missing here runs the program's own build, correctly.

#include "tandem/kernels/cpu/kernel_build_unit.hpp"

#include <atomic>
#include <tuple>

#include "tandem/capture/register_chain.hpp"
#include "tandem/kernels/cpu/conv.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/kernels/cpu/gemm.hpp"
#include "tandem/kernels/cpu/gemm_bf16.hpp"
#include "tandem/kernels/cpu/normalization.hpp"
#include "tandem/kernels/cpu/pool.hpp"
#include "tandem/kernels/cpu/reduce.hpp"
#include "tandem/kernels/cpu/softmax.hpp"
#include "tandem/ops/elementwise/builtin.hpp"
#include "tandem/ops/reduce.hpp"

// install_kernels_isa_avx2 and so on: the one name the dispatcher calls.
#define TANDEM_KERNEL_INSTALLER TANDEM_KERNEL_PASTE(install_kernels_, TANDEM_KERNEL_ISA)

namespace tandem::detail {
inline namespace TANDEM_KERNEL_ISA {

// Points `slot` at this build's `kernel`, or clears it.
template <class F>
void install(std::atomic<F>& slot, F kernel, bool clear) {
  slot.store(clear ? nullptr : kernel, std::memory_order_release);
}

template <class R, class C, class Op, class... In>
void install_typed_row(bool clear) {
  install(dispatched_row<R, C, Op, R*, In...>, native_row_function<R, C, Op, R*, In...>(), clear);
}

template <class Op, class... In>
void install_row(bool clear) {
  install_typed_row<typename Op::template result<In...>, typename Op::template compute<In...>, Op, In...>(clear);
}

using reducers = std::tuple<sum_reducer, prod_reducer, max_reducer, min_reducer>;

template <class T>
void install_rows(bool clear) {
  install_typed_row<T, T, identity_op, T>(clear);
  [&]<class... Op>(std::tuple<Op...>*) { (install_row<Op, T>(clear), ...); }(static_cast<builtin_unary_ops*>(nullptr));
  [&]<class... Op>(std::tuple<Op...>*) { (install_row<Op, T, T>(clear), ...); }(static_cast<builtin_binary_ops*>(nullptr));
  install_row<where_op, bool, T, T>(clear);
  install_row<clamp_op, T, T, T>(clear);
}

// The matrix product (with and without a static graph's epilogue), the
// reducers' spans (rows) and row combinations (columns), softmax and
// log-softmax over rows, batch normalization's moments and passes,
// convolution's three drivers, 2x2 max pooling and its gradient.
template <class T>
void install_row_kernels(bool clear) {
  install(dispatched_gemm<T>, &native_gemm_then<T>, clear);
  [&]<class... Reducer>(std::tuple<Reducer...>*) {
    (install(dispatched_reduce_span<Reducer, T, T>, &native_reduce_span<Reducer, T, T>, clear), ...);
    (install(dispatched_combine_into<Reducer, T, T>, &native_combine_into<Reducer, T, T>, clear), ...);
  }(static_cast<reducers*>(nullptr));
  install(dispatched_softmax_rows<false, T>, &native_softmax_rows<false, T>, clear);
  install(dispatched_softmax_rows<true, T>, &native_softmax_rows<true, T>, clear);
  install(dispatched_middle_moments<T>, &native_middle_moments<T>, clear);
  install(dispatched_affine_per_channel<T>, &native_affine_per_channel<T>, clear);
  install(dispatched_batch_norm_backward<T>, &native_batch_norm_backward<T>, clear);
  install(dispatched_conv2d_forward<T>, &native_conv2d_forward<T>, clear);
  install(dispatched_conv2d_backward_input<T>, &native_conv2d_backward_input<T>, clear);
  install(dispatched_conv2d_backward_kernel<T>, &native_conv2d_backward_kernel<T>, clear);
  install(dispatched_max_pool_2x2<T>, &native_max_pool_2x2<T>, clear);
  install(dispatched_max_pool_2x2_backward<T>, &native_max_pool_2x2_backward<T>, clear);
}

}  // inline namespace TANDEM_KERNEL_ISA

void TANDEM_KERNEL_INSTALLER(bool clear) {
  install_rows<float>(clear);
  install_rows<double>(clear);
  install_row_kernels<float>(clear);
  install_row_kernels<double>(clear);
  install(dispatched_gemm_bf16<bfloat16>, &native_gemm_bf16<bfloat16>, clear);
  install(dispatched_gemm_bf16<float>, &native_gemm_bf16<float>, clear);
  install(dispatched_chain_kernels, chain_kernels_for(), clear);
}

}  // namespace tandem::detail
