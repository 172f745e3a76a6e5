// tandem::compiled: the members of tensor<float> and tensor<double>,
// compiled once. (Integer and bool tensors refuse gradients with a
// static_assert in the members that would record one, so they cannot be
// instantiated whole.)
#include "tandem/tandem.hpp"

TANDEM_COMPILED_TENSOR(float)
TANDEM_COMPILED_TENSOR(double)
