// tensor<T>: construction from braces, element access, views that share
// storage (and writes through them), copies, and the errors of each.

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("braced lists give the shape, as np.array does") {
  tensor<float> row{1, 2.5, 3};
  CHECK(row.shape() == shape{3});
  tensor<float> column{{1}, {2}, {3}};
  CHECK(column.shape() == shape{3, 1});
  tensor<std::int64_t> grid{{1, 2, 3}, {4, 5, 6}};
  CHECK(grid.shape() == shape{2, 3});
  CHECK(grid.at(1, 2) == 6);
  tensor<double> cube{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}};
  CHECK(cube.shape() == shape{2, 2, 2});
  CHECK(cube.at(1, 0, 1) == 6);
  tensor<bool> flags{true, false};
  CHECK(flags.dtype_name() == "bool");
  CHECK_THROWS_WITH_AS((tensor<float>{{1, 2}, {3}}),
                       "tandem::tensor: nested initializer lists are ragged; every row must have shape [2]", shape_error);
}

TEST_CASE("what a tensor knows about itself") {
  tensor<float> x = zeros({2, 3, 4});
  CHECK(x.dim() == 3);
  CHECK(x.numel() == 24);
  CHECK(x.shape(-1) == 4);
  CHECK(std::vector<std::int64_t>(x.strides().begin(), x.strides().end()) == std::vector<std::int64_t>{12, 4, 1});
  CHECK(x.is_contiguous());
  CHECK(tensor<double>::dtype() == dtype::float64);
  CHECK(tensor<std::int32_t>::dtype_name() == "int32");
  CHECK(tensor<std::int64_t>::dtype_name() == "int64");
  CHECK(tensor<float>::dtype_name() == "float32");
  tensor<float> scalar0 = full<float>({}, 4.5);
  CHECK(scalar0.dim() == 0);
  CHECK(scalar0.numel() == 1);
  CHECK(scalar0.item() == 4.5f);
  CHECK_THROWS_WITH_AS(x.item(), "tandem::item: a tensor of shape [2, 3, 4] has 24 elements, not one", value_error);
  CHECK_THROWS_WITH_AS(x.shape(3), "tandem::shape: axis 3 is out of range [-3, 3) for a tensor of shape [2, 3, 4]", index_error);
}

TEST_CASE("at() checks every index and accepts negative ones") {
  tensor<std::int32_t> x = arange<std::int32_t>(12).reshape({3, 4});
  CHECK(x.at(-1, -1) == 11);
  x.at(0, 1) = 100;
  CHECK(x.to_vector()[1] == 100);
  CHECK_THROWS_WITH_AS(x.at(3, 0), "tandem::at: index 3 is out of range for axis 0 of a tensor of shape [3, 4]", index_error);
  CHECK_THROWS_WITH_AS(x.at(1), "tandem::at: 1 indices for a tensor of shape [3, 4]", index_error);
}

TEST_CASE("reshape and view share storage; -1 is inferred") {
  tensor<float> x = arange<float>(24);
  tensor<float> y = x.reshape({2, -1, 4});
  CHECK(y.shape() == shape{2, 3, 4});
  CHECK(y.storage() == x.storage());
  y.at(1, 2, 3) = -1;
  CHECK(x.at(23) == -1);
  CHECK(x.view({4, 6}).shape() == shape{4, 6});
  CHECK(x.flatten().shape() == shape{24});
  tensor<float> t = y.transpose(0, 2);
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.reshape({-1}).storage() != x.storage());
  CHECK_THROWS_WITH_AS(t.view({24}),
                       "tandem::view: a tensor of shape [4, 3, 2] with non-contiguous strides cannot be viewed as [24]; use reshape",
                       shape_error);
  CHECK_THROWS_WITH_AS(x.reshape({5, -1}),
                       "tandem::reshape: a tensor of shape [24] (24 elements) cannot take shape [5, -1]", shape_error);
  CHECK_THROWS_WITH_AS(x.reshape({-1, -1}), "tandem::reshape: invalid target shape [-1, -1]", shape_error);
}

TEST_CASE("permute and transpose reorder axes without copying") {
  tensor<std::int64_t> x = arange(24).reshape({2, 3, 4});
  tensor<std::int64_t> p = x.permute({2, 0, 1});
  CHECK(p.shape() == shape{4, 2, 3});
  CHECK(p.at(3, 1, 2) == x.at(1, 2, 3));
  CHECK(p.storage() == x.storage());
  CHECK(x.transpose(-1, 0).at(3, 2, 1) == x.at(1, 2, 3));
  CHECK_THROWS_WITH_AS(x.permute({0, 0, 1}), "tandem::permute: order [0, 0, 1] repeats axis 0", shape_error);
  CHECK_THROWS_WITH_AS(x.permute({0, 1}), "tandem::permute: order [0, 1] does not match a tensor of shape [2, 3, 4]",
                       shape_error);
}

