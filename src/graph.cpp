// tandem::compiled: the static graph's non-template functions, compiled once
// (include/tandem/graph/run-inl.hpp).
#include "tandem/graph/run-inl.hpp"
