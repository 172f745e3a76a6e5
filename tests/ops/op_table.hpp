#pragma once
// The op table, after PyTorch's OpInfo. Every elementwise op is listed once
// (tests/ops/op_table_*.cpp) with its reference in double, the domain its
// samples come from and the paths it can take; the checks here run an entry
// down each of them:
//
//   values     eager, as a static graph, and inside a fused group between
//              other ops, on every size that hits a SIMD tail, in every
//              layout, against the reference; binary ops also broadcast and
//              take a scalar on either side
//   edges      +-0, +-1, +-inf, nan, the largest and the tiniest values
//   gradients  finite differences in double, eager and through the fused
//              backward; the fused backward in float against eager double
//   second     the second derivative, eager and through a static graph,
//              against finite differences of the first
//
// The reference is evaluated in double on the element values (rounded to the
// element type first), and its result rounded to the result type.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "support/gradcheck.hpp"

namespace tandem::test {

enum op_path : unsigned {
  values = 1,
  edges = 2,
  gradients = 4,
  second_order = 8,
  every_path = values | edges | gradients | second_order,
  // Ops without a derivative: predicates, comparisons, logical ops.
  value_paths = values | edges,
};

struct domain {
  double low, high;
};

struct op_options {
  // Where value samples come from (for a binary op, its first operand).
  domain values{-5, 5};
  // A binary op's second operand; by default the same as the first.
  domain second_values{0, 0};
  // Gradient samples: magnitudes, signed or not (away from kinks at 0).
  domain slope{0.2, 1.5};
  bool signed_slope = true;
  domain second_slope{0, 0};
  bool second_signed_slope = true;
  unsigned paths = every_path;
  // A multiplier on the element type's tolerance, for ops whose SIMD
  // implementation is known to be less accurate.
  double looser = 1;

