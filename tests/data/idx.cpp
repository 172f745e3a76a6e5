// IDX files the tests write themselves, raw and gzip: every element type,
// and every way a file can be bad (truncated at each position, flipped
// bytes, an oversized or broken header, trailing data). Then the seeded
// batcher.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "support/check.hpp"
#include "tandem/io.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "tandem_idx_tests";
  std::filesystem::create_directories(dir);
  return dir / name;
}

std::vector<std::uint8_t> header(std::uint8_t type, const std::vector<std::uint32_t>& extents) {
  std::vector<std::uint8_t> out{0, 0, type, static_cast<std::uint8_t>(extents.size())};
  for (std::uint32_t e : extents)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(e >> shift));
  return out;
}

std::string write_raw(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  auto path = scratch(name);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

std::string write_gzip(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  auto path = scratch(name).string();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  return path;
}

// A 2 x 3 x 2 file of bytes 0, 20, 40, ...
std::vector<std::uint8_t> small_images() {
  auto bytes = header(0x08, {2, 3, 2});
  for (int i = 0; i < 12; ++i) bytes.push_back(static_cast<std::uint8_t>(20 * i));
  return bytes;
}

}  // namespace

TEST_CASE("IDX files of bytes read the same raw and gzip-compressed") {
  auto bytes = small_images();
  for (const std::string& path : {write_raw("images.idx", bytes), write_gzip("images.idx.gz", bytes)}) {
    INFO(path);
    data::idx_file f = data::read_idx(path);
    CHECK(f.extent == shape{2, 3, 2});
    CHECK(f.type == data::idx_type::u8);
    std::vector<double> want;
    for (int i = 0; i < 12; ++i) want.push_back(20.0 * i / 255.0);
    test::check_values(data::read_idx_images(path), {2, 3, 2}, want, "scaled to [0, 1]", 1e-6, 1e-7);
  }
  auto labels = header(0x08, {4});
  for (std::uint8_t v : {3, 0, 9, 1}) labels.push_back(v);
  test::check_values(data::read_idx_labels(write_gzip("labels.gz", labels)), {4}, {3, 0, 9, 1}, "labels");
  CHECK_THROWS_WITH_AS(data::read_idx_labels(write_raw("images_as_labels", bytes)),
                       doctest::Contains("is not a [N] file of bytes"), io_error);
}

TEST_CASE("every IDX element type decodes big-endian values") {
  auto i16 = header(0x0B, {2});
  for (std::uint8_t b : {0xFF, 0xFE, 0x01, 0x00}) i16.push_back(b);
  test::check_values(data::read_idx(write_raw("i16", i16)).as<float>(), {2}, {-2, 256}, "int16");
  auto i32 = header(0x0C, {1});
  for (std::uint8_t b : {0x80, 0x00, 0x00, 0x00}) i32.push_back(b);
  test::check_values(data::read_idx(write_raw("i32", i32)).as<double>(), {1}, {-2147483648.0}, "int32");
  auto f32 = header(0x0D, {1});
  for (std::uint8_t b : {0x3F, 0xC0, 0x00, 0x00}) f32.push_back(b);
  test::check_values(data::read_idx(write_raw("f32", f32)).as<float>(), {1}, {1.5}, "float32");
  auto f64 = header(0x0E, {1});
  for (std::uint8_t b : {0xC0, 0x04, 0, 0, 0, 0, 0, 0}) f64.push_back(b);
  test::check_values(data::read_idx(write_raw("f64", f64)).as<double>(), {1}, {-2.5}, "float64");
  auto i8 = header(0x09, {1});
  i8.push_back(0xFF);
  test::check_values(data::read_idx(write_raw("i8", i8)).as<std::int32_t>(), {1}, {-1}, "int8");
}

