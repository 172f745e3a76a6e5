#pragma once
// The built-in elementwise ops by arity: the rows every kernel build
// compiles (the CPU's instruction sets, compiled/kernel_builds.hpp, and the
// GPU's, tandem/cuda.hpp).

#include <tuple>

#include "tandem/ops/elementwise/activation.hpp"
#include "tandem/ops/elementwise/arithmetic.hpp"
#include "tandem/ops/elementwise/compare.hpp"
#include "tandem/ops/elementwise/math.hpp"

namespace tandem::detail {

using builtin_unary_ops = std::tuple<neg_op, abs_op, sign_op, square_op, exp_op, log_op, log1p_op, expm1_op, sqrt_op,
                                     rsqrt_op, sin_op, cos_op, erf_op, erfc_op, tanh_op, sigmoid_op, relu_op, gelu_op,
                                     gelu_tanh_op, softplus_op, isnan_op, isinf_op, isfinite_op>;
using builtin_binary_ops = std::tuple<add_op, sub_op, mul_op, div_op, pow_op, maximum_op, minimum_op, eq_op, ne_op,
                                      lt_op, le_op, gt_op, ge_op, relu_backward_op>;
// The logical ops: on every element type, bool included (read as != 0).
using builtin_logical_ops = std::tuple<logical_and_op, logical_or_op, logical_xor_op>;

}  // namespace tandem::detail
