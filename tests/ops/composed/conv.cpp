// The GPU's conv2d and its gradients are compositions of ops with GPU
// kernels (ops/composed/conv.hpp): here they run on the host against the
// host kernels over strides, padding, dilation, groups, a bias and
// non-contiguous inputs.
#include <string>
#include <vector>

#include "support/check.hpp"
#include "tandem/ops/composed/conv.hpp"

using namespace tandem;

namespace {

struct composed_conv_case {
  shape input, kernel;
  conv2d_options options;
};

const std::vector<composed_conv_case> composed_conv_cases{
    {{2, 3, 7, 9}, {4, 3, 3, 3}, {}},
    {{2, 3, 7, 9}, {4, 3, 3, 3}, {.padding = {1, 1}}},
    {{1, 4, 9, 8}, {6, 2, 3, 2}, {.stride = {2, 1}, .padding = {1, 0}, .groups = 2}},
    {{3, 2, 11, 10}, {5, 2, 3, 3}, {.stride = {2, 3}, .padding = {2, 1}, .dilation = {2, 2}}},
    {{2, 1, 28, 28}, {16, 1, 3, 3}, {.padding = {1, 1}}},
    {{1, 6, 5, 5}, {6, 1, 1, 1}, {.groups = 6}},
    {{0, 2, 5, 5}, {3, 2, 3, 3}, {}},
};

}  // namespace

TEST_CASE_TEMPLATE("the GPU's composition of conv2d equals the host kernel, with both gradients", T, float, double) {
  // The products' terms are summed in another order than the host kernel's.
  const double rel = std::is_same_v<T, float> ? 1e-5 : 1e-12, abs = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  auto check_values = [&](const tensor<T>& got, const tensor<T>& want, const std::string& context) {
    test::check_values(got, want, context, rel, abs);
  };
  std::uint64_t seed = 400;
  for (const composed_conv_case& c : composed_conv_cases) {
    INFO("input " << to_string(c.input) << ", kernel " << to_string(c.kernel));
    tensor<T> x = test::random_tensor<T>(c.input, -1, 1, ++seed);
    tensor<T> w = test::random_tensor<T>(c.kernel, -1, 1, ++seed);
    tensor<T> bias = test::random_tensor<T>({c.kernel[0]}, -1, 1, ++seed);
    detail::conv_layout l = detail::conv_layout_of(x.shape(), w.shape(), c.options);
    tensor<T> want = conv2d(x, w, c.options);
    check_values(detail::composed_conv2d(x, w, static_cast<const tensor<T>*>(nullptr), l), want, "conv2d");
    check_values(detail::composed_conv2d(x, w, &bias, l), conv2d(x, w, bias, c.options), "conv2d with a bias");
    // A channels-last image read through its strides.
    tensor<T> strided = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    check_values(detail::composed_conv2d(strided, w, static_cast<const tensor<T>*>(nullptr), l), want,
                 "conv2d of a strided input");

    tensor<T> grad = test::random_tensor<T>(want.shape(), -1, 1, ++seed);
    check_values(detail::composed_conv2d_input_gradient(grad, w, l),
                 detail::conv2d_input_gradient(grad, w, x.shape(), c.options), "the input's gradient");
    check_values(detail::composed_conv2d_kernel_gradient(grad, x, l, w.shape()),
                 detail::conv2d_kernel_gradient(grad, x, w.shape(), c.options), "the kernel's gradient");
  }
}
