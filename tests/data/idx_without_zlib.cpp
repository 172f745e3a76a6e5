// tandem/io.hpp without zlib (TANDEM_NO_ZLIB, as CMake builds it where it
// finds none): plain IDX files read as with zlib, and a gzip-compressed one
// is refused with a message that says why. A program of its own: the reader
// is another class without zlib, which must not meet the zlib one in one
// program.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "support/check.hpp"
#include "tandem/io.hpp"
#include "tandem/tandem.hpp"

#if !defined(TANDEM_NO_ZLIB)
#error "this test is built with TANDEM_NO_ZLIB"
#endif

using namespace tandem;

namespace {

std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  auto dir = std::filesystem::temp_directory_path() / "tandem_idx_without_zlib_tests";
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace

TEST_CASE("IDX without zlib: plain files read, a truncated one throws, a compressed one is refused by name") {
  std::vector<std::uint8_t> labels{0, 0, 0x08, 1, 0, 0, 0, 4, 3, 0, 9, 1};
  test::check_values(data::read_idx_labels(write("labels.idx", labels)), {4}, {3, 0, 9, 1}, "labels");
  auto truncated = labels;
  truncated.pop_back();
  CHECK_THROWS_WITH_AS(data::read_idx_labels(write("truncated.idx", truncated)), doctest::Contains("is truncated"),
                       io_error);
  // The first bytes of any gzip stream: 1f 8b, then the method.
  std::vector<std::uint8_t> gzip{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3};
  CHECK_THROWS_WITH_AS(data::read_idx(write("labels.idx.gz", gzip)),
                       doctest::Contains("is gzip-compressed, and this build of tandem has no zlib"), io_error);
  CHECK_THROWS_WITH_AS(data::read_idx(write("empty.idx", {})), doctest::Contains("ends inside its header"), io_error);
  CHECK_THROWS_WITH_AS(data::read_idx("/no/such/file.idx"), doctest::Contains("cannot open"), io_error);
}
