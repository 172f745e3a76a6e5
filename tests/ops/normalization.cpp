// batch_variance against a double reference loop on [N, C] and
// [N, C, H, W] shapes whose planes hit SIMD tails, on non-contiguous views;
// its gradient by finite differences, and its second derivative against the
// composite var's; the same bits on any thread count;
// bad shapes. The same for batch_normalize, with its second derivative
// against the composite of mean, variance and broadcasts.
#include <doctest/doctest.h>

#include <string>

#include "support/check.hpp"
#include "support/gradcheck.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

// Per channel (axis 1): the mean and the biased variance, in double.
std::pair<std::vector<double>, std::vector<double>> moments_reference(const tensor<double>& x) {
  std::int64_t channels = x.shape(1);
  std::vector<double> sum(static_cast<std::size_t>(channels)), squares(sum.size());
  std::vector<double> values = test::values_of(x);
  std::int64_t inner = x.numel() / (x.shape(0) * channels);
  for (std::size_t e = 0; e < values.size(); ++e) sum[(e / inner) % channels] += values[e];
  double count = static_cast<double>(x.numel() / channels);
  for (auto& s : sum) s /= count;
  for (std::size_t e = 0; e < values.size(); ++e) {
    double d = values[e] - sum[(e / inner) % channels];
    squares[(e / inner) % channels] += d * d;
  }
  for (auto& s : squares) s /= count;
  return {sum, squares};
}

shape statistics_shape(const shape& s) {
  shape out{1, s[1]};
  if (s.size() == 4) {
    out.push_back(1);
    out.push_back(1);
  }
  return out;
}

}  // namespace

TEST_CASE("batch_variance equals a double loop on every layout, with its mean") {
  std::uint64_t seed = 1;
  for (shape s : {shape{1, 1}, shape{7, 3}, shape{17, 5}, shape{1, 1, 1, 1}, shape{3, 4, 7, 9}, shape{2, 3, 33, 31}}) {
    tensor<double> base = test::random_tensor<double>(s, -2, 3, seed++);
    for (const auto& [layout_name, x] : test::layouts(base)) {
      // A named reference: clang 14 cannot capture a structured binding (INFO does).
      const std::string& layout = layout_name;
      INFO(layout << " " << to_string(s));
      auto [mean_want, var_want] = moments_reference(x);
      tensor<double> mean_got;
      test::check_values(batch_variance(x, &mean_got), statistics_shape(s), var_want, "variance", 1e-12, 1e-12);
      test::check_values(mean_got, statistics_shape(s), mean_want, "mean", 1e-12, 1e-12);
      tensor<float> xf = x.astype<float>();
      test::check_values(batch_variance(xf), statistics_shape(s), var_want, "float32", 1e-5, 1e-5);
    }
  }
}

TEST_CASE("batch_variance passes finite-difference gradient checks") {
  for (shape s : {shape{6, 3}, shape{2, 3, 5, 4}}) {
    tensor<double> x = test::random_tensor<double>(s, -1, 1, 9);
    test::check_gradients([](const auto& v) { return batch_variance(v[0]); }, {x}, to_string(s));
    test::check_gradients([](const auto& v) { return square(batch_variance(v[0])); }, {x}, "squared " + to_string(s));
  }
}

TEST_CASE("batch_variance's second derivative equals the composite var's") {
  tensor<double> x = test::random_tensor<double>({3, 2, 4, 5}, -1, 1, 12);
  auto first = grad([](auto a) { return sum(square(batch_variance(a))); });
  auto first_composite = grad([](auto a) { return sum(square(var(a, {0, 2, 3}, true, 0))); });
  tensor<double> second = grad([&](auto a) { return sum(square(first(a))); })(x);
  tensor<double> second_composite = grad([&](auto a) { return sum(square(first_composite(a))); })(x);
  test::check_values(first(x), first_composite(x), "first", 1e-12, 1e-12);
  test::check_values(second, second_composite, "second", 1e-10, 1e-12);
}

TEST_CASE("batch_variance gives the same bits for any thread count") {
  generator gen(4);
  tensor<float> x = normal({64, 16, 28, 28}, 0.5, 2, gen);
  set_num_threads(1);
  auto one = batch_variance(x).to_vector();
  set_num_threads(3);
  auto three = batch_variance(x).to_vector();
  set_num_threads(0);
  CHECK(one == three);
}

TEST_CASE("batch_variance names its shape mistakes") {
  CHECK_THROWS_WITH_AS(batch_variance(zeros<double>({2, 3, 4})),
                       "tandem::batch_variance: expected a non-empty [N, C] or [N, C, H, W], got [2, 3, 4]", shape_error);
  CHECK_THROWS_AS(batch_variance(zeros<double>({0, 3})), shape_error);
}

namespace {

// (x - mean) / sqrt(var + eps) * weight + bias per channel, in double.
std::vector<double> normalize_reference(const tensor<double>& x, const tensor<double>& weight,
                                        const tensor<double>& bias, double eps) {
  auto [mean, variance] = moments_reference(x);
  std::vector<double> values = test::values_of(x), out;
  std::int64_t inner = x.numel() / (x.shape(0) * x.shape(1));
  for (std::size_t e = 0; e < values.size(); ++e) {
    std::size_t k = (e / static_cast<std::size_t>(inner)) % static_cast<std::size_t>(x.shape(1));
    out.push_back((values[e] - mean[k]) / std::sqrt(variance[k] + eps) * weight.data()[k] + bias.data()[k]);
  }
  return out;
}

}  // namespace

