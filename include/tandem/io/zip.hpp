#pragma once
// The ZIP container of .npz archives (PKWARE's APPNOTE): entries stored or
// deflated (through zlib, where tandem has it: without it, TANDEM_NO_ZLIB,
// a deflated entry throws io_error saying so), with the ZIP64 extensions
// NumPy writes. Not for general archives: no encryption, no multi-disk
// archives, no other compression methods; each is refused by name. The
// reader trusts nothing: the end record, the central directory and every
// local header are checked against the file's size and each other, each
// entry's size against what its compressed size can hold, and every
// entry's CRC-32 after reading it.

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/io/atomic_file.hpp"

namespace tandem::io::detail {

struct zip_entry {
  std::string name;
  std::uint16_t method;  // 0 stored, 8 deflated
  std::uint32_t crc;
  std::uint64_t compressed_size, size, data_offset;
};

// The entries of the archive in `bytes`, in central-directory order;
// `where` names the file in errors, `op` the caller.
std::vector<zip_entry> zip_entries(const std::uint8_t* bytes, std::size_t size, const std::string& where,
                                   const char* op);

// One entry's contents, inflated and checked against its CRC-32.
std::vector<std::uint8_t> zip_contents(const std::uint8_t* bytes, const zip_entry& entry, const std::string& where,
                                       const char* op);

// Writes an archive entry by entry into `out`; finish() writes the central
// directory.
class zip_writer {
 public:
  explicit zip_writer(atomic_file& out) : out_(out) {}
  void add(const std::string& name, const std::vector<std::uint8_t>& contents, bool deflate);
  void finish();

 private:
  atomic_file& out_;
  std::vector<zip_entry> written_;
  std::vector<std::uint64_t> header_offsets_;
};

}  // namespace tandem::io::detail

#if TANDEM_HEADER_ONLY
#include "tandem/io/zip-inl.hpp"
#endif