  domain second_value_domain() const { return second_values.low == second_values.high ? values : second_values; }
  domain second_slope_domain() const { return second_slope.low == second_slope.high ? slope : second_slope; }
  bool second_slope_signed() const { return second_slope.low == second_slope.high ? signed_slope : second_signed_slope; }
};

// The forms an entry is called in, as a type, since a form an op refuses
// must not even be instantiated: also on int32 and int64 besides float and
// double, and (binary ops) with a scalar as the first operand.
template <bool Integers, bool ScalarFirst>
struct entry_forms {
  static constexpr bool integers = Integers;
  static constexpr bool scalar_first = ScalarFirst;
};
using floating_types = entry_forms<false, true>;
inline constexpr entry_forms<true, true> and_integers{};
inline constexpr entry_forms<false, false> tensor_first{};

// One op of the table: its name, the op (a generic callable, so that it runs
// on tensors and on symbolic values), its reference in double, its options.
template <class Fn, class Ref, class Types>
struct op_entry {
  const char* name;
  Fn fn;
  Ref reference;
  op_options options;
  static constexpr bool integers = Types::integers;
  static constexpr bool scalar_first = Types::scalar_first;
};

template <class Fn, class Ref, class Types = floating_types>
op_entry<Fn, Ref, Types> unary(const char* name, Fn fn, Ref reference, op_options options = {}, Types = {}) {
  return {name, fn, reference, options};
}

template <class Fn, class Ref, class Types = floating_types>
op_entry<Fn, Ref, Types> binary(const char* name, Fn fn, Ref reference, op_options options = {}, Types = {}) {
  return {name, fn, reference, options};
}

template <class X>
using value_t = typename X::value_type;

// What the reference gives for `v`, as the result type R would hold it.
template <class R, class Ref, class... V>
double reference_as(const Ref& reference, V... v) {
  double exact = reference(static_cast<double>(v)...);
  if constexpr (std::is_same_v<R, bool>) return exact != 0 ? 1.0 : 0.0;
  else return static_cast<double>(static_cast<R>(exact));
}

template <class T>
double value_tolerance(const op_options& options) {
  return tolerance<T>::rel * 4 * options.looser;
}

// The special values of T: signed zeros, ones, infinities, nan, the largest
// and the tiniest (a subnormal and the least normal) of either sign, and
// the largest x whose exp is finite, less a quarter.
template <class T>
tensor<T> edge_values() {
  using limits = std::numeric_limits<T>;
  std::vector<T> v{T(0),           -T(0),          T(1),           T(-1),           limits::infinity(),
                   -limits::infinity(), limits::quiet_NaN(), limits::max() / 2, -limits::max() / 2, limits::min(),
                   -limits::min(), limits::denorm_min() * 3, T(0.5), std::log(limits::max()) - T(0.25)};
  tensor<T> out(shape{static_cast<std::int64_t>(v.size())});
  std::copy(v.begin(), v.end(), out.data());
  return out;
}

// The op between other ops, so that it runs inside a fused group: on x * 1
// (exact), its result multiplied by x + 1 (a predicate's xor-ed with x > 0.5).
template <class Fn>
auto fused_form(const Fn& fn) {
  return [fn](const auto& x) {
    auto y = fn(x * 1.0);
    if constexpr (std::is_same_v<value_t<decltype(fn(std::declval<tensor<float>>()))>, bool>)
      return logical_xor(y, x > 0.5);
    else
      return y * (x + 1.0);
  };
}

template <class R, class Ref>
double fused_reference(const Ref& reference, double v) {
  if constexpr (std::is_same_v<R, bool>) return (reference(v) != 0) != (v > 0.5) ? 1.0 : 0.0;
  else return reference(v) * (v + 1.0);
}

// Every static form of an entry as one static graph of several outputs, so
// that an entry costs one graph per element type to compile: the op alone,
// then in its fused form. Each check reads the output it is about.
template <class Fn>
auto unary_graph(const Fn& fn) {
  return jit([fn](const auto& x) { return std::tuple{fn(x), fused_form(fn)(x)}; });
}

template <class T, class Entry, class Graph>
void check_unary_values(const Entry& op, const Graph& graph) {
  INFO("element type " << dtype_name(dtype_of<T>));
  const op_options& o = op.options;
  std::vector<shape> shapes;
  for (auto n : tail_sizes) shapes.push_back({n});
  shapes.push_back({17, 33});
  std::uint64_t seed = 1;
  for (const shape& s : shapes) {
    tensor<T> base = random_tensor<T>(s, o.values.low, o.values.high, seed++);
    using R = value_t<decltype(op.fn(base))>;
    using F = value_t<std::tuple_element_t<1, decltype(graph(base))>>;
    std::vector<double> want, want_fused;
    for (double v : values_of(base)) {
      want.push_back(reference_as<R>(op.reference, static_cast<T>(v)));
      want_fused.push_back(fused_reference<F>(op.reference, v));
    }
    for (auto& [layout, x] : layouts(base)) {
      std::string where = layout + " " + to_string(s);
      auto [alone, in_group] = graph(x);
      check_values(op.fn(x), s, want, "eager, " + where, value_tolerance<R>(o), tolerance<R>::abs);
      check_values(alone, s, want, "static, " + where, value_tolerance<R>(o), tolerance<R>::abs);
      check_values(in_group, s, want_fused, "in a fused group, " + where, 2 * value_tolerance<F>(o), tolerance<F>::abs);
    }
  }
}

template <class T, class Entry, class Graph>
void check_unary_edges(const Entry& op, const Graph& graph) {
  INFO("element type " << dtype_name(dtype_of<T>));
  tensor<T> x = edge_values<T>();
  using R = value_t<decltype(op.fn(x))>;
  std::vector<double> want;
  for (double v : values_of(x)) want.push_back(reference_as<R>(op.reference, static_cast<T>(v)));
  check_values(op.fn(x), x.shape(), want, "eager, edge values", value_tolerance<R>(op.options), tolerance<R>::abs);
  check_values(std::get<0>(graph(x)), x.shape(), want, "static, edge values", value_tolerance<R>(op.options),
               tolerance<R>::abs);
}

// Gradients of a function of `at`, output `K` of the static graph, checked
// by finite differences; then, at sizes that hit every SIMD tail, the fused
// backward in float against eager autograd in double.
template <std::size_t K, std::size_t Arity, class Eager, class Graph>
void check_fused_gradients(const Eager& eager, const Graph& graph, const std::vector<tensor<double>>& at,
                           const std::string& where, double looser) {
  using inputs = const std::vector<tensor<double>>&;
  auto call = [](const auto& f, const auto& v) {
    if constexpr (Arity == 1) return f(v[0]);
    else return f(v[0], v[1]);
  };
  auto static_output = [&](const auto& v) {
    if constexpr (Arity == 1) return std::get<K>(graph(v[0]));
    else return std::get<K>(graph(v[0], v[1], 0.5));
  };
  check_gradients([&](inputs v) { return call(eager, v); }, at, "eager " + where);
  check_gradients([&](inputs v) { return static_output(v); }, at, "fused backward " + where);

  std::vector<tensor<double>> wide;
  std::vector<tensor<float>> narrow;
  for (const auto& x : at) {
    tensor<double> w = x.detach();
    w.set_requires_grad(true);
    wide.push_back(w);
    tensor<float> n = x.astype<float>();
    n.set_requires_grad(true);
    narrow.push_back(n);
  }
  tensor<double> want = call(eager, wide);
  generator gen(17);
  tensor<double> sensitivity = uniform<double>(want.shape(), -1, 1, gen);
  sum(want * sensitivity).backward();
  sum(static_output(narrow) * sensitivity.astype<float>()).backward();
  for (std::size_t k = 0; k < at.size(); ++k) {
    // An operand broadcast to the output sums that many terms.
    double terms = static_cast<double>(std::max<std::int64_t>(1, want.numel() / std::max<std::int64_t>(1, at[k].numel())));
    check_values(narrow[k].grad(), wide[k].grad().shape(), values_of(wide[k].grad()),
                 "float fused backward against eager double, operand " + std::to_string(k) + ", " + where,
                 16 * tolerance<float>::rel * looser * terms, 4 * tolerance<float>::abs * terms);
  }
}

template <class Entry, class Graph>
void check_unary_gradients(const Entry& op, const Graph& graph) {
  const op_options& o = op.options;
  std::uint64_t seed = 70;
  for (shape s : {shape{}, shape{7}, shape{3, 5}}) {
    tensor<double> x = away_from_zero(s, seed++, o.slope.low, o.slope.high, o.signed_slope);
    check_gradients([&](const std::vector<tensor<double>>& v) { return op.fn(v[0]); }, {x}, "eager " + to_string(s));
  }
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{17}, std::int64_t{1000003}}) {
    tensor<double> x = away_from_zero({n}, seed++, o.slope.low, o.slope.high, o.signed_slope);
    if (n > 17) {
      // Finite differences over a million elements would take minutes.
      tensor<double> w = x.detach();
      w.set_requires_grad(true);
      tensor<float> f = x.astype<float>();
      f.set_requires_grad(true);
      sum(fused_form(op.fn)(w)).backward();
      sum(std::get<1>(graph(f))).backward();
      check_values(f.grad(), w.grad().shape(), values_of(w.grad()), "float fused backward against eager double, [1000003]",
                   16 * tolerance<float>::rel * o.looser, 4 * tolerance<float>::abs);
    } else {
      check_fused_gradients<1, 1>(fused_form(op.fn), graph, {x}, "[" + std::to_string(n) + "]", o.looser);
    }
  }
}

