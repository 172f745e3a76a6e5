#pragma once
// std::cout << t prints a tensor as NumPy's str() does, so the outputs in
// MindSpore's documentation come out character for character: floats in
// the shortest form that reads back to the same float32/float64 (at most
// `precision` decimals), a shared column width, scientific notation when
// magnitudes are far apart, and "..." summaries for large tensors.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "tandem/core/dtype.hpp"
#include "tandem/core/reduced_float.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem {

struct print_options {
  int precision = 8;            // most digits after the decimal point
  std::int64_t threshold = 1000;  // more elements than this are summarised
  std::int64_t edge_items = 3;    // items kept at each end of a summarised axis
  std::int64_t line_width = 75;   // characters per line before wrapping
  bool suppress_small = false;    // never use scientific notation for small values
};

namespace detail {
inline print_options& current_print_options() {
  static print_options options;
  return options;
}
}  // namespace detail

inline void set_print_options(const print_options& options) { detail::current_print_options() = options; }
inline print_options get_print_options() { return detail::current_print_options(); }

namespace detail {

// The shortest digits that read back as x: to_chars's for float and double.
template <class T>
std::string shortest_chars(T x, std::chars_format format) {
  char buf[512];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, x, format).ptr);
}

// The same for a 16-bit float, which to_chars does not know: the fewest
// significant digits that read back (rounded to the format) as the same
// bits, as NumPy prints float16; positionally, every digit of the integer
// part and the fraction to the same last digit (65504 in float16 is
// "65504", 0.1 is "0.1").
template <int E, int M>
std::string shortest_chars(reduced_float<E, M> x, std::chars_format format) {
  const double v = static_cast<double>(x);
  char buf[512];
  int decimals = 0;
  char* end = buf;
  for (; decimals <= 17; ++decimals) {
    end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, decimals).ptr;
    double back = 0;
    std::from_chars(buf, end, back);
    if (reduced_float<E, M>(back).bits() == x.bits()) break;
  }
  if (format == std::chars_format::scientific) return std::string(buf, end);
  const int exponent = std::stoi(std::string(std::find(buf, end, 'e') + 1, end));
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed,
                                        std::max(0, decimals - exponent)).ptr);
}

// x as to_chars formats at a given precision: 16-bit floats as their exact
// double.
template <class T>
auto formattable(T x) {
  if constexpr (is_reduced_float_v<T>) return static_cast<double>(x);
  else return x;
}

// Shortest round-trip digits of x, cut to `precision` decimals, as
// "int.frac" (positional) or "d.ddde+XX" (scientific), trailing zeros dropped.
template <class T>
std::string float_digits(T x, int precision, bool scientific) {
  char buf[512];
  auto format = scientific ? std::chars_format::scientific : std::chars_format::fixed;
  std::string s = shortest_chars(x, format);
  std::string mantissa = scientific ? s.substr(0, s.find('e')) : s;
  std::size_t dot = mantissa.find('.');
  if (dot != std::string::npos && static_cast<int>(mantissa.size() - dot - 1) > precision) {
    s = std::string(buf, std::to_chars(buf, buf + sizeof buf, formattable(x), format, precision).ptr);
    mantissa = scientific ? s.substr(0, s.find('e')) : s;
    dot = mantissa.find('.');
    if (dot != std::string::npos) {
      while (mantissa.back() == '0') mantissa.pop_back();
    }
  }
  if (mantissa.find('.') == std::string::npos) mantissa += '.';
  if (!scientific) return mantissa;
  std::string exponent = s.substr(s.find('e') + 1);
  char sign = exponent[0] == '-' ? '-' : '+';
  if (exponent[0] == '-' || exponent[0] == '+') exponent.erase(0, 1);
  while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
  if (exponent.size() < 2) exponent.insert(0, 2 - exponent.size(), '0');
  return mantissa + "e" + sign + exponent;
}

// Formats every element of one tensor with a shared width (NumPy's FloatingFormat).
template <class T>
class element_formatter {
 public:
  element_formatter(const std::vector<T>& shown, const print_options& options) : options_(options) {
    if constexpr (std::is_same_v<T, bool>) {
      width_ = 5;
    } else if constexpr (std::is_integral_v<T>) {
      for (T v : shown) width_ = std::max(width_, std::to_string(v).size());
    } else {
      choose_float_layout(shown);
    }
  }

  std::string operator()(T v) const {
    if constexpr (std::is_same_v<T, bool>) {
      return v ? " True" : "False";
    } else if constexpr (std::is_integral_v<T>) {
      std::string s = std::to_string(v);
      return std::string(width_ - s.size(), ' ') + s;
    } else {
      if (!std::isfinite(v)) {
        std::string s = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
        std::size_t width = pad_left_ + pad_right_ + 1;
        return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
      }
      std::string s = float_digits(v, precision_, scientific_);
      std::size_t dot = s.find('.');
      std::string left = s.substr(0, dot), right = s.substr(dot + 1);
      if (scientific_) {
        std::string digits = right.substr(0, right.find('e'));
        std::string exponent = right.substr(right.find('e'));
        digits.resize(precision_, '0');
        return std::string(pad_left_ - std::min(pad_left_, left.size()), ' ') + left + "." + digits + exponent;
      }
      return std::string(pad_left_ - std::min(pad_left_, left.size()), ' ') + left + "." + right +
             std::string(pad_right_ - std::min(pad_right_, right.size()), ' ');
    }
  }

