// tandem::compiled: the IDX reader and checkpoints, compiled once
// (include/tandem/data/idx-inl.hpp, include/tandem/nn/checkpoint-inl.hpp).
#include "tandem/data/idx-inl.hpp"
#include "tandem/nn/checkpoint-inl.hpp"