// The second derivative by finite differences of the first, eager and
// through the static graph (whose recorded backward replays the call).
template <class Entry, class Graph>
void check_unary_second_order(const Entry& op, const Graph& graph) {
  const op_options& o = op.options;
  auto eager = fused_form(op.fn);
  tensor<double> x = away_from_zero({7}, 90, o.slope.low, o.slope.high, o.signed_slope);
  using inputs = const std::vector<tensor<double>>&;
  check_gradients([&](inputs v) { return grad([&](const tensor<double>& u) { return sum(eager(u)); })(v[0]); }, {x},
                  "eager second derivative");
  check_gradients(
      [&](inputs v) { return grad([&](const tensor<double>& u) { return sum(std::get<1>(graph(u))); })(v[0]); }, {x},
      "static second derivative");
}

template <class Entry>
void check_unary_op(const Entry& op) {
  INFO("op " << std::string(op.name));
  const unsigned paths = op.options.paths;
  auto graph = unary_graph(op.fn);
  if (paths & values) {
    check_unary_values<float>(op, graph);
    check_unary_values<double>(op, graph);
    if constexpr (Entry::integers) {
      check_unary_values<std::int32_t>(op, graph);
      check_unary_values<std::int64_t>(op, graph);
    }
  }
  if (paths & edges) {
    check_unary_edges<float>(op, graph);
    check_unary_edges<double>(op, graph);
  }
  if constexpr (std::is_floating_point_v<value_t<decltype(op.fn(std::declval<tensor<double>>()))>>) {
    if (paths & gradients) check_unary_gradients(op, graph);
    if (paths & second_order) check_unary_second_order(op, graph);
  }
}

