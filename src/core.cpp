// tandem::compiled: the non-template functions of the core, the kernels'
// thread pool and elementwise loops, the backward engine and the
// reductions' shape rule, compiled once (their -inl.hpp headers).
#include "tandem/autograd/engine-inl.hpp"
#include "tandem/core/allocator-inl.hpp"
#include "tandem/core/shape-inl.hpp"
#include "tandem/kernels/cpu/elementwise-inl.hpp"
#include "tandem/kernels/cpu/thread_pool-inl.hpp"
#include "tandem/ops/reduce-inl.hpp"
