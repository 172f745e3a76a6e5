#pragma once
// Files: IDX datasets (data/idx.hpp), checkpoints (nn/checkpoint.hpp), and
// the Python ecosystem's formats: NumPy's .npy and .npz (io/npy.hpp,
// io/npz.hpp), safetensors (io/safetensors.hpp), and modules' tensors by
// name to and from them (io/state_dict.hpp). Kept out of tandem.hpp, so
// that a translation unit that only computes parses no file I/O; include
// this where a program reads or writes files.

#include "tandem/data/idx.hpp"
#include "tandem/io/npy.hpp"
#include "tandem/io/npz.hpp"
#include "tandem/io/safetensors.hpp"
#include "tandem/io/state_dict.hpp"
#include "tandem/nn/checkpoint.hpp"
