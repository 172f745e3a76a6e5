// The GPU computes softmax, log_softmax, cross-entropy and one_hot as
// compositions of ops that have GPU kernels (ops/composed/softmax.hpp).
// They are generic, so here they run on the host beside the host kernels:
// the GPU's math, checked on every machine.
#include <limits>

#include "support/check.hpp"
#include "tandem/ops/composed/softmax.hpp"

using namespace tandem;
using tandem::test::check_values;

TEST_CASE_TEMPLATE("the GPU's composition of softmax and cross-entropy has the host kernels' values and limits", T,
                   float, double) {
  constexpr T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  tensor<T> x{{inf, 0, 1},       {-inf, -inf, -inf}, {-inf, 0, 1},  {T(1e30), T(-1e30), 0},
              {nan, 0, 1},       {inf, inf, 0},      {-inf, 2, 3},  {80, -80, 0},
              {T(1e4), 0, -T(1e4)}, {1, 2, 3}};
  tensor<T> random = test::random_tensor<T>({6, 33}, -20, 20, 7);
  for (const tensor<T>& logits : {x, random}) {
    for (std::int64_t axis : {0, 1}) {
      check_values(detail::composed_softmax<false>(logits, axis), softmax(logits, axis), "softmax");
      check_values(detail::composed_softmax<true>(logits, axis), log_softmax(logits, axis), "log_softmax");
    }
  }
  tensor<std::int64_t> target{0, 0, 0, 0, 0, 0, 1, 1, 2, 2};
  check_values(detail::composed_cross_entropy_losses(x, target), cross_entropy(x, target, reduction::none),
               "cross_entropy");
  tensor<std::int32_t> labels{0, 5, 10, 15, 20, 32};
  check_values(detail::composed_cross_entropy_losses(random, labels), cross_entropy(random, labels, reduction::none),
               "cross_entropy");
  check_values(detail::composed_one_hot<T>(labels, 33), one_hot<T>(labels, 33), "one_hot");
  check_values(detail::composed_one_hot<T>(target.reshape({2, 5}), 3), one_hot<T>(target.reshape({2, 5}), 3),
               "one_hot");
}
