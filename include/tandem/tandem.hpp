#pragma once
// The one include for users.

#include "tandem/core/allocator.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/dtype.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/print.hpp"
#include "tandem/core/random.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"
#include "tandem/ops/elementwise.hpp"
#include "tandem/ops/linalg.hpp"
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/shape.hpp"
#include "tandem/ops/softmax.hpp"
