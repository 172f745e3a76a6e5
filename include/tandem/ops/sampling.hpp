#pragma once
// Picking among values: topk (the k largest or smallest along an axis, with
// their indices; the values' gradient flows back to where they were taken)
// and multinomial (indices drawn with the given weights from a seeded
// generator, reproducible on every machine as the other draws are).
// argmax and argmin are reductions (ops/reduce.hpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "tandem/core/random.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem {
namespace detail {

// The indices of the k largest (or smallest) of each row along the axis, in
// that order; ties go to the lower index, NaN counts as the largest.
template <class T>
tensor<std::int64_t> topk_indices(const tensor<T>& x, std::int64_t k, std::int64_t axis, bool largest) {
  axis = normalize_axis(axis, x.shape(), "topk");
  const std::int64_t extent = x.shape(axis);
  if (k < 0 || k > extent)
    throw value_error("tandem::topk: k = " + std::to_string(k) + " is outside [0, " + std::to_string(extent) +
                      "] for axis " + std::to_string(axis) + " of shape " + to_string(x.shape()));
  const tensor<T> rows = x.detach().to(device::cpu).transpose(axis, -1).contiguous();
  shape out_shape = rows.shape();
  out_shape.back() = k;
  tensor<std::int64_t> picked(out_shape);
  const std::int64_t count = extent ? rows.numel() / extent : 0;
  std::vector<std::int64_t> order(static_cast<std::size_t>(extent));
  for (std::int64_t r = 0; r < count; ++r) {
    const T* row = rows.data() + r * extent;
    std::iota(order.begin(), order.end(), std::int64_t{0});
    auto before = [&](std::int64_t a, std::int64_t b) {
      const T x = row[a], y = row[b];
      const bool x_nan = x != x, y_nan = y != y;
      if (x_nan || y_nan) return x_nan && !y_nan ? largest : (!x_nan && y_nan ? !largest : a < b);
      if (x != y) return largest ? x > y : x < y;
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    std::copy_n(order.begin(), k, picked.data() + r * k);
  }
  return picked.transpose(axis, -1).contiguous().to(x.device());
}

struct top_indices {
  std::int64_t k, axis;
  bool largest;
  template <class T>
  tensor<std::int64_t> operator()(const tensor<T>& x) const {
    return topk_indices(x, k, axis, largest);
  }
  shape result_shape(shape in) const {
    in[normalize_axis(axis, in, "topk")] = k;
    return in;
  }
};

// Row r's weights, checked.
template <class T>
double weights_total(const T* w, std::int64_t n) {
  double total = 0;
  for (std::int64_t c = 0; c < n; ++c) {
    const double v = static_cast<double>(w[c]);
    if (!(v >= 0) || std::isinf(v))
      throw value_error("tandem::multinomial: weights must be finite and non-negative, got " + std::to_string(v));
    total += v;
  }
  if (!(total > 0)) throw value_error("tandem::multinomial: a row of weights sums to zero");
  return total;
}

template <class T>
tensor<std::int64_t> draw_multinomial(const tensor<T>& weights, std::int64_t samples, generator& gen,
                                      bool replacement) {
  if (weights.dim() != 1 && weights.dim() != 2)
    throw shape_error("tandem::multinomial: the weights must be [C] or [N, C], got " + to_string(weights.shape()));
  const tensor<T> w = weights.detach().to(device::cpu).contiguous();
  const std::int64_t classes = w.shape(-1), rows = w.dim() == 2 ? w.shape(0) : 1;
  if (samples < 0 || (!replacement && samples > classes))
    throw value_error("tandem::multinomial: cannot draw " + std::to_string(samples) + " of " +
                      std::to_string(classes) + " classes" + (replacement ? "" : " without replacement"));
  shape out_shape{samples};
  if (w.dim() == 2) out_shape = {rows, samples};
  tensor<std::int64_t> out(out_shape);
  const std::uint64_t first = gen.take(static_cast<std::uint64_t>(rows * samples));
  std::vector<double> left(static_cast<std::size_t>(classes));
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* row = w.data() + r * classes;
    double total = weights_total(row, classes);
    for (std::int64_t c = 0; c < classes; ++c) left[c] = static_cast<double>(row[c]);
    for (std::int64_t s = 0; s < samples; ++s) {
      const random_words bits = philox(gen.seed(), first + static_cast<std::uint64_t>(r * samples + s));
      if (!(total > 0))
        throw value_error("tandem::multinomial: fewer than " + std::to_string(samples) +
                          " classes have weight, so as many cannot be drawn without replacement");
      const double target = unit_double(bits.word[0], bits.word[1]) * total;
      double running = 0;
      std::int64_t pick = -1;
      for (std::int64_t c = 0; c < classes; ++c) {
        if (left[c] <= 0) continue;
        pick = c;
        running += left[c];
        if (target < running) break;
      }
      out.data()[r * samples + s] = pick;
      if (!replacement) {
        total -= left[pick];
        left[pick] = 0;
      }
    }
  }
  return out.to(weights.device());
}

struct multinomial_draw {
  std::int64_t samples;
  generator* gen;
  bool replacement;
  template <class T>
  tensor<std::int64_t> operator()(const tensor<T>& weights) const {
    return draw_multinomial(weights, samples, *gen, replacement);
  }
  shape result_shape(const shape& in) const { return in.size() == 2 ? shape{in[0], samples} : shape{samples}; }
};

}  // namespace detail

// The k largest values along the axis (the smallest with largest = false),
// in order, and their indices. The values are a gather from x, so their
// gradient flows back to the positions they came from.
template <element T>
std::pair<tensor<T>, tensor<std::int64_t>> topk(const tensor<T>& x, std::int64_t k, std::int64_t axis = -1,
                                                bool largest = true) {
  tensor<std::int64_t> indices = detail::topk_indices(x, k, axis, largest);
  return {gather(x, axis, indices), indices};
}

// `samples` class indices per row of weights ([C] or [N, C], non-negative,
// not necessarily normalized), drawn from gen; without replacement, a
// class is drawn at most once.
template <element T>
tensor<std::int64_t> multinomial(const tensor<T>& weights, std::int64_t samples, generator& gen,
                                 bool replacement = false) {
  return detail::draw_multinomial(weights, samples, gen, replacement);
}

}  // namespace tandem