// A binary op's operand pairs: equal sizes that hit every SIMD tail, and
// broadcasting of every kind (a scalar tensor, size-1 axes on both sides).
struct operand_shapes {
  shape a, b;
};

inline std::vector<operand_shapes> binary_value_shapes() {
  std::vector<operand_shapes> cases;
  for (auto n : tail_sizes) cases.push_back({{n}, {n}});
  cases.push_back({{3, 1, 5}, {4, 5}});
  cases.push_back({{1}, {7}});
  cases.push_back({{17, 1}, {1, 33}});
  cases.push_back({{}, {6, 2}});
  return cases;
}

template <class R, class Ref, class A, class B>
std::vector<double> broadcast_reference(const Ref& reference, const tensor<A>& a, const tensor<B>& b) {
  shape out = detail::broadcast_shapes(a.shape(), b.shape(), "test");
  std::vector<double> want;
  for_each_index(out, [&](const std::vector<std::int64_t>& i) {
    want.push_back(reference_as<R>(reference, static_cast<A>(at_broadcast(a, i)), static_cast<B>(at_broadcast(b, i))));
  });
  return want;
}

template <class Fn>
auto fused_binary_form(const Fn& fn) {
  return [fn](const auto& a, const auto& b) {
    auto y = fn(a * 1.0, b * 1.0);
    if constexpr (std::is_same_v<value_t<decltype(fn(std::declval<tensor<float>>(), std::declval<tensor<float>>()))>,
                                 bool>)
      return logical_xor(y, a > 0.5);
    else
      return y * (a + 1.0);
  };
}

template <class R, class Ref>
double fused_binary_reference(const Ref& reference, double a, double b) {
  if constexpr (std::is_same_v<R, bool>) return (reference(a, b) != 0) != (a > 0.5) ? 1.0 : 0.0;
  else return reference(a, b) * (a + 1.0);
}

// A binary entry's static forms as one graph: the op alone, its fused form,
// then the op with a runtime scalar as its second and (where the op takes
// one) as its first operand.
template <bool ScalarFirst, class Fn>
auto binary_graph(const Fn& fn) {
  return jit([fn](const auto& a, const auto& b, const auto& s) {
    if constexpr (ScalarFirst) return std::tuple{fn(a, b), fused_binary_form(fn)(a, b), fn(a, s), fn(s, b)};
    else return std::tuple{fn(a, b), fused_binary_form(fn)(a, b), fn(a, s)};
  });
}

