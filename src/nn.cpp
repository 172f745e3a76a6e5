// tandem::compiled: the optimizers' non-template members, compiled once
// (include/tandem/nn/optimizer-inl.hpp).
#include "tandem/nn/optimizer-inl.hpp"
