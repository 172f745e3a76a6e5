// concat, stack, split, index_select, gather, one_hot: values, views and errors.

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("concat and stack") {
  tensor<float> a{{1, 2}}, b{{3, 4}, {5, 6}};
  CHECK(concat<float>({a, b}).to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(concat<float>({b, b.slice(1, 1, {})}, 1).shape() == shape{2, 3});
  CHECK(concat<float>({b.transpose(0, 1), b}, -1).to_vector() == std::vector<float>{3, 5, 3, 4, 4, 6, 5, 6});
  CHECK(stack<float>({a[0], a[0], b[1]}).shape() == shape{3, 2});
  CHECK(stack<float>({a[0], b[1]}, 1).to_vector() == std::vector<float>{1, 5, 2, 6});
  CHECK_THROWS_WITH_AS(concat<float>({a, zeros({2, 3})}),
                       "tandem::concat: shapes [1, 2], [2, 3] differ outside axis 0", shape_error);
  CHECK_THROWS_WITH_AS(stack<float>({a, b}), "tandem::stack: shapes [1, 2], [2, 2] are not all equal", shape_error);
  CHECK_THROWS_AS(concat<float>({}), value_error);
}

TEST_CASE("split returns views") {
  tensor<std::int64_t> x = arange(10);
  auto pieces = split(x, 4);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].to_vector() == std::vector<std::int64_t>{8, 9});
  pieces[0].fill(-1);
  CHECK(x.at(3) == -1);
  auto sized = split(x.reshape({2, 5}), {1, 4}, 1);
  CHECK(sized[1].shape() == shape{2, 4});
  CHECK_THROWS_WITH_AS(split(x, {3, 3}),
                       "tandem::split: sizes [3, 3] do not add up to extent 10 of axis 0 of shape [10]", shape_error);
  CHECK_THROWS_AS(split(x, 0), value_error);
}

TEST_CASE("index_select and gather") {
  tensor<float> x = arange<float>(12).reshape({3, 4});
  CHECK(index_select(x, 0, tensor<std::int64_t>{2, 0, 2}).to_vector() ==
        std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  CHECK(index_select(x.transpose(0, 1), 1, tensor<std::int32_t>{-1}).to_vector() == std::vector<float>{8, 9, 10, 11});
  CHECK_THROWS_WITH_AS(index_select(x, 1, tensor<std::int64_t>{4}),
                       "tandem::index_select: index 4 is out of range for axis 1 of a tensor of shape [3, 4]", index_error);
  CHECK_THROWS_AS(index_select(x, 0, tensor<std::int64_t>{{0}}), shape_error);
  tensor<std::int64_t> idx{{3, 0}, {1, 1}, {2, 3}};
  CHECK(gather(x, 1, idx).to_vector() == std::vector<float>{3, 0, 5, 5, 10, 11});
  CHECK(gather(x, 0, tensor<std::int64_t>{{2, 1, 0, 0}}).to_vector() == std::vector<float>{8, 5, 2, 3});
  CHECK_THROWS_WITH_AS(gather(x, 1, tensor<std::int64_t>{{5}}),
                       "tandem::gather: index 5 is out of range for axis 1 of a tensor of shape [3, 4]", index_error);
  CHECK_THROWS_WITH_AS(gather(x, 1, tensor<std::int64_t>{1}),
                       "tandem::gather: index of shape [1] does not fit a tensor of shape [3, 4] along axis 1",
                       shape_error);
}

TEST_CASE("one_hot") {
  auto hot = one_hot(tensor<std::int64_t>{2, 0}, 3);
  CHECK(hot.shape() == shape{2, 3});
  CHECK(hot.to_vector() == std::vector<std::int64_t>{0, 0, 1, 1, 0, 0});
  CHECK(one_hot<float>(tensor<std::int32_t>{{1}}, 2).to_vector() == std::vector<float>{0, 1});
  CHECK_THROWS_WITH_AS(one_hot(tensor<std::int64_t>{3}, 3), "tandem::one_hot: index 3 is outside [0, 3)", index_error);
}
