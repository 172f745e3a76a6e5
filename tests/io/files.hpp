#pragma once
// What the file format tests share: the committed files' folder
// (TANDEM_TEST_DATA, which ctest sets), a scratch folder, raw bytes in and
// out, and the formula every committed array follows
// (bench/interop_reference.py writes the files with the same).

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <tandem/io.hpp>

namespace tandem::test {

inline std::filesystem::path data_file(const std::string& name) {
  const char* folder = std::getenv("TANDEM_TEST_DATA");
  REQUIRE_MESSAGE(folder, "TANDEM_TEST_DATA names the folder of the committed files (ctest sets it)");
  return std::filesystem::path(folder) / name;
}

// A file in a folder of this process's own under the system's temporary
// folder, or in TANDEM_TEST_OUTPUT where set (bench/interop_reference.py
// --check reads the files the tests write there).
inline std::filesystem::path scratch_file(const std::string& name) {
  // Removed at exit unless it is TANDEM_TEST_OUTPUT.
  struct scratch_folder {
    std::filesystem::path path;
    bool kept;
    scratch_folder() {
      const char* output = std::getenv("TANDEM_TEST_OUTPUT");
      kept = output != nullptr;
      path = kept ? std::filesystem::path(output)
                  : std::filesystem::temp_directory_path() / ("tandem_io_tests_" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~scratch_folder() {
      std::error_code ignored;
      if (!kept) std::filesystem::remove_all(path, ignored);
    }
  };
  static const scratch_folder folder;
  return folder.path / name;
}

inline std::vector<std::uint8_t> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void put_file_bytes(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The value at C-order index i of every committed array of type T.
template <class T>
T formula(std::int64_t i) {
  if constexpr (std::is_same_v<T, bool>) return i % 3 == 0;
  else if constexpr (is_floating_v<T>) return static_cast<T>(static_cast<double>(i) * 0.25 - 1);
  else if constexpr (sizeof(T) == 4) return static_cast<T>(i * 3 - 5);
  else return static_cast<T>(i * 3 - 5 + (i % 2) * (std::int64_t{1} << 40));
}

template <class T>
tensor<T> formula_tensor(const shape& extent) {
  tensor<T> out(extent);
  for (std::int64_t i = 0; i < out.numel(); ++i) out.data()[i] = formula<T>(i);
  return out;
}

// `got` holds a tensor<T> of `extent` whose elements equal the formula's,
// bit for bit.
template <class T>
void check_formula(const io::any_tensor& got, const shape& extent) {
  const auto* t = std::get_if<tensor<T>>(&got);
  REQUIRE_MESSAGE(t, "holds " << dtype_name(io::type_of(got)) << ", not " << dtype_name(dtype_of<T>));
  REQUIRE(t->shape() == extent);
  tensor<T> dense = t->contiguous();
  for (std::int64_t i = 0; i < dense.numel(); ++i) REQUIRE(dense.data()[i] == formula<T>(i));
}

// Every prefix of `bytes` shorter than `up_to`, written to `path`, is
// refused by `read` with an io_error.
template <class Read>
void check_truncations_refused(const std::vector<std::uint8_t>& bytes, std::size_t up_to, const std::filesystem::path& path,
                               Read&& read) {
  for (std::size_t n = 0; n < up_to && n < bytes.size(); ++n) {
    put_file_bytes(path, std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
    CHECK_THROWS_AS_MESSAGE(read(path), io_error, "a file cut to " << n << " bytes was read");
  }
}

// 300 copies of `bytes`, each with `flips` random bits flipped (seeded),
// written to `path` one at a time and given to `read`, which must read each
// or throw io_error: another exception fails the test, a crash ends it.
template <class Read>
void check_flips_survived(const std::vector<std::uint8_t>& bytes, int flips, unsigned seed,
                          const std::filesystem::path& path, Read&& read) {
  std::mt19937 random(seed);
  for (int trial = 0; trial < 300; ++trial) {
    auto flipped = bytes;
    for (int k = 0; k < flips; ++k) flipped[random() % flipped.size()] ^= static_cast<std::uint8_t>(1u << (random() % 8));
    put_file_bytes(path, flipped);
    try {
      read(path);
    } catch (const io_error&) {
    }
  }
}

}  // namespace tandem::test