TEST_CASE("batch_normalize equals a double loop on every layout, with its statistics") {
  std::uint64_t seed = 40;
  for (shape s : {shape{1, 1}, shape{7, 3}, shape{17, 5}, shape{2, 1, 1, 1}, shape{3, 4, 7, 9}, shape{2, 3, 33, 31}}) {
    tensor<double> base = test::random_tensor<double>(s, -2, 3, seed++);
    tensor<double> weight = test::random_tensor<double>({s[1]}, 0.5, 2, seed++);
    tensor<double> bias = test::random_tensor<double>({s[1]}, -1, 1, seed++);
    for (const auto& [layout_name, x] : test::layouts(base)) {
      const std::string& layout = layout_name;
      INFO(layout << " " << to_string(s));
      auto [mean_want, var_want] = moments_reference(x);
      std::vector<double> want = normalize_reference(x, weight, bias, 1e-5);
      tensor<double> mean_got, var_got;
      test::check_values(batch_normalize(x, weight, bias, 1e-5, &mean_got, &var_got), s, want, "double", 1e-11, 1e-11);
      test::check_values(mean_got, {s[1]}, mean_want, "mean", 1e-12, 1e-12);
      test::check_values(var_got, {s[1]}, var_want, "variance", 1e-12, 1e-12);
      test::check_values(batch_normalize(x.astype<float>(), weight.astype<float>(), bias.astype<float>(), 1e-5), s,
                         want, "float32", 2e-4, 2e-4);
    }
  }
}

TEST_CASE("batch_normalize passes finite-difference gradient checks, eagerly and in a static graph") {
  auto graph = jit([](auto x, auto w, auto b) { return square(batch_normalize(x * x, w, b, 1e-3)); });
  for (shape s : {shape{6, 3}, shape{2, 3, 5, 4}, shape{3, 2, 1, 17}}) {
    INFO(to_string(s));
    tensor<double> x = test::random_tensor<double>(s, -1, 1, 13);
    tensor<double> w = test::random_tensor<double>({s[1]}, 0.5, 2, 14);
    tensor<double> b = test::random_tensor<double>({s[1]}, -1, 1, 15);
    test::check_gradients([](const auto& v) { return square(batch_normalize(v[0] * v[0], v[1], v[2], 1e-3)); },
                          {x, w, b}, "eager");
    test::check_gradients([&](const auto& v) { return graph(v[0], v[1], v[2]); }, {x, w, b}, "static");
    // Only some inputs wanting a gradient: the others' are not computed.
    test::check_gradients([&](const auto& v) { return square(batch_normalize(x, v[0], v[1], 1e-3)); }, {w, b},
                          "weight and bias only");
    test::check_gradients([&](const auto& v) { return square(batch_normalize(v[0], w, b, 1e-3)); }, {x}, "x only");
  }
}

TEST_CASE("batch_normalize's second derivative equals the composite's") {
  tensor<double> x = test::random_tensor<double>({3, 2, 4, 5}, -1, 1, 16);
  tensor<double> w = test::random_tensor<double>({2}, 0.5, 2, 17), b = test::random_tensor<double>({2}, -1, 1, 18);
  auto composite = [](const auto& a, const auto& weight, const auto& bias) {
    auto centred = a - mean(a, {0, 2, 3}, true);
    return centred * rsqrt(mean(centred * centred, {0, 2, 3}, true) + 1e-5) * weight.reshape({2, 1, 1}) +
           bias.reshape({2, 1, 1});
  };
  auto first = grad([&](auto a) { return sum(square(batch_normalize(a, w, b, 1e-5)) * a); });
  auto first_composite = grad([&](auto a) { return sum(square(composite(a, w, b)) * a); });
  tensor<double> second = grad([&](auto a) { return sum(square(first(a))); })(x);
  tensor<double> second_composite = grad([&](auto a) { return sum(square(first_composite(a))); })(x);
  test::check_values(first(x), first_composite(x), "first", 1e-10, 1e-12);
  test::check_values(second, second_composite, "second", 1e-9, 1e-11);
}

TEST_CASE("batch_normalize gives the same bits for any thread count") {
  generator gen(5);
  tensor<float> x = normal({64, 16, 28, 28}, 0.5, 2, gen), g = normal({64, 16, 28, 28}, 0, 1, gen);
  tensor<float> w = normal({16}, 1, 0.1, gen), b = normal({16}, 0, 0.1, gen);
  auto run = [&] {
    tensor<float> xs = x.detach(), ws = w.detach(), bs = b.detach();
    for (tensor<float>* t : {&xs, &ws, &bs}) t->set_requires_grad();
    tensor<float> y = batch_normalize(xs, ws, bs, 1e-5);
    y.backward(g);
    std::vector<std::vector<float>> out{y.to_vector(), xs.grad().to_vector(), ws.grad().to_vector(),
                                        bs.grad().to_vector()};
    return out;
  };
  set_num_threads(1);
  auto one = run();
  set_num_threads(3);
  auto three = run();
  set_num_threads(0);
  CHECK(one == three);
}

TEST_CASE("batch_normalize names its shape mistakes") {
  tensor<double> w = ones<double>({3}), b = zeros<double>({3});
  CHECK_THROWS_WITH_AS(batch_normalize(zeros<double>({2, 3, 4}), w, b, 1e-5),
                       "tandem::batch_normalize: expected a non-empty [N, C] or [N, C, H, W] input and a [C] weight "
                       "and bias, got [2, 3, 4], [3] and [3]",
                       shape_error);
  CHECK_THROWS_AS(batch_normalize(zeros<double>({2, 4}), w, b, 1e-5), shape_error);
  CHECK_THROWS_AS(batch_normalize(zeros<double>({0, 3}), w, b, 1e-5), shape_error);
  CHECK_THROWS_AS(batch_normalize(zeros<double>({2, 3}), w, b, 0.0), value_error);
}
