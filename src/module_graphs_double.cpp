// The compiled library's double modules' static graphs (mode::graph): the one
// place they are instantiated for every translation unit that links
// tandem::compiled.
#include "tandem/tandem.hpp"

TANDEM_COMPILED_MODULE_GRAPHS(double)
