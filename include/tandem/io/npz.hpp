#pragma once
// NumPy's .npz archives, what np.savez and np.savez_compressed write and
// np.load reads: a zip file (io/zip.hpp) of one .npy file (io/npy.hpp) per
// array, named "<name>.npy". Entries may be stored or deflated. Loading
// reads and checks every entry before it returns any; a bad archive throws
// io_error naming the file, the entry and the fault. Saving is atomic.

#include <filesystem>

#include "tandem/core/config.hpp"
#include "tandem/io/any_tensor.hpp"

namespace tandem::io {

// Writes `arrays` as "<name>.npy" entries, deflated if `compressed` (as
// np.savez_compressed), stored otherwise (as np.savez).
void save_npz(const std::filesystem::path& path, const named_tensors& arrays, bool compressed = false);

// Every array in the archive, by name (without ".npy").
named_tensors load_npz(const std::filesystem::path& path);

}  // namespace tandem::io

#if TANDEM_HEADER_ONLY
#include "tandem/io/npz-inl.hpp"
#endif
