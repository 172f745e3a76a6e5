// NumPy's .npy files: what NumPy wrote (committed, bench/interop_reference.py)
// read exactly, in C and Fortran order and both byte orders; what tandem
// writes equal to NumPy's bytes; round trips bit-exact for every element
// type, layout and size; every truncation and corruption refused.

#include <algorithm>
#include <cmath>
#include <limits>

#include "io/files.hpp"
#include "support/check.hpp"

using namespace tandem;

TEST_CASE("npy: NumPy's files read as NumPy wrote them, in C and Fortran order and both byte orders") {
  test::check_formula<float>(io::load_npy(test::data_file("c_f4_2x3.npy")), {2, 3});
  test::check_formula<double>(io::load_npy(test::data_file("c_f8_7.npy")), {7});
  test::check_formula<std::int32_t>(io::load_npy(test::data_file("c_i4_2x2_big.npy")), {2, 2});
  test::check_formula<std::int64_t>(io::load_npy(test::data_file("fortran_i8_2x3x4.npy")), {2, 3, 4});
  test::check_formula<double>(io::load_npy(test::data_file("fortran_f8_3x5_big.npy")), {3, 5});
  test::check_formula<bool>(io::load_npy(test::data_file("c_b1_5.npy")), {5});
  test::check_formula<float>(io::load_npy(test::data_file("c_f4_scalar.npy")), {});
  test::check_formula<double>(io::load_npy(test::data_file("c_f8_0x3.npy")), {0, 3});
  test::check_formula<float>(io::load_npy(test::data_file("v2_f4_4.npy")), {4});
  CHECK(io::load_npy<float>(test::data_file("c_f4_2x3.npy")).shape() == shape{2, 3});
}

TEST_CASE("npy: float16 reads and writes; an element type tandem lacks, or another than asked for, is refused by name") {
  test::check_formula<float16>(io::load_npy(test::data_file("f2_3.npy")), {3});
  auto half_bytes = test::file_bytes(test::data_file("f2_3.npy"));
  io::save_npy(test::scratch_file("f2_3.npy"), test::formula_tensor<float16>({3}));
  CHECK(test::file_bytes(test::scratch_file("f2_3.npy")) == half_bytes);
  // The same file claiming uint16, which tandem has no type for.
  const std::string half = "'<f2'";
  auto at = std::search(half_bytes.begin(), half_bytes.end(), half.begin(), half.end());
  REQUIRE(at != half_bytes.end());
  at[2] = 'u';
  test::put_file_bytes(test::scratch_file("u2_3.npy"), half_bytes);
  CHECK_THROWS_WITH_AS(io::load_npy(test::scratch_file("u2_3.npy")), doctest::Contains("'<u2'"), io_error);
  // NumPy has no bfloat16.
  CHECK_THROWS_WITH_AS(io::save_npy(test::scratch_file("bf16.npy"), ones<bfloat16>({2})),
                       doctest::Contains("NumPy has no bfloat16"), io_error);
  CHECK_THROWS_WITH_AS(io::load_npy<double>(test::data_file("c_f4_2x3.npy")), doctest::Contains("holds float32, not float64"),
                       io_error);
}

TEST_CASE("npy: tandem writes the bytes NumPy writes") {
  auto same_as_numpy = [](const io::any_tensor& t, const char* committed) {
    auto path = test::scratch_file(std::string("numpy_") + committed);
    io::save_npy(path, t);
    CHECK_MESSAGE(test::file_bytes(path) == test::file_bytes(test::data_file(committed)), committed);
  };
  same_as_numpy(test::formula_tensor<float>({2, 3}), "c_f4_2x3.npy");
  same_as_numpy(test::formula_tensor<double>({7}), "c_f8_7.npy");
  same_as_numpy(test::formula_tensor<bool>({5}), "c_b1_5.npy");
  same_as_numpy(test::formula_tensor<float>({}), "c_f4_scalar.npy");
  same_as_numpy(test::formula_tensor<double>({0, 3}), "c_f8_0x3.npy");
  io::save_npy(test::scratch_file("written.npy"), test::formula_tensor<float>({3, 4}));
}

