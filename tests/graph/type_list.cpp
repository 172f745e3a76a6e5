#include <doctest/doctest.h>

#include <type_traits>

#include "tandem/tandem.hpp"

using namespace tandem;

namespace {
using three = detail::seen_list<int, float, double>;

static_assert(detail::list_size_v<three> == 3);
static_assert(detail::list_size_v<detail::seen_list<>> == 0);
static_assert(detail::list_contains<three, float> && !detail::list_contains<three, char>);
static_assert(detail::position_in<three, int> == 0 && detail::position_in<three, double> == 2);
static_assert(std::is_same_v<detail::type_at<three, 1>, float>);
static_assert(std::is_same_v<detail::type_at_or_void<three, 2>::type, double>);
static_assert(std::is_void_v<detail::type_at_or_void<three, 3>::type>);

constexpr int positions_visited = [] {
  int visited = 0;
  detail::for_each_type<three>([&]<class T>(std::type_identity<T>) { visited = visited * 10 + int{sizeof(T)}; });
  return visited;
}();
static_assert(positions_visited == 448);

// A group's layout: x * 2 + y * x, with x * 2 read once. Its classes are
// the two products and the sum (the root last); x and y are pure leaves
// (x once, though read twice), 2 is the one scalar.
auto traced() {
  auto f = [](const auto& x, const auto& y) { return x * 2.0f + y * x; };
  return jit(f).trace(tensor<float>{1}, tensor<float>{1});
}
using root = decltype(traced());
using sum_class = std::tuple_element_t<0, detail::children_of<root>>;
using layout = detail::group_layout<root, sum_class>;
static_assert(layout::n_classes == 3 && std::is_same_v<layout::class_at<2>, sum_class>);
static_assert(layout::n_pure == 2 && layout::n_constants == 1 && layout::n_tensors == 0);
static_assert(std::is_same_v<layout::pure_leaf<0>, detail::input_node<0, float>>);
static_assert(std::is_same_v<layout::pure_leaf<1>, detail::input_node<1, float>>);
static_assert(layout::table.kind[layout::slot_of<2, 0>] == detail::leaf_kind::fused);
static_assert(layout::table.kind[layout::slot_of<0, 1>] == detail::leaf_kind::constant);
static_assert(detail::edge_count_v<root, detail::input_node<0, float>> == 2);
}  // namespace

TEST_CASE("type lists answer position, type and membership; a group's layout places every slot") {
  CHECK(detail::position_in<three, float> == 1);
  CHECK(layout::n_operands == 2);
}
