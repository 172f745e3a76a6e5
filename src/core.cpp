// tandem::compiled: the non-template functions of the core, the kernels'
// thread pool and elementwise loops, the choice among kernel builds, the
// backward engine, the reductions' shape rule, capture's sessions and the
// profiler, compiled once (their -inl.hpp headers).
#include "tandem/autograd/engine-inl.hpp"
#include "tandem/capture/region-inl.hpp"
#include "tandem/capture/session-inl.hpp"
#include "tandem/capture/variant_cache-inl.hpp"
#include "tandem/core/allocator-inl.hpp"
#include "tandem/core/shape-inl.hpp"
#include "tandem/kernels/cpu/dispatch-inl.hpp"
#include "tandem/kernels/cpu/elementwise-inl.hpp"
#include "tandem/kernels/cpu/thread_pool-inl.hpp"
#include "tandem/ops/reduce-inl.hpp"
#include "tandem/profiler/profiler-inl.hpp"