template <class T, class Entry, class Graph>
void check_binary_values(const Entry& op, const Graph& graph) {
  INFO("element type " << dtype_name(dtype_of<T>));
  const op_options& o = op.options;
  const domain second = o.second_value_domain();
  const T scalar = static_cast<T>(0.37 * second.low + 0.63 * second.high);
  std::uint64_t seed = 100;
  for (const auto& c : binary_value_shapes()) {
    tensor<T> a = random_tensor<T>(c.a, o.values.low, o.values.high, seed++);
    tensor<T> b = random_tensor<T>(c.b, second.low, second.high, seed++);
    using R = value_t<decltype(op.fn(a, b))>;
    using F = value_t<std::tuple_element_t<1, decltype(graph(a, b, scalar))>>;
    shape out = detail::broadcast_shapes(c.a, c.b, "test");
    std::vector<double> want = broadcast_reference<R>(op.reference, a, b);
    auto fused_reference = [&](double x, double y) { return fused_binary_reference<F>(op.reference, x, y); };
    std::vector<double> want_fused = broadcast_reference<F>(fused_reference, a, b);
    for (auto& [la, xa] : layouts(a))
      for (auto& [lb, xb] : layouts(b)) {
        std::string where = la + " " + to_string(c.a) + " with " + lb + " " + to_string(c.b);
        auto outputs = graph(xa, xb, scalar);
        check_values(op.fn(xa, xb), out, want, "eager, " + where, value_tolerance<R>(o), tolerance<R>::abs);
        check_values(std::get<0>(outputs), out, want, "static, " + where, value_tolerance<R>(o), tolerance<R>::abs);
        check_values(std::get<1>(outputs), out, want_fused, "in a fused group, " + where, 2 * value_tolerance<F>(o),
                     tolerance<F>::abs);
      }
  }
  // A scalar on either side: a runtime value, in eager code and in a graph.
  tensor<T> a = random_tensor<T>({17}, o.values.low, o.values.high, seed++);
  tensor<T> b = random_tensor<T>({17}, second.low, second.high, seed++);
  const T left = static_cast<T>(0.37 * o.values.low + 0.63 * o.values.high);
  using R = value_t<decltype(op.fn(a, scalar))>;
  std::vector<double> want_right, want_left;
  for (double v : values_of(a)) want_right.push_back(reference_as<R>(op.reference, static_cast<T>(v), scalar));
  for (double v : values_of(b)) want_left.push_back(reference_as<R>(op.reference, left, static_cast<T>(v)));
  check_values(op.fn(a, scalar), a.shape(), want_right, "eager, tensor and scalar", value_tolerance<R>(o),
               tolerance<R>::abs);
  check_values(std::get<2>(graph(a, b, scalar)), a.shape(), want_right, "static, tensor and scalar",
               value_tolerance<R>(o), tolerance<R>::abs);
  if constexpr (Entry::scalar_first) {
    check_values(op.fn(left, b), b.shape(), want_left, "eager, scalar and tensor", value_tolerance<R>(o),
                 tolerance<R>::abs);
    check_values(std::get<3>(graph(a, b, left)), b.shape(), want_left, "static, scalar and tensor",
                 value_tolerance<R>(o), tolerance<R>::abs);
  }
}

// Every pair of edge values, as a column broadcast against a row.
template <class T, class Entry, class Graph>
void check_binary_edges(const Entry& op, const Graph& graph) {
  INFO("element type " << dtype_name(dtype_of<T>));
  tensor<T> a = edge_values<T>().reshape({-1, 1}), b = edge_values<T>().reshape({1, -1});
  using R = value_t<decltype(op.fn(a, b))>;
  std::vector<double> want = broadcast_reference<R>(op.reference, a, b);
  shape out{a.shape()[0], b.shape()[1]};
  check_values(op.fn(a, b), out, want, "eager, edge values", value_tolerance<R>(op.options), tolerance<R>::abs);
  check_values(std::get<0>(graph(a, b, T(1))), out, want, "static, edge values", value_tolerance<R>(op.options),
               tolerance<R>::abs);
}

