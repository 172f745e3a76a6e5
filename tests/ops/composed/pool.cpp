// The GPU's pooling and its gradients are compositions of ops with GPU
// kernels (ops/composed/pool.hpp): here they run on the host against the
// host kernels, ties, NaN, -inf and padding included.
#include <limits>
#include <vector>

#include "support/check.hpp"
#include "tandem/ops/composed/pool.hpp"

using namespace tandem;
using tandem::test::check_values;

namespace {

const std::vector<std::pair<shape, pool2d_options>> composed_pool_cases{
    {{2, 3, 8, 10}, {}},
    {{2, 3, 9, 11}, {}},
    {{1, 2, 7, 7}, {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}},
    {{2, 2, 9, 6}, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}}},
    {{1, 1, 5, 5}, {.kernel = {5, 5}}},
    {{0, 2, 4, 4}, {}},
};

// Values from a few levels, so that windows hold ties, with NaN and -inf.
template <class T>
tensor<T> tied_images(const shape& s, std::uint64_t seed) {
  tensor<T> x = test::random_tensor<T>(s, 0, 4, seed);
  std::vector<T> values = x.to_vector();
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<T>(static_cast<int>(values[i]));
    if (i % 23 == 5) values[i] = std::numeric_limits<T>::quiet_NaN();
    if (i % 17 == 3) values[i] = -std::numeric_limits<T>::infinity();
  }
  return from_vector<T>(values, s);
}

}  // namespace

TEST_CASE_TEMPLATE("the GPU's composition of pooling equals the host kernels, with the gradients", T, float, double) {
  std::uint64_t seed = 500;
  // Not a structured binding: clang 14 cannot capture one in INFO's lambda.
  for (const auto& pool_case : composed_pool_cases) {
    const shape& xs = pool_case.first;
    const pool2d_options& o = pool_case.second;
    INFO("input " << to_string(xs));
    detail::pool_geometry g = detail::pool_geometry_of("max_pool2d", xs, o);
    for (bool tied : {false, true}) {
      INFO("ties, NaN and -inf: " << tied);
      tensor<T> x = tied ? tied_images<T>(xs, ++seed) : test::random_tensor<T>(xs, -1, 1, ++seed);
      tensor<T> leaf = x.detach().set_requires_grad();
      tensor<T> want = max_pool2d(leaf, o);
      detail::pooled_maxima<T> got = detail::composed_max_pool2d(x, g);
      check_values(got.values, want, "max_pool2d");
      tensor<T> grad = test::random_tensor<T>(want.shape(), -1, 1, ++seed);
      want.backward(grad);
      check_values(detail::composed_max_pool2d_gradient(grad, got.taps, g), leaf.grad(), "max_pool2d's gradient");
    }
    tensor<T> x = test::random_tensor<T>(xs, -1, 1, ++seed).transpose(2, 3).contiguous().transpose(2, 3);
    tensor<T> leaf = x.detach().set_requires_grad();
    tensor<T> want = avg_pool2d(leaf, o);
    check_values(detail::composed_avg_pool2d(x, g), want, "avg_pool2d");
    tensor<T> grad = test::random_tensor<T>(want.shape(), -1, 1, ++seed);
    want.backward(grad);
    check_values(detail::composed_avg_pool2d_gradient(grad, g), leaf.grad(), "avg_pool2d's gradient");
  }
}
