#pragma once
// Running a traced graph: the executor (graph/execute/executor.hpp) and its
// strategies, one header each: an eager kernel, a fused group, a matmul
// with its epilogue, a fused summation, a group's backward, a control-flow
// construct.

#include "tandem/graph/execute/binding.hpp"
#include "tandem/graph/execute/control.hpp"
#include "tandem/graph/execute/eager_kernel.hpp"
#include "tandem/graph/execute/epilogue.hpp"
#include "tandem/graph/execute/executor.hpp"
#include "tandem/graph/execute/group.hpp"
#include "tandem/graph/execute/group_backward.hpp"
#include "tandem/graph/execute/on_device.hpp"
#include "tandem/graph/execute/summation.hpp"
