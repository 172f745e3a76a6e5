#pragma once
// tandem::bfloat16 and tandem::float16 (IEEE 754 binary16): 16-bit floats
// that store a value and compute in float. bfloat16 keeps float's 8 exponent
// bits and 7 of its mantissa bits (float's range, 2-3 decimal digits);
// float16 has 5 and 10 (largest finite 65504, subnormals down to 2^-24).
//
// Conversions from float and double round to nearest, ties to even, in one
// step (a double is never rounded to float first, which could round twice);
// a value past the largest finite one rounds to infinity as IEEE says, and
// a NaN stays a quiet NaN of the same sign. Widening to float or double is
// exact. Arithmetic converts to float, computes, and rounds the result back,
// as PyTorch's c10::BFloat16/Half and Eigen's half do; comparisons compare
// the float values, so NaN is unordered and -0 equals +0.

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tandem {

namespace detail {

// A 16-bit binary floating-point format: its exponent and stored mantissa
// widths.
template <int ExponentBits, int MantissaBits>
struct binary16_format {
  static_assert(1 + ExponentBits + MantissaBits == 16, "a binary16_format fills 16 bits");
  static constexpr int exponent_bits = ExponentBits;
  static constexpr int mantissa_bits = MantissaBits;
  static constexpr int bias = (1 << (ExponentBits - 1)) - 1;
  static constexpr std::uint16_t exponent_mask = ((1u << ExponentBits) - 1) << MantissaBits;
  static constexpr std::uint16_t mantissa_mask = (1u << MantissaBits) - 1;
  static constexpr std::uint16_t quiet_bit = 1u << (MantissaBits - 1);
};

using bfloat16_format = binary16_format<8, 7>;
using float16_format = binary16_format<5, 10>;

// x rounded to the format, to nearest with ties to even: the bits.
template <class Format>
constexpr std::uint16_t round_to_binary16(double x) {
  constexpr int m_bits = Format::mantissa_bits;
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & 0x8000u);
  const std::uint64_t magnitude = bits & 0x7fff'ffff'ffff'ffffull;
  constexpr std::uint64_t double_infinity = 0x7ff0'0000'0000'0000ull;
  if (magnitude > double_infinity)  // NaN: quiet, with the payload's top bits
    return sign | Format::exponent_mask | Format::quiet_bit |
           static_cast<std::uint16_t>((magnitude >> (52 - m_bits)) & Format::mantissa_mask);
  if (magnitude == double_infinity) return sign | Format::exponent_mask;
  const int exponent = static_cast<int>(magnitude >> 52) - 1023;
  // Double subnormals lie far below half of any 16-bit format's smallest
  // subnormal (2^-25 for float16, 2^-134 for bfloat16): they round to zero.
  if (exponent == -1023) return sign;
  const std::uint64_t significand = (magnitude & 0x000f'ffff'ffff'ffffull) | (1ull << 52);
  constexpr int min_exponent = 1 - Format::bias;
  // The significand's bits below the result's last place go: 52 - m_bits of
  // them for a normal result, more for a subnormal one (whose last place is
  // 2^(min_exponent - m_bits)).
  const int dropped = 52 - m_bits + (exponent < min_exponent ? min_exponent - exponent : 0);
  if (dropped > 54) return sign;  // below half the smallest subnormal
  std::uint64_t kept = significand >> dropped;
  const std::uint64_t rest = significand & ((1ull << dropped) - 1), half = 1ull << (dropped - 1);
  if (rest > half || (rest == half && (kept & 1))) ++kept;
  if (exponent < min_exponent)  // a subnormal, or the smallest normal where rounding carried into it
    return sign | static_cast<std::uint16_t>(kept);
  // Normal: kept holds the implicit bit; a carry out of the mantissa moves
  // the exponent up by one.
  int biased = exponent + Format::bias;
  if (kept >> (m_bits + 1)) {
    kept >>= 1;
    ++biased;
  }
  if (biased >= (1 << Format::exponent_bits) - 1) return sign | Format::exponent_mask;
  return sign |
         static_cast<std::uint16_t>((static_cast<std::uint64_t>(biased) << m_bits) | (kept & Format::mantissa_mask));
}

// The value of a format's bits, exactly.
template <class Format>
constexpr double binary16_value(std::uint16_t h) {
  constexpr int m_bits = Format::mantissa_bits;
  const std::uint64_t sign = static_cast<std::uint64_t>(h & 0x8000u) << 48;
  const int exponent_field = (h & Format::exponent_mask) >> m_bits;
  std::uint64_t mantissa = h & Format::mantissa_mask;
  if (exponent_field == (1 << Format::exponent_bits) - 1)  // infinity, or NaN with its payload
    return std::bit_cast<double>(sign | 0x7ff0'0000'0000'0000ull | (mantissa << (52 - m_bits)));
  int exponent = exponent_field - Format::bias;
  if (exponent_field == 0) {
    if (mantissa == 0) return std::bit_cast<double>(sign);
    // Subnormal: normalize, moving the leading one into the implicit place.
    exponent = 1 - Format::bias;
    while (!(mantissa & (1u << m_bits))) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= Format::mantissa_mask;
  }
  return std::bit_cast<double>(sign | (static_cast<std::uint64_t>(exponent + 1023) << 52) |
                               (mantissa << (52 - m_bits)));
}

// a where `choose`, else b, without a branch (which would keep a loop of
// conversions from vectorizing).
constexpr std::uint32_t select_bits(bool choose, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(choose);
  return (a & mask) | (b & ~mask);
}

// binary16 (float16) bits widened to float's, exactly: each case computed
// and one chosen, so that a loop of them vectorizes.
constexpr std::uint32_t widen_binary16(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  const std::uint32_t normal = sign | (exponent + 112) << 23 | mantissa << 13;
  const std::uint32_t special = sign | 0x7f80'0000u | mantissa << 13;  // infinity, or NaN with its payload
  // A subnormal is its mantissa times 2^-24: a normal float, exactly.
  const std::uint32_t tiny = sign | std::bit_cast<std::uint32_t>(static_cast<float>(mantissa) * 0x1p-24f);
  return select_bits(exponent == 0x1f, special, select_bits(exponent == 0, tiny, normal));
}

// float bits rounded to binary16's, to nearest even, in integer arithmetic
// (so a flush-to-zero mode cannot change it): each case computed and one
// chosen, so that a loop of them vectorizes.
constexpr std::uint16_t narrow_to_binary16(std::uint32_t f) {
  const std::uint32_t sign = (f >> 16) & 0x8000u, magnitude = f & 0x7fff'ffffu;
  // Normal results: the exponent rebiased (127 to 15) and the 13 dropped
  // bits rounded, a carry moving into the exponent.
  const std::uint32_t normal = (magnitude + 0xfffu + ((magnitude >> 13) & 1u) - 0x3800'0000u) >> 13;
  // Below 2^-14: the significand in units of 2^-24, rounded; a shift past
  // 25 leaves less than half a unit (0), and a float subnormal is one.
  // (The shift is kept in range where the result is another case's.)
  const std::uint32_t exponent = magnitude >> 23;
  const std::uint32_t significand = (magnitude & 0x7f'ffffu) | 0x80'0000u;
  const std::uint32_t shift = select_bits(exponent < 101, 25, select_bits(exponent > 112, 14, 126 - exponent));
  const std::uint32_t tiny =
      (significand + (1u << (shift - 1)) - 1u + ((significand >> shift) & 1u)) >> shift;
  const std::uint32_t quiet_nan = 0x7e00u | ((magnitude >> 13) & 0x3ffu);
  // 65520 and above round to infinity (65504 is the largest value).
  const std::uint32_t result =
      select_bits(magnitude > 0x7f80'0000u, quiet_nan,
                  select_bits(magnitude >= 0x477f'f000u, 0x7c00u, select_bits(magnitude >= 0x3880'0000u, normal, tiny)));
  return static_cast<std::uint16_t>(sign | result);
}

struct from_bits_tag {};

}  // namespace detail

// A 16-bit float of 1 sign, ExponentBits exponent and MantissaBits stored
// mantissa bits (bfloat16, float16 below). The format is given by numbers,
// not by a type in tandem::detail, so that argument-dependent lookup on a
// tensor of them looks nowhere but in tandem.
template <int ExponentBits, int MantissaBits>
class reduced_float {
 public:
  using format = detail::binary16_format<ExponentBits, MantissaBits>;

  constexpr reduced_float() = default;
  // From any arithmetic value, rounded to nearest even: explicit, as a
  // narrowing conversion should be.
  template <class A>
    requires std::is_arithmetic_v<A>
  constexpr explicit reduced_float(A value) : bits_(from(value)) {}
  // From the other 16-bit format: widened to float exactly, then rounded once.
  template <int E, int M>
  constexpr explicit reduced_float(reduced_float<E, M> value) : bits_(from(static_cast<float>(value))) {}

  // The value with these bits.
  static constexpr reduced_float from_bits(std::uint16_t bits) { return reduced_float(detail::from_bits_tag{}, bits); }
  constexpr std::uint16_t bits() const { return bits_; }

  // Widening is exact, so it is implicit: a reduced_float reads as a float.
  constexpr operator float() const {
    if constexpr (std::is_same_v<format, detail::bfloat16_format>)
      return std::bit_cast<float>(static_cast<std::uint32_t>(bits_) << 16);
    else if constexpr (std::is_same_v<format, detail::float16_format>)
      return std::bit_cast<float>(detail::widen_binary16(bits_));
    else
      return static_cast<float>(detail::binary16_value<format>(bits_));
  }
  constexpr explicit operator double() const { return detail::binary16_value<format>(bits_); }

  friend constexpr reduced_float operator+(reduced_float a, reduced_float b) {
    return reduced_float(float(a) + float(b));
  }
  friend constexpr reduced_float operator-(reduced_float a, reduced_float b) {
    return reduced_float(float(a) - float(b));
  }
  friend constexpr reduced_float operator*(reduced_float a, reduced_float b) {
    return reduced_float(float(a) * float(b));
  }
  friend constexpr reduced_float operator/(reduced_float a, reduced_float b) {
    return reduced_float(float(a) / float(b));
  }
  friend constexpr reduced_float operator-(reduced_float a) { return from_bits(a.bits_ ^ 0x8000u); }
  constexpr reduced_float& operator+=(reduced_float b) { return *this = *this + b; }
  constexpr reduced_float& operator-=(reduced_float b) { return *this = *this - b; }
  constexpr reduced_float& operator*=(reduced_float b) { return *this = *this * b; }
  constexpr reduced_float& operator/=(reduced_float b) { return *this = *this / b; }

  friend constexpr bool operator==(reduced_float a, reduced_float b) { return float(a) == float(b); }
  friend constexpr bool operator<(reduced_float a, reduced_float b) { return float(a) < float(b); }
  friend constexpr bool operator<=(reduced_float a, reduced_float b) { return float(a) <= float(b); }
  friend constexpr bool operator>(reduced_float a, reduced_float b) { return float(a) > float(b); }
  friend constexpr bool operator>=(reduced_float a, reduced_float b) { return float(a) >= float(b); }

 private:
  constexpr reduced_float(detail::from_bits_tag, std::uint16_t bits) : bits_(bits) {}

  template <class A>
  static constexpr std::uint16_t from(A value) {
    if constexpr (std::is_same_v<A, float> && std::is_same_v<format, detail::bfloat16_format>) {
      // float to bfloat16 drops float's low 16 bits: round them to nearest
      // even by adding just under half of the kept last place (plus the
      // last place's parity, which makes a tie round to even).
      const auto f = std::bit_cast<std::uint32_t>(value);
      if ((f & 0x7fff'ffffu) > 0x7f80'0000u) return static_cast<std::uint16_t>((f >> 16) | format::quiet_bit);
      return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
    } else if constexpr (std::is_same_v<A, float> && std::is_same_v<format, detail::float16_format>) {
      return detail::narrow_to_binary16(std::bit_cast<std::uint32_t>(value));
    } else {
      // To double first, exactly for float and for integers up to 2^53 (far
      // past every 16-bit float's last exactly representable integer); a
      // long double is rounded to double there.
      return detail::round_to_binary16<format>(static_cast<double>(value));
    }
  }

  std::uint16_t bits_ = 0;
};

// Google Brain's bfloat16: float's exponent range, 8 significant bits.
using bfloat16 = reduced_float<8, 7>;
// IEEE 754 binary16 (half precision): 11 significant bits, range +-65504.
using float16 = reduced_float<5, 10>;

template <class T>
inline constexpr bool is_reduced_float_v = false;
template <int E, int M>
inline constexpr bool is_reduced_float_v<reduced_float<E, M>> = true;

// isnan, isinf and isfinite, read from the bits.
template <int E, int M>
constexpr bool isnan(reduced_float<E, M> x) {
  using format = typename reduced_float<E, M>::format;
  return (x.bits() & format::exponent_mask) == format::exponent_mask && (x.bits() & format::mantissa_mask) != 0;
}
template <int E, int M>
constexpr bool isinf(reduced_float<E, M> x) {
  return (x.bits() & 0x7fffu) == reduced_float<E, M>::format::exponent_mask;
}
template <int E, int M>
constexpr bool isfinite(reduced_float<E, M> x) {
  using format = typename reduced_float<E, M>::format;
  return (x.bits() & format::exponent_mask) != format::exponent_mask;
}

}  // namespace tandem

// The formats' limits, as for float.
template <int E, int M>
class std::numeric_limits<tandem::reduced_float<E, M>> {
  using type = tandem::reduced_float<E, M>;
  using Format = typename type::format;
  static constexpr int max_biased_exponent = (1 << Format::exponent_bits) - 2;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = Format::exponent_bits == 5;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = Format::mantissa_bits + 1;
  // floor((digits - 1) log10 2) and ceil(1 + digits log10 2).
  static constexpr int digits10 = Format::mantissa_bits == 7 ? 2 : 3;
  static constexpr int max_digits10 = Format::mantissa_bits == 7 ? 4 : 5;
  static constexpr int radix = 2;
  static constexpr int min_exponent = 2 - Format::bias;
  static constexpr int min_exponent10 = Format::mantissa_bits == 7 ? -37 : -4;
  static constexpr int max_exponent = Format::bias + 1;
  static constexpr int max_exponent10 = Format::mantissa_bits == 7 ? 38 : 4;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  static constexpr type min() noexcept { return type::from_bits(1u << Format::mantissa_bits); }
  static constexpr type lowest() noexcept { return type::from_bits(0x8000u | max().bits()); }
  static constexpr type max() noexcept {
    return type::from_bits(
        static_cast<std::uint16_t>((max_biased_exponent << Format::mantissa_bits) | Format::mantissa_mask));
  }
  static constexpr type epsilon() noexcept {
    return type::from_bits(static_cast<std::uint16_t>((Format::bias - Format::mantissa_bits) << Format::mantissa_bits));
  }
  static constexpr type round_error() noexcept { return type(0.5f); }
  static constexpr type infinity() noexcept { return type::from_bits(Format::exponent_mask); }
  static constexpr type quiet_NaN() noexcept { return type::from_bits(Format::exponent_mask | Format::quiet_bit); }
  static constexpr type signaling_NaN() noexcept { return type::from_bits(Format::exponent_mask | 1u); }
  static constexpr type denorm_min() noexcept { return type::from_bits(1u); }
};
