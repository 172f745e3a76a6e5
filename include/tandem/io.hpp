#pragma once
// Files: IDX datasets (data/idx.hpp) and checkpoints (nn/checkpoint.hpp).
// Kept out of tandem.hpp, so that a translation unit that only computes
// parses no file I/O; include both where a program reads or writes files.

#include "tandem/data/idx.hpp"
#include "tandem/nn/checkpoint.hpp"
