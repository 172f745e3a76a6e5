// Custom derivatives (MindSpore's bprop registration): a user-defined op with
// its own rule, and the rule of an existing op replaced. The replacement is
// a specialization, so it lives in its own translation unit.

#include "support/gradcheck.hpp"

using namespace tandem;

// A new elementwise op, defined the way tandem's own are.
struct cube_op : detail::same_type_rule {
  static constexpr const char* name = "cube";
  template <class V>
  V operator()(const V& x) const {
    return x * x * x;
  }
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X& x) const {
    return g * square(x) * 3;
  }
};

// A straight-through estimator: rounds forward, passes the gradient unchanged.
struct round_through_op : detail::same_type_rule {
  static constexpr const char* name = "round_through";
  static constexpr bool vectorizable = false;
  static constexpr bool saves_inputs = false;
  template <class V>
  V operator()(const V& x) const {
    return std::round(x);
  }
  template <std::size_t I, class G, class Y, class X>
  auto derivative(const G& g, const Y&, const X&) const {
    return g;
  }
};

struct no_rule_op : detail::same_type_rule {
  static constexpr const char* name = "no_rule";
  template <class V>
  V operator()(const V& x) const {
    return x;
  }
};

// relu with a "leaky" backward: 0.1 where the input is negative.
template <>
struct tandem::derivative<tandem::relu_op> {
  template <std::size_t I, class G, class Y, class X>
  static auto gradient(const relu_op&, const G& g, const Y&, const X& x) {
    return where(x > 0, g, g * 0.1);
  }
};

TEST_CASE("a new differentiable op") {
  tensor<double> x = test::away_from_zero({6}, 1);
  test::check_gradients([](const std::vector<tensor<double>>& v) { return elementwise(cube_op{}, v[0]); }, {x}, "cube");
  CHECK(grad([](const tensor<double>& t) { return sum(elementwise(cube_op{}, t)); })(tensor<double>{2}).item() == 12);
  auto through = grad([](const tensor<double>& t) { return sum(elementwise(round_through_op{}, t) * t); });
  CHECK(through(tensor<double>{1.4, 2.6}).to_vector() == std::vector<double>{1 + 1.4, 3 + 2.6});
}

TEST_CASE("an op without a rule works until a gradient is needed") {
  tensor<float> x{1, 2};
  CHECK(elementwise(no_rule_op{}, x).to_vector() == std::vector<float>{1, 2});
  x.set_requires_grad();
  CHECK_THROWS_WITH_AS(elementwise(no_rule_op{}, x),
                       "tandem::no_rule: this op has no derivative rule, but an input requires a gradient; give the op "
                       "a derivative<I>(g, y, x...) member or specialize tandem::derivative",
                       error);
}

TEST_CASE("an existing op's rule replaced") {
  tensor<double> x{-2, 3};
  auto g = grad([](const tensor<double>& t) { return sum(relu(t)); })(x);
  CHECK(g.to_vector() == std::vector<double>{0.1, 1});
  CHECK(relu(x).to_vector() == std::vector<double>{0, 3});
}
