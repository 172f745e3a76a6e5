#pragma once
// The IDX reader's definitions (declared in data/idx.hpp): inline in
// header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp). The reader goes through zlib
// unless TANDEM_NO_ZLIB.

#if !defined(TANDEM_NO_ZLIB)
#include <zlib.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/data/idx.hpp"

namespace tandem::data {

namespace detail {

#if !defined(TANDEM_NO_ZLIB)
class idx_reader {
 public:
  explicit idx_reader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (!file_) throw io_error("tandem::data::read_idx: cannot open '" + path + "'");
  }
  idx_reader(const idx_reader&) = delete;
  idx_reader& operator=(const idx_reader&) = delete;
  ~idx_reader() { gzclose(file_); }

  // Reads up to n bytes; returns how many were read.
  std::size_t read(void* into, std::size_t n) {
    std::size_t done = 0;
    auto* out = static_cast<unsigned char*>(into);
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      int got = gzread(file_, out + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(file_, &code);
        throw io_error("tandem::data::read_idx: '" + path_ + "' is corrupt (" + message + ")");
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }
  void exactly(void* into, std::size_t n, const char* what) {
    if (read(into, n) != n) throw io_error("tandem::data::read_idx: '" + path_ + "' ends inside its " + what);
  }
  // Once the data has been read to its end: zlib hands out the data of a
  // compressed stream whose end is missing (the gzip trailer, with its
  // CRC-32 and length) and says so only in its error state.
  void require_complete() {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code != Z_OK)
      throw io_error("tandem::data::read_idx: '" + path_ + "' is truncated or corrupt (" + message + ")");
  }

 private:
  std::string path_;
  gzFile file_;
};
#else
class idx_reader {
 public:
  explicit idx_reader(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
    if (!file_) throw io_error("tandem::data::read_idx: cannot open '" + path + "'");
    unsigned char magic[2] = {0, 0};
    std::size_t got = std::fread(magic, 1, 2, file_);
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      std::fclose(file_);
      throw io_error("tandem::data::read_idx: '" + path +
                     "' is gzip-compressed, and this build of tandem has no zlib (TANDEM_NO_ZLIB): "
                     "decompress it, or install zlib and reconfigure");
    }
    std::rewind(file_);
  }
  idx_reader(const idx_reader&) = delete;
  idx_reader& operator=(const idx_reader&) = delete;
  ~idx_reader() { std::fclose(file_); }

  std::size_t read(void* into, std::size_t n) {
    std::size_t got = std::fread(into, 1, n, file_);
    if (got < n && std::ferror(file_)) throw io_error("tandem::data::read_idx: cannot read '" + path_ + "'");
    return got;
  }
  void exactly(void* into, std::size_t n, const char* what) {
    if (read(into, n) != n) throw io_error("tandem::data::read_idx: '" + path_ + "' ends inside its " + what);
  }
  // A plain file that read to its end is complete.
  void require_complete() {}

 private:
  std::string path_;
  std::FILE* file_;
};
#endif

}  // namespace detail

TANDEM_LIBRARY_FUNCTION idx_file read_idx(const std::string& path) {
  detail::idx_reader in(path);
  std::uint8_t magic[4];
  in.exactly(magic, 4, "header");
  auto fail = [&](const std::string& why) { return io_error("tandem::data::read_idx: '" + path + "' " + why); };
  if (magic[0] != 0 || magic[1] != 0) throw fail("is not an IDX file (its magic number does not start with two zero bytes)");
  std::size_t size = detail::idx_type_size(magic[2]);
  if (size == 0) throw fail("has an unknown element type (byte 3 of its magic number is " + std::to_string(magic[2]) + ")");
  if (magic[3] == 0 || magic[3] > 8) throw fail("has " + std::to_string(magic[3]) + " axes (1 to 8 are allowed)");
  idx_file file{{}, static_cast<idx_type>(magic[2]), {}};
  // The limit holds for the extents other than zero too: an empty file of
  // shape [0, 4294967295, 4294967295, ...] would make a tensor whose strides
  // overflow.
  std::uint64_t count = 1, nonzero = 1;
  for (int axis = 0; axis < magic[3]; ++axis) {
    std::uint8_t b[4];
    in.exactly(b, 4, "header");
    std::uint64_t extent = (std::uint64_t{b[0]} << 24) | (std::uint64_t{b[1]} << 16) | (std::uint64_t{b[2]} << 8) | b[3];
    if (extent != 0 && nonzero > detail::idx_max_bytes / size / extent)
      throw fail("declares more than 16 GiB of data (axis " + std::to_string(axis) + " has extent " +
                 std::to_string(extent) + ")");
    count *= extent;
    if (extent != 0) nonzero *= extent;
    file.extent.push_back(static_cast<std::int64_t>(extent));
  }
  // Read in chunks, so that a header declaring more data than the file has
  // fails at the end of the data, not by allocating what it declares.
  std::size_t expected = static_cast<std::size_t>(count * size);
  constexpr std::size_t chunk = std::size_t{16} << 20;
  while (file.bytes.size() < expected) {
    std::size_t before = file.bytes.size(), want = std::min(chunk, expected - before);
    file.bytes.resize(before + want);
    if (in.read(file.bytes.data() + before, want) != want)
      throw fail("is truncated: its header declares " + std::to_string(expected) + " bytes of data");
  }
  std::uint8_t extra;
  if (in.read(&extra, 1) != 0) throw fail("has data after the " + std::to_string(expected) + " bytes its header declares");
  in.require_complete();
  return file;
}

TANDEM_LIBRARY_FUNCTION tensor<float> read_idx_images(const std::string& path) {
  idx_file f = read_idx(path);
  if (f.type != idx_type::u8 || f.extent.size() != 3)
    throw io_error("tandem::data::read_idx_images: '" + path + "' is not a [N, rows, cols] file of bytes (shape " +
                   to_string(f.extent) + ")");
  tensor<float> images = f.as<float>();
  float* p = images.data();
  for (std::int64_t i = 0, n = images.numel(); i < n; ++i) p[i] /= 255.0f;
  return images;
}

TANDEM_LIBRARY_FUNCTION tensor<std::int64_t> read_idx_labels(const std::string& path) {
  idx_file f = read_idx(path);
  if (f.type != idx_type::u8 || f.extent.size() != 1)
    throw io_error("tandem::data::read_idx_labels: '" + path + "' is not a [N] file of bytes (shape " +
                   to_string(f.extent) + ")");
  return f.as<std::int64_t>();
}

}  // namespace tandem::data
