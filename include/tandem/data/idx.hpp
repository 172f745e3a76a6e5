#pragma once
// IDX files, the format of MNIST and Fashion-MNIST: two zero bytes, a type
// byte, the number of axes, each extent as a big-endian 32-bit integer, then
// the elements, big-endian, row-major. Files may be gzip-compressed (read
// through zlib, which passes plain files through unchanged) where tandem
// has zlib; without it (TANDEM_NO_ZLIB, which CMake defines when it finds
// no zlib) plain files read the same and a compressed one throws io_error
// saying so. Everything is checked before it is trusted: the magic, the
// type, the rank, the extents (their product may not overflow), and that the
// data is exactly as long as the header says. A bad file throws io_error
// naming the file and the fault.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tandem/core/config.hpp"
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

// Reads and checks a whole file, raw or gzip-compressed.
idx_file read_idx(const std::string& path);

// The usual reading of image files: [N, rows, cols] bytes scaled to [0, 1].
tensor<float> read_idx_images(const std::string& path);

// Label files: [N] bytes, as class indices.
tensor<std::int64_t> read_idx_labels(const std::string& path);

}  // namespace tandem::data

#if TANDEM_HEADER_ONLY
#include "tandem/data/idx-inl.hpp"
#endif
