// The compiled library's double nodes: the one place they are instantiated for
// every translation unit that links tandem::compiled.
#include "tandem/tandem.hpp"

TANDEM_COMPILED_EAGER_NODES(double)