template <class Entry, class Graph>
void check_binary_gradients(const Entry& op, const Graph& graph) {
  const op_options& o = op.options;
  const domain slope_b = o.second_slope_domain();
  std::uint64_t seed = 170;
  std::vector<operand_shapes> cases{{{4}, {4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{}, {2, 2}}, {{17}, {17}}};
  for (const auto& c : cases) {
    tensor<double> a = away_from_zero(c.a, seed++, o.slope.low, o.slope.high, o.signed_slope);
    tensor<double> b = away_from_zero(c.b, seed++, slope_b.low, slope_b.high, o.second_slope_signed());
    std::string where = to_string(c.a) + " with " + to_string(c.b);
    check_gradients([&](const std::vector<tensor<double>>& v) { return op.fn(v[0], v[1]); }, {a, b},
                    "eager " + where);
    check_fused_gradients<1, 2>(fused_binary_form(op.fn), graph, {a, b}, where, o.looser);
  }
}

template <class Entry, class Graph>
void check_binary_second_order(const Entry& op, const Graph& graph) {
  const op_options& o = op.options;
  const domain slope_b = o.second_slope_domain();
  auto eager = fused_binary_form(op.fn);
  tensor<double> a = away_from_zero({3, 1}, 190, o.slope.low, o.slope.high, o.signed_slope);
  tensor<double> b = away_from_zero({1, 4}, 191, slope_b.low, slope_b.high, o.second_slope_signed());
  using inputs = const std::vector<tensor<double>>&;
  auto eager_sum = [&](const tensor<double>& x, const tensor<double>& y) { return sum(eager(x, y)); };
  auto static_sum = [&](const tensor<double>& x, const tensor<double>& y) { return sum(std::get<1>(graph(x, y, 0.5))); };
  check_gradients([&](inputs v) { return std::get<0>(grad(eager_sum, all_args)(v[0], v[1])); }, {a, b},
                  "eager, derivatives of the first partial");
  check_gradients([&](inputs v) { return std::get<1>(grad(eager_sum, all_args)(v[0], v[1])); }, {a, b},
                  "eager, derivatives of the second partial");
  check_gradients([&](inputs v) { return std::get<0>(grad(static_sum, all_args)(v[0], v[1])); }, {a, b},
                  "static, derivatives of the first partial");
  check_gradients([&](inputs v) { return std::get<1>(grad(static_sum, all_args)(v[0], v[1])); }, {a, b},
                  "static, derivatives of the second partial");
}

template <class Entry>
void check_binary_op(const Entry& op) {
  INFO("op " << std::string(op.name));
  const unsigned paths = op.options.paths;
  auto graph = binary_graph<Entry::scalar_first>(op.fn);
  if (paths & values) {
    check_binary_values<float>(op, graph);
    check_binary_values<double>(op, graph);
    if constexpr (Entry::integers) {
      check_binary_values<std::int32_t>(op, graph);
      check_binary_values<std::int64_t>(op, graph);
    }
  }
  if (paths & edges) {
    check_binary_edges<float>(op, graph);
    check_binary_edges<double>(op, graph);
  }
  if constexpr (std::is_floating_point_v<
                    value_t<decltype(op.fn(std::declval<tensor<double>>(), std::declval<tensor<double>>()))>>) {
    if (paths & gradients) check_binary_gradients(op, graph);
    if (paths & second_order) check_binary_second_order(op, graph);
  }
}


// Ops that are not elementwise (reductions, softmax, matmul, the view and
// index ops, convolution and pooling): an entry is a function of one tensor
// x, checked on shapes with SIMD tails along each axis (rank 2 unless the
// entry gives its own). Their reference is the op in eager double,
// itself checked against plain loops in the op's own test file
// (tests/ops/reduce.cpp, softmax.cpp, linalg.cpp, shape.cpp); the table
// adds every other path: float against double, as a static graph, after an
// elementwise group (a sum or mean there runs inside the group's loop),
// gradients by finite differences eagerly and through the static graph, the
// float backward against double, and the second derivative.
template <class Fn>
struct structural_entry {
  const char* name;
  Fn fn;
  std::vector<shape> shapes;
};

inline std::vector<shape> rank_2_shapes() { return {{3, 4}, {7, 17}, {1, 33}, {17, 1}, {2, 1000003}}; }

template <class Fn>
structural_entry<Fn> structural(const char* name, Fn fn, std::vector<shape> shapes = rank_2_shapes()) {
  return {name, fn, std::move(shapes)};
}

template <class Fn>
auto after_a_group(const Fn& fn) {
  return [fn](const auto& x) { return fn(tanh(x) * 1.5 + x * 0.25) * 2.0; };
}

template <class Entry>
void check_structural_op(const Entry& op) {
  INFO("op " << std::string(op.name));
  auto graph = jit([fn = op.fn](const auto& x) { return std::tuple{fn(x), after_a_group(fn)(x)}; });
  std::uint64_t seed = 300;
  for (const shape& s : op.shapes) {
    INFO("x of shape " << to_string(s));
    tensor<double> x = random_tensor<double>(s, -1.5, 1.5, seed++);
    tensor<float> xf = x.astype<float>();
    tensor<double> want = op.fn(x), want_grouped = after_a_group(op.fn)(x);
    auto [alone, grouped] = graph(x);
    check_values(alone, want, "static, double", 1e-12, 1e-12);
    check_values(grouped, want_grouped, "after a group, static, double", 1e-12, 1e-12);
    // Float sums over a million elements: their error grows with the count.
    double loose = numel(s) > 100000 ? 1e-3 : 1e-5;
    auto [alone_f, grouped_f] = graph(xf);
    check_values(op.fn(xf).template astype<double>(), want, "eager, float", loose, loose);
    check_values(alone_f.template astype<double>(), want, "static, float", loose, loose);
    check_values(grouped_f.template astype<double>(), want_grouped, "after a group, static, float", loose, loose);

    // Gradients through the grouped form, seeded with a random sensitivity.
    generator gen(seed++);
    tensor<double> sensitivity = uniform<double>(want_grouped.shape(), -1, 1, gen);
    tensor<double> leaf = x.detach();
    leaf.set_requires_grad(true);
    sum(after_a_group(op.fn)(leaf) * sensitivity).backward();
    tensor<double> static_leaf = x.detach();
    static_leaf.set_requires_grad(true);
    sum(std::get<1>(graph(static_leaf)) * sensitivity).backward();
    check_values(static_leaf.grad(), leaf.grad(), "backward through the static graph, double", 1e-10, 1e-10);
    tensor<float> float_leaf = xf.detach();
    float_leaf.set_requires_grad(true);
    sum(std::get<1>(graph(float_leaf)) * sensitivity.astype<float>()).backward();
    check_values(float_leaf.grad().template astype<double>(), leaf.grad(), "backward through the static graph, float",
                 10 * loose, 10 * loose);

    if (numel(s) <= 64) {
      using inputs = const std::vector<tensor<double>>&;
      check_gradients([&](inputs v) { return op.fn(v[0]); }, {x}, "eager gradient");
      check_gradients([&](inputs v) { return std::get<0>(graph(v[0])); }, {x}, "static gradient");
      check_gradients([&](inputs v) { return std::get<1>(graph(v[0])); }, {x}, "static gradient after a group");
      check_gradients(
          [&](inputs v) {
            return grad([&](const tensor<double>& u) { return sum(std::get<1>(graph(u)) * sensitivity); })(v[0]);
          },
          {x}, "static second derivative");
    }
  }
}

}  // namespace tandem::test
