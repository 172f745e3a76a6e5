#pragma once
// tandem::dist: collectives on tensors over MPI (link tandem::dist, which
// CMake defines where it finds MPI). Not part of tandem/tandem.hpp: a
// program without MPI never sees <mpi.h>.

#include "tandem/dist/collectives.hpp"
#include "tandem/dist/communicator.hpp"
#include "tandem/dist/environment.hpp"
#include "tandem/dist/reduce_op.hpp"
#include "tandem/dist/work.hpp"