TEST_CASE("slices follow Python: steps, negative bounds, reversal") {
  tensor<std::int64_t> x = arange(10);
  CHECK(x.slice(0, 2, 8, 3).to_vector() == std::vector<std::int64_t>{2, 5});
  CHECK(x.slice(0, -3, {}).to_vector() == std::vector<std::int64_t>{7, 8, 9});
  CHECK(x.slice(0, {}, {}, -1).to_vector() == std::vector<std::int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(x.slice(0, 8, 2, -2).to_vector() == std::vector<std::int64_t>{8, 6, 4});
  CHECK(x.slice(0, 5, 100).numel() == 5);
  CHECK(x.slice(0, 7, 3).numel() == 0);
  tensor<std::int64_t> m = arange(12).reshape({3, 4});
  tensor<std::int64_t> col = m.slice(1, 1, 2);
  col.fill(0);
  CHECK(m.to_vector() == std::vector<std::int64_t>{0, 0, 2, 3, 4, 0, 6, 7, 8, 0, 10, 11});
  CHECK(m[1].to_vector() == std::vector<std::int64_t>{4, 0, 6, 7});
  CHECK(m.select(1, -1).to_vector() == std::vector<std::int64_t>{3, 7, 11});
  CHECK_THROWS_WITH_AS(x.slice(0, 0, 5, 0), "tandem::slice: step must not be zero", value_error);
  CHECK_THROWS_WITH_AS(m.select(0, 3), "tandem::select: index 3 is out of range for axis 0 of a tensor of shape [3, 4]", index_error);
}

TEST_CASE("expand, squeeze and unsqueeze") {
  tensor<float> x{{1}, {2}};
  tensor<float> e = x.expand({3, 2, 4});
  CHECK(e.shape() == shape{3, 2, 4});
  CHECK(e.strides()[0] == 0);
  CHECK(e.at(2, 1, 3) == 2);
  CHECK(broadcast_to(x, {2, 2}).to_vector() == std::vector<float>{1, 1, 2, 2});
  CHECK_THROWS_WITH_AS(x.expand({3, 3}), "tandem::expand: a tensor of shape [2, 1] cannot be expanded to [3, 3]",
                       shape_error);
  tensor<float> z = zeros({1, 3, 1});
  CHECK(z.squeeze().shape() == shape{3});
  CHECK(z.squeeze(0).shape() == shape{3, 1});
  CHECK(z.squeeze(1).shape() == shape{1, 3, 1});
  CHECK(z.unsqueeze(-1).shape() == shape{1, 3, 1, 1});
  CHECK(z.unsqueeze(1).shape() == shape{1, 1, 3, 1});
}

TEST_CASE("clone, contiguous and astype copy; assign writes through views") {
  tensor<float> x{{1.5, 2.5}, {3.5, -4.5}};
  tensor<float> c = x.clone();
  c.at(0, 0) = 9;
  CHECK(x.at(0, 0) == 1.5f);
  CHECK(x.contiguous().storage() == x.storage());
  tensor<float> t = x.transpose(0, 1).contiguous();
  CHECK(t.is_contiguous());
  CHECK(t.to_vector() == std::vector<float>{1.5, 3.5, 2.5, -4.5});
  CHECK(x.astype<std::int32_t>().to_vector() == std::vector<std::int32_t>{1, 2, 3, -4});
  CHECK(x.astype<bool>().to_vector() == std::vector<bool>{true, true, true, true});
  tensor<float> grid = zeros({3, 3});
  grid.slice(0, 1, {}).slice(1, 1, {}).assign(tensor<std::int32_t>{7, 8});
  CHECK(grid.to_vector() == std::vector<float>{0, 0, 0, 0, 7, 8, 0, 7, 8});
  tensor<float> square = arange<float>(4).reshape({2, 2});
  square.assign(square.transpose(0, 1));
  CHECK(square.to_vector() == std::vector<float>{0, 2, 1, 3});
}

TEST_CASE("an empty tensor is valid everywhere") {
  tensor<float> none;
  CHECK(none.numel() == 0);
  CHECK((none + 1).numel() == 0);
  tensor<float> empty_rows = zeros({0, 5});
  CHECK(empty_rows.transpose(0, 1).contiguous().shape() == shape{5, 0});
  CHECK(empty_rows.to_vector().empty());
}

TEST_CASE("a shape whose extents multiply past int64 is refused, even with no elements") {
  const std::int64_t big = std::int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(tensor<float>(shape{0, big, big}),
                       "tandem: a tensor of shape [0, 1099511627776, 1099511627776] would have more elements than a "
                       "64-bit index can count",
                       shape_error);
  CHECK_THROWS_AS(tensor<float>(shape{big, big, 0}), shape_error);
  // 2^61 doubles are 2^64 bytes: a size that would wrap to zero.
  CHECK_THROWS_AS(tensor<double>(shape{std::int64_t{1} << 31, std::int64_t{1} << 30}), shape_error);
  CHECK(tensor<float>(shape{0, big}).numel() == 0);
}
