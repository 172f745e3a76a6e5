#pragma once
// CRC-32 as zlib, gzip and PNG compute it (the reflected polynomial
// 0xEDB88320, initial value and final xor all ones): the checksum of a
// checkpoint file. Written here so that checkpoints need no zlib. Eight
// bytes a step through eight tables ("slicing by 8"), which keeps the
// checksum of a large checkpoint well below the time of writing it.

#include <array>
#include <cstddef>
#include <cstdint>

namespace tandem::detail {

// crc32_tables[k][b]: the CRC contribution of byte b followed by k zero bytes.
inline constexpr std::array<std::array<std::uint32_t, 256>, 8> crc32_tables = [] {
  std::array<std::array<std::uint32_t, 256>, 8> tables{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t r = byte;
    for (int bit = 0; bit < 8; ++bit) r = (r & 1) ? (r >> 1) ^ 0xEDB88320u : r >> 1;
    tables[0][byte] = r;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t byte = 0; byte < 256; ++byte)
      tables[k][byte] = (tables[k - 1][byte] >> 8) ^ tables[0][tables[k - 1][byte] & 0xFFu];
  return tables;
}();

// Continues `crc` (the checksum of the bytes before; 0 for none) over n more.
constexpr std::uint32_t crc32(const std::uint8_t* data, std::size_t n, std::uint32_t crc = 0) {
  const auto& t = crc32_tables;
  crc = ~crc;
  for (; n >= 8; n -= 8, data += 8) {
    std::uint32_t low = crc ^ (std::uint32_t{data[0]} | std::uint32_t{data[1]} << 8 | std::uint32_t{data[2]} << 16 |
                               std::uint32_t{data[3]} << 24);
    crc = t[7][low & 0xFFu] ^ t[6][(low >> 8) & 0xFFu] ^ t[5][(low >> 16) & 0xFFu] ^ t[4][low >> 24] ^
          t[3][data[4]] ^ t[2][data[5]] ^ t[1][data[6]] ^ t[0][data[7]];
  }
  for (; n > 0; --n, ++data) crc = t[0][(crc ^ *data) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace tandem::detail
