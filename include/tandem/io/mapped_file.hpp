#pragma once
// A whole file mapped into memory, for the readers: they check a file's
// bytes where the kernel put them, and a safetensors tensor that is aligned
// is handed out as a view of the mapping itself (zero-copy). The mapping is
// private and writable: a write through such a tensor copies the page
// (copy-on-write) and never reaches the file. It stays mapped while any
// tensor holds it (a shared_ptr in the tensor's storage). As with every
// mapping, another process that truncates the file afterwards makes reading
// the lost pages fault; readers that must survive that load with copies.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "tandem/core/config.hpp"

namespace tandem::io::detail {

class mapped_file {
 public:
  // Maps `path` (a regular file); `op` names the caller in the io_error
  // thrown when it cannot be opened or mapped.
  static std::shared_ptr<mapped_file> open(const std::filesystem::path& path, const char* op);

  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  mapped_file(std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t* data_;
  std::size_t size_;
};

}  // namespace tandem::io::detail

#if TANDEM_HEADER_ONLY
#include "tandem/io/mapped_file-inl.hpp"
#endif
