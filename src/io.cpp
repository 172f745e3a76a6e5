// tandem::compiled: the file readers and writers, compiled once (the
// `-inl.hpp` files of include/tandem/data, include/tandem/io and
// include/tandem/nn/checkpoint-inl.hpp).
#include "tandem/data/idx-inl.hpp"
#include "tandem/io/atomic_file-inl.hpp"
#include "tandem/io/json-inl.hpp"
#include "tandem/io/mapped_file-inl.hpp"
#include "tandem/io/npy-inl.hpp"
#include "tandem/io/npz-inl.hpp"
#include "tandem/io/safetensors-inl.hpp"
#include "tandem/io/state_dict-inl.hpp"
#include "tandem/io/zip-inl.hpp"
#include "tandem/nn/checkpoint-inl.hpp"
