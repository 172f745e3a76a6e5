// safetensors files: the reference implementation's (committed, written by
// the safetensors package) read exactly, with their metadata; tandem's
// round trip bit-exactly, aligned for zero-copy loading, and read back in
// Python (bench/interop_reference.py --check); every truncation of the
// header, overlap, hole, wrong size and random corruption refused.

#include <algorithm>

#include "io/files.hpp"
#include "support/check.hpp"

using namespace tandem;

namespace {

std::vector<std::uint8_t> safetensors_bytes(const std::string& header, std::size_t data) {
  std::vector<std::uint8_t> out;
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<std::uint8_t>(header.size() >> (8 * b)));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data, 0);
  return out;
}

}  // namespace

TEST_CASE("safetensors: the reference implementation's file reads exactly, metadata and all") {
  io::safetensors_file file(test::data_file("tensors.safetensors"));
  CHECK(file.metadata() == io::safetensors_metadata{{"format", "np"}, {"note", "tandem \"test\""}});
  CHECK(file.names() == std::vector<std::string>{"bool", "empty", "f32", "f64", "i32", "i64", "scalar"});
  CHECK(file.dtype_name("i64") == "I64");
  CHECK(file.shape("i64") == shape{3, 4});
  test::check_formula<float>(file.get("f32"), {2, 3});
  test::check_formula<double>(file.get("f64"), {7});
  test::check_formula<std::int32_t>(file.get("i32"), {2, 2});
  test::check_formula<std::int64_t>(file.get("i64"), {3, 4});
  test::check_formula<bool>(file.get("bool"), {5});
  test::check_formula<float>(file.get("scalar"), {});
  test::check_formula<float>(file.get("empty"), {0, 3});
  CHECK(io::load_safetensors(test::data_file("tensors.safetensors")).size() == 7);
  CHECK_THROWS_WITH_AS(file.get("missing"), doctest::Contains("no tensor 'missing'"), value_error);
  CHECK_THROWS_WITH_AS(file.get<float>("f64"), doctest::Contains("holds float64, not float32"), io_error);
}

TEST_CASE("safetensors: F16 reads as float16; a dtype tandem lacks is listed, and refused by name only when read") {
  test::check_formula<float16>(io::safetensors_file(test::data_file("mixed.safetensors")).get("f16"), {3});
  // The same file with its F16 tensor claiming I16, which tandem has no type for.
  auto bytes = test::file_bytes(test::data_file("mixed.safetensors"));
  const std::string half = "\"F16\"";
  auto at = std::search(bytes.begin(), bytes.end(), half.begin(), half.end());
  REQUIRE(at != bytes.end());
  at[1] = 'I';
  test::put_file_bytes(test::scratch_file("mixed_i16.safetensors"), bytes);
  io::safetensors_file file(test::scratch_file("mixed_i16.safetensors"));
  CHECK(file.dtype_name("f16") == "I16");
  test::check_formula<float>(file.get("f32"), {2});
  CHECK_THROWS_WITH_AS(file.get("f16"), doctest::Contains("dtype I16"), io_error);
  CHECK_THROWS_AS(io::load_safetensors(test::scratch_file("mixed_i16.safetensors")), io_error);
}

