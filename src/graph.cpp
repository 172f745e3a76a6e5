// tandem::compiled: the static graph's non-template functions, compiled once
// (include/tandem/graph/*-inl.hpp).
#include "tandem/graph/join-inl.hpp"
#include "tandem/graph/plan-inl.hpp"
#include "tandem/graph/run-inl.hpp"