TEST_CASE_TEMPLATE("npy: round trips are bit-exact at every size and from strided views", T, bool, std::int32_t, std::int64_t,
                   float, double, float16) {
  for (std::int64_t n : test::tail_sizes) {
    tensor<T> t = test::formula_tensor<T>({n});
    if constexpr (is_floating_v<T>) {
      if (n >= 7) {
        t.data()[0] = std::numeric_limits<T>::quiet_NaN();
        t.data()[1] = -T(0);
        t.data()[2] = std::numeric_limits<T>::infinity();
        t.data()[3] = std::numeric_limits<T>::denorm_min();
      }
    }
    auto path = test::scratch_file("round_trip.npy");
    io::save_npy(path, t);
    tensor<T> back = io::load_npy<T>(path);
    REQUIRE(back.shape() == t.shape());
    CHECK(std::memcmp(back.data(), t.data(), static_cast<std::size_t>(n) * sizeof(T)) == 0);
  }
  tensor<T> grid = test::formula_tensor<T>({4, 6});
  auto path = test::scratch_file("strided.npy");
  for (const tensor<T>& view : {grid.transpose(0, 1), grid.slice(1, 1, 6, 2)}) {
    io::save_npy(path, view);
    tensor<T> back = io::load_npy<T>(path), dense = view.contiguous();
    REQUIRE(back.shape() == view.shape());
    CHECK(std::memcmp(back.data(), dense.data(), static_cast<std::size_t>(dense.numel()) * sizeof(T)) == 0);
  }
}

TEST_CASE("npy: every truncation, and each kind of bad header, is refused with io_error naming the file") {
  auto good = test::file_bytes(test::data_file("fortran_i8_2x3x4.npy"));
  auto path = test::scratch_file("bad.npy");
  test::check_truncations_refused(good, good.size(), path, [](const auto& p) { return io::load_npy(p); });

  auto header_of = [](std::string dict) {
    std::vector<std::uint8_t> bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<std::uint8_t>(dict.size()), 0};
    bytes.insert(bytes.end(), dict.begin(), dict.end());
    return bytes;
  };
  const std::pair<std::string, const char*> bad_headers[] = {
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured dtype"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "fortran_order"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "malformed shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected or repeated key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, }", "without descr, fortran_order or shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", "impossible shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "needs 8"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 100000000000000, 100000000000000), }", "impossible shape"},
  };
  for (const auto& [dict, why] : bad_headers) {
    test::put_file_bytes(path, header_of(dict));
    CHECK_THROWS_WITH_AS(io::load_npy(path), doctest::Contains(why), io_error);
    CHECK_THROWS_WITH_AS(io::load_npy(path), doctest::Contains(path.string().c_str()), io_error);
  }
  auto not_a_bool = test::file_bytes(test::data_file("c_b1_5.npy"));
  not_a_bool.back() = 2;
  test::put_file_bytes(path, not_a_bool);
  CHECK_THROWS_WITH_AS(io::load_npy(path), doctest::Contains("neither 0 nor 1"), io_error);
  auto version_4 = good;
  version_4[6] = 4;
  test::put_file_bytes(path, version_4);
  CHECK_THROWS_WITH_AS(io::load_npy(path), doctest::Contains("version 4"), io_error);
  CHECK_THROWS_WITH_AS(io::load_npy(test::scratch_file("missing.npy")), doctest::Contains("cannot read"), io_error);
  CHECK_THROWS_WITH_AS(io::load_npy(test::scratch_file("")), doctest::Contains("not a regular file"), io_error);
}

TEST_CASE("npy: random byte flips read as a consistent array or throw io_error, never crash") {
  auto good = test::file_bytes(test::data_file("fortran_i8_2x3x4.npy"));
  auto path = test::scratch_file("flipped.npy");
  test::check_flips_survived(good, 3, 7, path, [&](const auto& p) {
    io::any_tensor t = io::load_npy(p);
    auto element = static_cast<std::int64_t>(std::visit([](const auto& x) { return sizeof(*x.data()); }, t));
    CHECK(numel(io::shape_of(t)) * element <= static_cast<std::int64_t>(good.size()));
  });
}

TEST_CASE("npy: a failed save leaves no file behind and the target as it was") {
  CHECK_THROWS_WITH_AS(io::save_npy(test::scratch_file("no_such_folder") / "x.npy", test::formula_tensor<float>({2})),
                       doctest::Contains("cannot create"), io_error);
  auto path = test::scratch_file("kept.npy");
  io::save_npy(path, test::formula_tensor<float>({3}));
  auto before = test::file_bytes(path);
  io::save_npy(path, test::formula_tensor<double>({5}));
  CHECK(io::load_npy<double>(path).shape() == shape{5});
  CHECK(test::file_bytes(path) != before);
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path()))
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp-") == std::string::npos, entry.path());
}
