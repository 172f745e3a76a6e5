#pragma once
// safetensors files (Hugging Face's weight format): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte
// range, and the data. Of its dtypes tandem reads and writes BOOL, I32, I64,
// F32 and F64; a file may hold the format's others (F16, BF16, U8, I8, I16,
// U16, U32, U64, F8_E4M3, F8_E5M2), which are listed and refused by name
// only when asked for. A dtype the format does not define refuses the file
// (its tensors' sizes cannot be checked).
//
// Opening a file maps it (io/mapped_file.hpp) and checks the whole header
// before any tensor is read: a header of at most 100 MB that is one JSON
// object, known fields, shapes whose byte sizes match their ranges, and
// ranges that cover the data exactly, without holes or overlaps, as the
// format requires. A bad file throws io_error naming the file and the
// fault. A tensor whose data is aligned for its type is returned as a view
// of the mapping (zero-copy; a write to it copies the page and never
// reaches the file); others, and BOOL tensors (checked to be 0 or 1 in
// the copy), are copied.
//
// Writing is atomic; tensors are laid out widest type first, then by name,
// so that each is aligned for zero-copy loading, and the header is padded
// with spaces to a multiple of 8 bytes.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/io/any_tensor.hpp"

namespace tandem::io {

namespace detail {
class mapped_file;
}

// The header's "__metadata__": free-form strings.
using safetensors_metadata = std::map<std::string, std::string>;

void save_safetensors(const std::filesystem::path& path, const named_tensors& tensors,
                      const safetensors_metadata& metadata = {});

// An open, checked safetensors file, as Python's safe_open: tensors are
// read one by one, when asked for.
class safetensors_file {
 public:
  explicit safetensors_file(const std::filesystem::path& path);

  const safetensors_metadata& metadata() const { return metadata_; }
  // Every tensor's name, in name order.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  // The dtype as the file names it ("F32", "BF16", ...), and the shape.
  const std::string& dtype_name(const std::string& name) const { return entry(name).dtype; }
  const tandem::shape& shape(const std::string& name) const { return entry(name).extent; }

  // The tensor `name`, zero-copy where its data is aligned.
  any_tensor get(const std::string& name) const;
  template <element T>
  tensor<T> get(const std::string& name) const {
    return as<T>(get(name), "'" + name + "' in '" + path_.string() + "'");
  }
  // Every tensor.
  named_tensors all() const;

 private:
  struct stored {
    std::string dtype;
    tandem::shape extent;
    std::uint64_t begin, end;  // within the data section
  };
  const stored& entry(const std::string& name) const;

  std::filesystem::path path_;
  std::shared_ptr<detail::mapped_file> file_;
  std::uint64_t data_start_ = 0;
  std::map<std::string, stored> entries_;
  safetensors_metadata metadata_;
};

// Every tensor of the file at `path`.
inline named_tensors load_safetensors(const std::filesystem::path& path) { return safetensors_file(path).all(); }

}  // namespace tandem::io

#if TANDEM_HEADER_ONLY
#include "tandem/io/safetensors-inl.hpp"
#endif
