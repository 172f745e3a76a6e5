// The compiled library's float ops (their eager entry points and kernels): the
// one place they are instantiated for every translation unit that links
// tandem::compiled.
#include "tandem/tandem.hpp"

TANDEM_COMPILED_EAGER_OPS(float)