 private:
  void choose_float_layout(const std::vector<T>& shown) {
    std::vector<T> finite;
    for (T v : shown)
      if (std::isfinite(v)) finite.push_back(v);
    // Magnitudes compared as the type computes: 16-bit floats as floats.
    using V = compute_t<T>;
    V largest = 0, smallest = std::numeric_limits<V>::infinity();
    for (T v : finite)
      if (v != 0) largest = std::max(largest, std::abs(V(v))), smallest = std::min(smallest, std::abs(V(v)));
    scientific_ = largest != 0 && (largest >= V(1e8) || (!options_.suppress_small &&
                                                          (smallest < V(0.0001) || largest / smallest > V(1000))));
    precision_ = options_.precision;
    if (scientific_) {
      int widest = 0;
      for (T v : finite) {
        std::string s = float_digits(v, options_.precision, true);
        std::size_t dot = s.find('.');
        widest = std::max(widest, static_cast<int>(s.find('e') - dot - 1));
        pad_left_ = std::max(pad_left_, dot);
      }
      precision_ = widest;
      pad_right_ = static_cast<std::size_t>(widest) + 4;
    } else {
      for (T v : finite) {
        std::string s = float_digits(v, options_.precision, false);
        std::size_t dot = s.find('.');
        pad_left_ = std::max(pad_left_, dot);
        pad_right_ = std::max(pad_right_, s.size() - dot - 1);
      }
    }
    if (finite.size() != shown.size()) {
      bool negative_inf = false;
      for (T v : shown) negative_inf = negative_inf || (std::isinf(v) && v < 0);
      std::size_t needed = std::max<std::size_t>(3, negative_inf ? 4 : 3);
      if (pad_left_ + pad_right_ + 1 < needed) pad_left_ = needed - pad_right_ - 1;
    }
  }

  print_options options_;
  std::size_t width_ = 0;
  bool scientific_ = false;
  int precision_ = 8;
  std::size_t pad_left_ = 0, pad_right_ = 0;
};

// Elements that are printed: all of them, or the edges of each axis.
template <class T>
void collect_shown(const tensor<T>& x, std::int64_t axis, std::int64_t offset, bool summarise, std::int64_t edge,
                   std::vector<T>& out) {
  if (axis == x.dim()) {
    out.push_back(x.data()[offset]);
    return;
  }
  std::int64_t n = x.shape()[axis];
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * edge && i == edge) i = n - edge;
    collect_shown(x, axis + 1, offset + i * x.strides()[axis], summarise, edge, out);
  }
}

// NumPy's _formatArray: nested brackets, wrapping at line_width, blank lines
// between blocks of rank 3 and up.
template <class T>
std::string format_nested(const tensor<T>& x, std::int64_t axis, std::int64_t offset, const std::string& indent,
                          std::int64_t width, bool summarise, const element_formatter<T>& fmt,
                          const print_options& options) {
  if (axis == x.dim()) return fmt(x.data()[offset]);
  std::int64_t n = x.shape()[axis];
  std::int64_t edge = options.edge_items;
  bool cut = summarise && n > 2 * edge;
  std::string next_indent = indent + " ";
  std::int64_t left_axes = x.dim() - axis;
  std::string s;
  auto item = [&](std::int64_t i) {
    return format_nested(x, axis + 1, offset + i * x.strides()[axis], next_indent, width - 1, summarise, fmt, options);
  };
  if (left_axes == 1) {
    std::size_t element_width = static_cast<std::size_t>(width - 1);
    std::string line = indent;
    auto extend = [&](const std::string& word) {
      if (line.size() + word.size() > element_width && line.size() > indent.size()) {
        while (!line.empty() && line.back() == ' ') line.pop_back();
        s += line + "\n";
        line = indent;
      }
      line += word;
    };
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == edge) {
        extend("...");
        line += " ";
        i = n - edge;
      }
      extend(item(i));
      if (i + 1 < n) line += " ";
    }
    s += line;
  } else {
    std::string separator = std::string(static_cast<std::size_t>(left_axes - 1), '\n');
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == edge) {
        s += indent + "..." + separator;
        i = n - edge;
      }
      s += indent + item(i);
      if (i + 1 < n) s += separator;
    }
  }
  std::string bracketed = "[";
  bracketed.append(s, std::min(s.size(), indent.size()));
  bracketed += ']';
  return bracketed;
}

}  // namespace detail

template <element T>
std::string to_string(const tensor<T>& x, const print_options& options = get_print_options()) {
  if (!x.device().is_cpu()) return to_string(x.detach().cpu(), options);
  bool summarise = x.numel() > options.threshold;
  std::vector<T> shown;
  detail::collect_shown(x, 0, 0, summarise, options.edge_items, shown);
  if (x.dim() == 0) {
    if constexpr (is_floating_v<T>) {
      T v = shown[0];
      if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
      std::string s = detail::float_digits(v, 17, false);
      return s.back() == '.' ? s + "0" : s;
    } else if constexpr (std::is_same_v<T, bool>) {
      return shown[0] ? "True" : "False";
    } else {
      return std::to_string(shown[0]);
    }
  }
  if (x.numel() == 0) return "[]";
  detail::element_formatter<T> fmt(shown, options);
  return detail::format_nested(x, 0, 0, " ", options.line_width, summarise, fmt, options);
}

template <element T>
std::ostream& operator<<(std::ostream& os, const tensor<T>& x) {
  return os << to_string(x);
}

}  // namespace tandem
