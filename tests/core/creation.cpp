// Factories: filled tensors, ranges, identity, copies of user data, and
// tensors over user memory (borrowed or adopted).

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("filled tensors") {
  CHECK(zeros({2, 2}).to_vector() == std::vector<float>(4, 0));
  CHECK(ones<std::int32_t>({3}).to_vector() == std::vector<std::int32_t>(3, 1));
  auto f = full({2}, 2.5);
  static_assert(std::is_same_v<decltype(f), tensor<double>>);
  CHECK(full<float>({2}, 7).to_vector() == std::vector<float>{7, 7});
  tensor<double> x = zeros<double>({4, 1});
  CHECK(ones_like(x).shape() == shape{4, 1});
  CHECK(zeros_like(x).to_vector() == std::vector<double>(4, 0));
  CHECK(full_like(x, 3).to_vector() == std::vector<double>(4, 3));
  CHECK(empty_like(x).shape() == x.shape());
}

TEST_CASE("ranges") {
  CHECK(arange(5).to_vector() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(arange<float>(1, 2, 0.25).to_vector() == std::vector<float>{1, 1.25, 1.5, 1.75});
  CHECK(arange<std::int32_t>(5, 0, -2).to_vector() == std::vector<std::int32_t>{5, 3, 1});
  CHECK(arange(3, 3).numel() == 0);
  CHECK_THROWS_WITH_AS(arange(0, 1, 0), "tandem::arange: start, stop and step must be finite and step non-zero (got 0.000000, 1.000000, 0.000000)", value_error);
  CHECK(linspace<double>(0, 1, 5).to_vector() == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  CHECK(linspace(2, 3, 1).to_vector() == std::vector<float>{2});
  CHECK(linspace(2, 3, 0).numel() == 0);
  CHECK_THROWS_AS(linspace(0, 1, -1), value_error);
  CHECK(eye(2, 3).to_vector() == std::vector<float>{1, 0, 0, 0, 1, 0});
  CHECK(eye<std::int64_t>(2).to_vector() == std::vector<std::int64_t>{1, 0, 0, 1});
}

TEST_CASE("copies of user data") {
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  tensor<float> x = from_vector(data, {2, 3});
  data[0] = 100;
  CHECK(x.at(0, 0) == 1);
  CHECK(from_vector(data).shape() == shape{6});
  CHECK(from_span(std::span<const float>(data).subspan(4), {2}).to_vector() == std::vector<float>{5, 6});
  CHECK_THROWS_WITH_AS(from_vector(data, {4}), "tandem::from_vector: 6 values cannot fill shape [4]", shape_error);
  CHECK(from_vector(std::vector<bool>{true, false}).to_vector() == std::vector<bool>{true, false});
}

TEST_CASE("borrowed memory is shared, adopted memory is freed by its deleter") {
  std::vector<double> buffer{1, 2, 3, 4};
  {
    tensor<double> view = borrow(buffer.data(), {2, 2});
    view.at(1, 1) = 40;
    view *= 2;
  }
  CHECK(buffer == std::vector<double>{2, 4, 6, 80});
  bool freed = false;
  {
    auto* raw = new std::int32_t[3]{1, 2, 3};
    tensor<std::int32_t> owned = adopt(raw, {3}, [&](std::int32_t* p) {
      delete[] p;
      freed = true;
    });
    tensor<std::int32_t> alias = owned.slice(0, 1, {});
    owned = tensor<std::int32_t>{};
    CHECK_FALSE(freed);
    CHECK(alias.to_vector() == std::vector<std::int32_t>{2, 3});
  }
  CHECK(freed);
}
