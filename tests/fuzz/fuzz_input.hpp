#pragma once
// What the fuzz targets share: each input goes to the reader as a file,
// since the readers take paths; one file per process, rewritten per input.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace tandem::fuzz {

inline std::filesystem::path input_file(const char* suffix) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("tandem_fuzz_" + std::to_string(::getpid()) + suffix);
  return path;
}

inline std::filesystem::path write_input(const std::uint8_t* data, std::size_t size, const char* suffix) {
  std::filesystem::path path = input_file(suffix);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace tandem::fuzz
