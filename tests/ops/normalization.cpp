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

TEST_CASE_TEMPLATE("layer_norm and rms_norm equal double loops over their last axes", T, float, double) {
  for (std::int64_t inner : {1, 7, 17, 33}) {
    tensor<double> x = test::random_tensor<double>({3, 2, inner}, -3, 3, static_cast<std::uint64_t>(inner));
    tensor<double> w = test::random_tensor<double>({2, inner}, 0.5, 1.5, 7), b = test::random_tensor<double>({2, inner}, -1, 1, 8);
    std::vector<double> layer, last, rms;
    const std::int64_t group = 2 * inner;
    for (std::int64_t r = 0; r < 3; ++r) {
      double mean = 0, var = 0, squares = 0, last_mean = 0;
      for (std::int64_t e = 0; e < group; ++e) mean += x.at(r, e / inner, e % inner) / group;
      for (std::int64_t e = 0; e < group; ++e) {
        const double v = x.at(r, e / inner, e % inner);
        var += (v - mean) * (v - mean) / group;
        squares += v * v / group;
      }
      for (std::int64_t e = 0; e < group; ++e) {
        const double v = x.at(r, e / inner, e % inner);
        layer.push_back((v - mean) / std::sqrt(var + 1e-5) * w.at(e / inner, e % inner) + b.at(e / inner, e % inner));
        rms.push_back(v / std::sqrt(squares + 1e-6) * w.at(e / inner, e % inner));
      }
      for (std::int64_t h = 0; h < 2; ++h) {
        double m = 0, s = 0;
        for (std::int64_t e = 0; e < inner; ++e) m += x.at(r, h, e) / inner;
        for (std::int64_t e = 0; e < inner; ++e) s += (x.at(r, h, e) - m) * (x.at(r, h, e) - m) / inner;
        for (std::int64_t e = 0; e < inner; ++e) last.push_back((x.at(r, h, e) - m) / std::sqrt(s + 0.1));
        (void)last_mean;
      }
    }
    const tensor<T> xt = x.astype<T>(), wt = w.astype<T>(), bt = b.astype<T>();
    test::check_values(layer_norm(xt, {2, inner}, wt, bt), {3, 2, inner}, layer, "layer_norm", 1e-5, 1e-5);
    test::check_values(layer_norm(xt.transpose(0, 1).contiguous().transpose(0, 1), {inner}, 0.1), {3, 2, inner}, last,
                       "layer_norm over the last axis, strided", 1e-5, 1e-5);
    test::check_values(rms_norm(xt, {2, inner}, wt), {3, 2, inner}, rms, "rms_norm", 1e-5, 1e-5);
  }
}

TEST_CASE("layer_norm and rms_norm: gradients, and the shapes they refuse") {
  tensor<double> x = test::random_tensor<double>({3, 5}, -2, 2, 9), w = test::random_tensor<double>({5}, 0.5, 1.5, 10);
  tensor<double> b = test::random_tensor<double>({5}, -1, 1, 11);
  test::check_gradients([](const auto& a) { return layer_norm(a[0], {5}, a[1], a[2]); }, {x, w, b}, "layer_norm");
  test::check_gradients([](const auto& a) { return rms_norm(a[0], {5}, a[1]); }, {x, w}, "rms_norm");
  CHECK_THROWS_WITH_AS(layer_norm(x, {4}), doctest::Contains("layer_norm"), shape_error);
  CHECK_THROWS_AS(rms_norm(x, {}, w), value_error);
}
