#pragma once
// IDX files, the format of MNIST and Fashion-MNIST: two zero bytes, a type
// byte, the number of axes, each extent as a big-endian 32-bit integer, then
// the elements, big-endian, row-major. Files may be gzip-compressed (read
// through zlib, which passes plain files through unchanged) where tandem
// has zlib; without it (TANDEM_NO_ZLIB, which CMake defines when it finds
// no zlib) plain files read the same and a compressed one throws io_error
// saying so. Everything is
// checked before it is trusted: the magic, the type, the rank, the extents
// (their product may not overflow), and that the data is exactly as long as
// the header says. A bad file throws io_error naming the file and the fault.

#if !defined(TANDEM_NO_ZLIB)
#include <zlib.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::data {

// The element types of the format, by their type byte.
enum class idx_type : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

namespace detail {

inline std::size_t idx_type_size(std::uint8_t type) {
  switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

// The largest file tandem reads: 16 GiB of elements.
inline constexpr std::uint64_t idx_max_bytes = std::uint64_t{1} << 34;

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

 private:
  std::string path_;
  std::FILE* file_;
};
#endif

}  // namespace detail

// A whole IDX file: its shape, element type and raw big-endian bytes.
struct idx_file {
  tandem::shape extent;
  idx_type type;
  std::vector<std::uint8_t> bytes;

  // The elements as a tensor of T.
  template <element T>
  tensor<T> as() const {
    tensor<T> out(extent);
    std::size_t size = detail::idx_type_size(static_cast<std::uint8_t>(type));
    T* to = out.data();
    for (std::int64_t i = 0, n = out.numel(); i < n; ++i) {
      const std::uint8_t* at = bytes.data() + static_cast<std::size_t>(i) * size;
      std::uint64_t word = 0;
      for (std::size_t b = 0; b < size; ++b) word = (word << 8) | at[b];
      to[i] = static_cast<T>(decode(word));
    }
    return out;
  }

 private:
  double decode(std::uint64_t word) const {
    switch (type) {
      case idx_type::u8: return static_cast<double>(static_cast<std::uint8_t>(word));
      case idx_type::i8: return static_cast<double>(static_cast<std::int8_t>(word));
      case idx_type::i16: return static_cast<double>(static_cast<std::int16_t>(word));
      case idx_type::i32: return static_cast<double>(static_cast<std::int32_t>(word));
      case idx_type::f32: {
        auto bits = static_cast<std::uint32_t>(word);
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
      }
      case idx_type::f64: {
        double d;
        std::memcpy(&d, &word, sizeof d);
        return d;
      }
    }
    return 0;
  }
};

inline idx_file read_idx(const std::string& path) {
  detail::idx_reader in(path);
  std::uint8_t magic[4];
  in.exactly(magic, 4, "header");
  auto fail = [&](const std::string& why) { return io_error("tandem::data::read_idx: '" + path + "' " + why); };
  if (magic[0] != 0 || magic[1] != 0) throw fail("is not an IDX file (its magic number does not start with two zero bytes)");
  std::size_t size = detail::idx_type_size(magic[2]);
  if (size == 0) throw fail("has an unknown element type (byte 3 of its magic number is " + std::to_string(magic[2]) + ")");
  if (magic[3] == 0 || magic[3] > 8) throw fail("has " + std::to_string(magic[3]) + " axes (1 to 8 are allowed)");
  idx_file file{{}, static_cast<idx_type>(magic[2]), {}};
  std::uint64_t count = 1;
  for (int axis = 0; axis < magic[3]; ++axis) {
    std::uint8_t b[4];
    in.exactly(b, 4, "header");
    std::uint64_t extent = (std::uint64_t{b[0]} << 24) | (std::uint64_t{b[1]} << 16) | (std::uint64_t{b[2]} << 8) | b[3];
    if (extent != 0 && count > detail::idx_max_bytes / size / extent)
      throw fail("declares more than 16 GiB of data (axis " + std::to_string(axis) + " has extent " +
                 std::to_string(extent) + ")");
    count *= extent;
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
  return file;
}

// The usual reading of image files: [N, rows, cols] bytes scaled to [0, 1].
inline tensor<float> read_idx_images(const std::string& path) {
  idx_file f = read_idx(path);
  if (f.type != idx_type::u8 || f.extent.size() != 3)
    throw io_error("tandem::data::read_idx_images: '" + path + "' is not a [N, rows, cols] file of bytes (shape " +
                   to_string(f.extent) + ")");
  tensor<float> images = f.as<float>();
  float* p = images.data();
  for (std::int64_t i = 0, n = images.numel(); i < n; ++i) p[i] /= 255.0f;
  return images;
}

// Label files: [N] bytes, as class indices.
inline tensor<std::int64_t> read_idx_labels(const std::string& path) {
  idx_file f = read_idx(path);
  if (f.type != idx_type::u8 || f.extent.size() != 1)
    throw io_error("tandem::data::read_idx_labels: '" + path + "' is not a [N] file of bytes (shape " +
                   to_string(f.extent) + ")");
  return f.as<std::int64_t>();
}

}  // namespace tandem::data
