#pragma once
// NumPy's .npy files (format versions 1.0 to 3.0), the arrays np.save
// writes and np.load reads. Reading accepts C and Fortran order and both
// byte orders, of the element types tandem has: bool ('b1'), int32 ('i4'),
// int64 ('i8'), float32 ('f4') and float64 ('f8'). Everything is checked
// before it is trusted (the magic, a header of at most 1 MiB in NumPy's
// dict syntax, the dtype, the shape, a data section exactly as long as the
// shape says, bools that are 0 or 1); a bad file throws io_error naming the
// file and the fault. Writing is C order, little-endian, version 1.0 (2.0
// where the header needs it), atomic (io/atomic_file.hpp).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/io/any_tensor.hpp"

namespace tandem::io {

void save_npy(const std::filesystem::path& path, const any_tensor& array);

// The array in `path`, of the element type the file says.
any_tensor load_npy(const std::filesystem::path& path);

// The same, where the file must hold T (io_error otherwise).
template <element T>
tensor<T> load_npy(const std::filesystem::path& path) {
  return as<T>(load_npy(path), "'" + path.string() + "'");
}

namespace detail {

// A whole .npy file's bytes: what an .npz archive stores per array.
std::vector<std::uint8_t> npy_bytes(const any_tensor& array);

// Reads the .npy file held in `bytes`; `where` names it in errors ("'a.npz'
// entry 'x.npy'"), `op` the caller.
any_tensor parse_npy(const std::uint8_t* bytes, std::size_t size, const std::string& where, const char* op);

}  // namespace detail

}  // namespace tandem::io

#if TANDEM_HEADER_ONLY
#include "tandem/io/npy-inl.hpp"
#endif
