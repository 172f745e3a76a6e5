// NumPy's .npz archives: np.savez's and np.savez_compressed's (committed,
// with NumPy's ZIP64 local headers) read exactly; tandem's stored and
// deflated archives round trip and read back in NumPy
// (bench/interop_reference.py --check); every truncation and corruption
// refused.

#include "io/files.hpp"
#include "support/check.hpp"

using namespace tandem;

namespace {

void check_numpy_arrays(const io::named_tensors& arrays) {
  REQUIRE(arrays.size() == 3);
  test::check_formula<float>(arrays.at("a"), {2, 3});
  test::check_formula<std::int64_t>(arrays.at("b"), {2, 3, 4});
  test::check_formula<bool>(arrays.at("c"), {5});
}

io::named_tensors written_arrays() {
  return {{"a", test::formula_tensor<double>({2, 3})},
          {"b", test::formula_tensor<std::int32_t>({4})},
          {"c", test::formula_tensor<bool>({3})}};
}

}  // namespace

TEST_CASE("npz: np.savez's and np.savez_compressed's archives read as NumPy wrote them") {
  check_numpy_arrays(io::load_npz(test::data_file("arrays.npz")));
  check_numpy_arrays(io::load_npz(test::data_file("arrays_compressed.npz")));
}

TEST_CASE("npz: stored and deflated archives round trip bit-exactly, large and empty ones too") {
  for (bool compressed : {false, true}) {
    auto path = test::scratch_file(compressed ? "written_compressed.npz" : "written.npz");
    io::save_npz(path, written_arrays(), compressed);
    io::named_tensors back = io::load_npz(path);
    REQUIRE(back.size() == 3);
    test::check_formula<double>(back.at("a"), {2, 3});
    test::check_formula<std::int32_t>(back.at("b"), {4});
    test::check_formula<bool>(back.at("c"), {3});

    auto big = test::scratch_file("big.npz");
    io::save_npz(big, {{"x", test::formula_tensor<float>({test::largest_size})}, {"empty", tensor<std::int64_t>(shape{0})}},
                 compressed);
    io::named_tensors read = io::load_npz(big);
    test::check_formula<float>(read.at("x"), {test::largest_size});
    test::check_formula<std::int64_t>(read.at("empty"), {0});
    io::save_npz(big, {}, compressed);
    CHECK(io::load_npz(big).empty());
  }
  CHECK_THROWS_AS(io::save_npz(test::scratch_file("unnamed.npz"), {{"", tensor<float>{1}}}), value_error);
}

TEST_CASE("npz: every truncation and random corruption is refused with io_error, never a crash") {
  for (const char* name : {"arrays.npz", "arrays_compressed.npz"}) {
    auto good = test::file_bytes(test::data_file(name));
    auto path = test::scratch_file(std::string("bad_") + name);
    test::check_truncations_refused(good, good.size(), path, [](const auto& p) { return io::load_npz(p); });
    test::check_flips_survived(good, 2, 11, path, [](const auto& p) { return io::load_npz(p); });
  }
}

TEST_CASE("npz: what tandem does not read is refused by name") {
  auto bytes = test::file_bytes(test::data_file("arrays.npz"));
  auto path = test::scratch_file("odd.npz");
  // The first entry's general purpose flags: encrypted, then the method.
  auto edit = [&](std::size_t at, std::uint8_t value, const char* why) {
    auto copy = bytes;
    // The same field in the central directory, which the reader trusts.
    std::size_t directory = 0;
    for (std::size_t k = copy.size() - 22; k-- > 0;)
      if (copy[k] == 'P' && copy[k + 1] == 'K' && copy[k + 2] == 1 && copy[k + 3] == 2) directory = k;
    copy[directory + at] = value;
    test::put_file_bytes(path, copy);
    CHECK_THROWS_WITH_AS(io::load_npz(path), doctest::Contains(why), io_error);
  };
  edit(8, 1, "encrypted");
  edit(10, 12, "method 12");
  test::put_file_bytes(path, std::vector<std::uint8_t>(100, 0));
  CHECK_THROWS_WITH_AS(io::load_npz(path), doctest::Contains("not a zip archive"), io_error);
}