TEST_CASE("bad IDX files throw io_error naming the file and the fault") {
  CHECK_THROWS_WITH_AS(data::read_idx(scratch("missing").string()), doctest::Contains("cannot open"), io_error);
  auto bytes = small_images();
  auto with = [&](std::size_t at, std::uint8_t value) {
    auto copy = bytes;
    copy[at] = value;
    return copy;
  };
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("magic", with(0, 1))), doctest::Contains("is not an IDX file"), io_error);
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("type", with(2, 0x07))), doctest::Contains("unknown element type"),
                       io_error);
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("rank", with(3, 0))), doctest::Contains("has 0 axes"), io_error);
  auto extra = bytes;
  extra.push_back(7);
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("extra", extra)), doctest::Contains("has data after"), io_error);
  auto huge = header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF});
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("huge", huge)), doctest::Contains("more than 16 GiB"), io_error);
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("wide", header(0x08, {0x7FFFFFFF, 0x7FFFFFFF, 4}))),
                       doctest::Contains("more than 16 GiB"), io_error);
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("claims_a_gigabyte", header(0x08, {1u << 30}))),
                       doctest::Contains("is truncated"), io_error);
  // Found by the fuzzer (tests/fuzz/corpus/idx/found_overflowing_empty_shape.idx):
  // no data, but extents beyond the zero whose product overflows.
  CHECK_THROWS_WITH_AS(data::read_idx(write_raw("empty_but_huge", header(0x08, {0, 0xFFFFFFFF, 0xFFFFFFFF, 7}))),
                       doctest::Contains("more than 16 GiB"), io_error);
  auto corrupt_gzip = [&] {
    auto path = write_gzip("corrupt.gz", bytes);
    std::vector<char> raw;
    {
      std::ifstream in(path, std::ios::binary);
      raw.assign(std::istreambuf_iterator<char>(in), {});
    }
    raw[raw.size() / 2] ^= 0x55;
    raw[raw.size() / 2 + 1] ^= 0x55;
    std::ofstream(path, std::ios::binary).write(raw.data(), static_cast<std::streamsize>(raw.size()));
    return path;
  }();
  CHECK_THROWS_AS(data::read_idx(corrupt_gzip), io_error);
}

TEST_CASE("an IDX file truncated at any position, or with any byte flipped, never crashes") {
  auto bytes = small_images();
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    INFO("truncated to " << length << " bytes");
    std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
    CHECK_THROWS_AS(data::read_idx(write_raw("prefix", prefix)), io_error);
    CHECK_THROWS_AS(data::read_idx(write_gzip("prefix.gz", prefix)), io_error);
  }
  generator gen(5);
  tensor<std::int64_t> where = integers<std::int64_t>({200}, 0, static_cast<std::int64_t>(bytes.size()), gen);
  tensor<std::int64_t> flip = integers<std::int64_t>({200}, 1, 256, gen);
  for (std::int64_t k = 0; k < 200; ++k) {
    auto copy = bytes;
    std::size_t at = static_cast<std::size_t>(where.data()[k]);
    copy[at] = static_cast<std::uint8_t>(copy[at] ^ flip.data()[k]);
    INFO("byte " << at << " flipped by " << flip.data()[k]);
    if (at < 16) {
      // A header byte: the file is refused, or (another valid type, say)
      // read whole and consistent with its header.
      try {
        data::idx_file f = data::read_idx(write_raw("flipped", copy));
        CHECK(f.bytes.size() == 12);
      } catch (const io_error&) {
      }
    } else {
      data::idx_file f = data::read_idx(write_raw("flipped", copy));
      CHECK(f.bytes[at - 16] == copy[at]);
    }
  }
}

TEST_CASE("a gzip IDX file cut anywhere, its trailer (CRC-32 and length) included, is refused") {
  auto compressed = [] {
    std::ifstream in(write_gzip("whole.gz", small_images()), std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
  }();
  REQUIRE(compressed.size() > 18);
  CHECK(data::read_idx(write_raw("whole_copy.gz", compressed)).bytes.size() == 12);
  for (std::size_t length = 0; length < compressed.size(); ++length) {
    INFO("cut to " << length << " of " << compressed.size() << " bytes");
    std::vector<std::uint8_t> prefix(compressed.begin(), compressed.begin() + static_cast<std::ptrdiff_t>(length));
    CHECK_THROWS_AS(data::read_idx(write_raw("cut.gz", prefix)), io_error);
  }
}

TEST_CASE("batches cover every example once per epoch, in a seeded order") {
  generator a(7), b(7);
  auto first = data::batches(10, 4, &a), again = data::batches(10, 4, &b);
  REQUIRE(first.size() == 3);
  CHECK(first[2].numel() == 2);
  std::set<std::int64_t> seen;
  for (std::size_t k = 0; k < first.size(); ++k) {
    test::check_values(first[k], again[k], "the same seed, the same order");
    for (std::int64_t v : first[k].to_vector()) seen.insert(v);
  }
  CHECK(seen.size() == 10);
  CHECK(*seen.rbegin() == 9);
  auto second = data::batches(10, 4, &a);
  CHECK(second[0].to_vector() != first[0].to_vector());
  auto ordered = data::batches(5, 2, nullptr, true);
  REQUIRE(ordered.size() == 2);
  CHECK(ordered[1].to_vector() == std::vector<std::int64_t>{2, 3});
  CHECK(data::batches(0, 3, nullptr).empty());
  CHECK_THROWS_AS(data::batches(5, 0, nullptr), value_error);
}
