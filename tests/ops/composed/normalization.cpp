// The GPU's batch statistics and batch normalization are compositions of
// ops with GPU kernels (ops/composed/normalization.hpp): here they run on
// the host against the host kernels on both layouts.
#include <cmath>

#include "support/check.hpp"
#include "tandem/ops/composed/normalization.hpp"

using namespace tandem;
using tandem::test::check_values;

TEST_CASE_TEMPLATE("the GPU's composition of batch normalization equals the host kernel, with its statistics", T,
                   float, double) {
  std::uint64_t seed = 600;
  for (const shape& xs : {shape{5, 3}, shape{4, 3, 5, 7}, shape{2, 2, 1, 1}, shape{3, 16, 14, 14}}) {
    INFO("input " << to_string(xs));
    tensor<T> x = test::random_tensor<T>(xs, -2, 3, ++seed);
    tensor<T> weight = test::random_tensor<T>({xs[1]}, 0.5, 2, ++seed);
    tensor<T> bias = test::random_tensor<T>({xs[1]}, -1, 1, ++seed);
    tensor<T> mean_kept;
    tensor<T> variance = batch_variance(x, &mean_kept);
    detail::batch_moments<T> moments = detail::composed_batch_moments(x);
    check_values(moments.mean, mean_kept, "the mean");
    check_values(moments.variance, variance, "the variance");

    const double eps = 1e-5;
    tensor<T> batch_mean, batch_var;
    tensor<T> want = batch_normalize(x, weight, bias, eps, &batch_mean, &batch_var);
    detail::normalized_batch<T> got = detail::composed_batch_normalize(x, weight, bias, eps);
    check_values(got.out, want, "batch_normalize");
    check_values(got.mean, batch_mean, "batch_normalize's mean");
    check_values(got.variance, batch_var, "batch_normalize's variance");
    check_values(got.inverse_std, rsqrt(batch_var + static_cast<T>(eps)), "batch_normalize's inverse deviation");
  }
}