TEST_CASE("safetensors: round trips are bit-exact and aligned tensors are views of the mapped file") {
  io::named_tensors tensors{{"f32", test::formula_tensor<float>({2, 3})},
                            {"i64", test::formula_tensor<std::int64_t>({3})},
                            {"flags", test::formula_tensor<bool>({4})},
                            {"bf16", test::formula_tensor<bfloat16>({5})},
                            {"f16", test::formula_tensor<float16>({2, 2})}};
  auto path = test::scratch_file("written.safetensors");
  io::save_safetensors(path, tensors, {{"source", "tandem"}, {"quoted", "a \"b\"\n"}});
  io::safetensors_file file(path);
  CHECK(file.metadata().at("quoted") == "a \"b\"\n");
  test::check_formula<float>(file.get("f32"), {2, 3});
  test::check_formula<std::int64_t>(file.get("i64"), {3});
  test::check_formula<bool>(file.get("flags"), {4});
  test::check_formula<bfloat16>(file.get("bf16"), {5});
  test::check_formula<float16>(file.get("f16"), {2, 2});
  CHECK(file.dtype_name("bf16") == "BF16");
  // Two reads of one tensor share the mapping's memory: nothing was copied.
  CHECK(file.get<float>("f32").data() == file.get<float>("f32").data());
  CHECK(file.get<std::int64_t>("i64").data() == file.get<std::int64_t>("i64").data());
  // A write to a loaded tensor changes neither the file nor another read.
  {
    tensor<float> loaded = file.get<float>("f32");
    loaded.data()[0] = 42;
  }
  io::safetensors_file again(path);
  test::check_formula<float>(again.get("f32"), {2, 3});

  for (std::int64_t n : test::tail_sizes) {
    tensor<double> big = test::formula_tensor<double>({n});
    tensor<std::int32_t> odd = test::formula_tensor<std::int32_t>({n % 5});
    io::save_safetensors(test::scratch_file("sizes.safetensors"), {{"big", big.slice(0, 0, n, 1)}, {"odd", odd}});
    io::named_tensors back = io::load_safetensors(test::scratch_file("sizes.safetensors"));
    test::check_formula<double>(back.at("big"), {n});
    test::check_formula<std::int32_t>(back.at("odd"), {n % 5});
  }
  tensor<float> grid = test::formula_tensor<float>({4, 6});
  io::save_safetensors(test::scratch_file("view.safetensors"), {{"t", grid.transpose(0, 1)}});
  tensor<float> back = io::as<float>(io::load_safetensors(test::scratch_file("view.safetensors")).at("t"));
  tensor<float> dense = grid.transpose(0, 1).contiguous();
  REQUIRE(back.shape() == dense.shape());
  CHECK(std::memcmp(back.data(), dense.data(), sizeof(float) * 24) == 0);
}

TEST_CASE("safetensors: every truncation of the header and each kind of bad layout is refused with io_error") {
  auto good = test::file_bytes(test::data_file("tensors.safetensors"));
  auto path = test::scratch_file("bad.safetensors");
  std::size_t header_end = 8;
  for (int b = 0; b < 8; ++b) header_end += std::size_t{good[static_cast<std::size_t>(b)]} << (8 * b);
  test::check_truncations_refused(good, header_end + 2, path, [](const auto& p) { return io::safetensors_file(p); });
  auto open = [](const auto& p) { return io::safetensors_file(p); };
  const std::pair<std::string, const char*> bad[] = {
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", "overlap"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", "no tensor covers"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "needs 12"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,800]}})", "outside its data"},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "not an unsigned integer"},
      {R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", "unknown dtype 'Q7'"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"more":1}})", "unknown field 'more'"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", "without dtype, shape or data_offsets"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "twice"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", "impossible shape"},
      {R"({"a":{"dtype":"F32","shape":[0,1099511627776,1099511627776],"data_offsets":[0,0]}})", "impossible shape"},
      {R"({"__metadata__":{"k":1}})", "not a string"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} x)", "text after"},
      {R"([1, 2])", "not a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "malformed"},
  };
  for (const auto& [header, why] : bad) {
    test::put_file_bytes(path, safetensors_bytes(header, 12));
    CHECK_THROWS_WITH_AS(open(path), doctest::Contains(why), io_error);
  }
  auto huge = safetensors_bytes("{}", 0);
  huge[5] = 1;
  test::put_file_bytes(path, huge);
  CHECK_THROWS_WITH_AS(open(path), doctest::Contains("over 100 MB"), io_error);
  std::string nested(100, '[');
  test::put_file_bytes(path, safetensors_bytes("{\"a\":" + nested, 0));
  CHECK_THROWS_WITH_AS(open(path), doctest::Contains("nested too deeply"), io_error);
  test::put_file_bytes(path, safetensors_bytes(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", 0));
  {
    auto bytes = test::file_bytes(path);
    bytes.push_back(1);
    bytes.push_back(5);
    test::put_file_bytes(path, bytes);
  }
  CHECK_THROWS_WITH_AS(io::safetensors_file(path).get("a"), doctest::Contains("neither 0 nor 1"), io_error);
}

TEST_CASE("safetensors: random byte flips open as a consistent file or throw io_error, never crash") {
  auto good = test::file_bytes(test::data_file("tensors.safetensors"));
  auto path = test::scratch_file("flipped.safetensors");
  test::check_flips_survived(good, 2, 5, path, [](const auto& p) {
    io::safetensors_file file(p);
    for (const std::string& name : file.names()) {
      try {
        io::any_tensor t = file.get(name);
        CHECK(io::shape_of(t) == file.shape(name));
      } catch (const io_error&) {
      }
    }
  });
}
