// bfloat16 and float16 against a reference that knows nothing of their bit
// tricks: every finite value of the format, sorted, and the nearest one to
// x found by search (ties to the even bit pattern, past the largest finite
// value's half-ulp to infinity). Checked on every one of the 65,536 bit
// patterns, every midpoint between neighbours (the ties) and the doubles
// and floats just beside each midpoint (where rounding through float first
// would round twice), and a sweep of float bit patterns; GCC's own
// _Float16 conversions where the compiler has them.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "support/check.hpp"
#include "tandem/core/reduced_float.hpp"

using namespace tandem;

namespace {

template <class R>
struct nearest_reference {
  using format = typename R::format;
  // Every non-negative finite value, increasing with the bits.
  std::vector<double> values;
  double overflow_tie;

  nearest_reference() {
    for (std::uint32_t b = 0; b < format::exponent_mask; ++b)
      values.push_back(std::ldexp(static_cast<double>(b & format::mantissa_mask) +
                                      ((b & format::exponent_mask) ? std::ldexp(1.0, format::mantissa_bits) : 0.0),
                                  std::max<int>(static_cast<int>(b >> format::mantissa_bits), 1) - format::bias -
                                      format::mantissa_bits));
    const double largest = values.back(), ulp = largest - values[values.size() - 2];
    overflow_tie = largest + ulp / 2;
  }

  std::uint16_t operator()(double x) const {
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(x);
    if (std::isnan(x)) return 0;  // not asked
    if (a >= overflow_tie) return sign | format::exponent_mask;
    const auto above = std::lower_bound(values.begin(), values.end(), a);
    if (above == values.end()) return sign | static_cast<std::uint16_t>(values.size() - 1);
    auto at = static_cast<std::uint16_t>(above - values.begin());
    if (*above == a || at == 0) return sign | at;
    const double up = *above - a, down = a - values[at - 1];
    if (down < up || (down == up && (at & 1))) --at;
    return sign | at;
  }
};

// Mismatches are counted, and the first described, so that a million
// conversions cost a million comparisons, not a million assertions.
struct mismatches {
  std::int64_t count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ == 0) first = what;
  }
};

std::string hex(double x) {
  std::ostringstream out;
  out << x << " (" << std::hexfloat << x << ")";
  return out.str();
}

template <class R>
void check_rounding_of(const nearest_reference<R>& reference, double x, mismatches& wrong) {
  const std::uint16_t want = reference(x);
  if (R(x).bits() != want) wrong.add("from double " + hex(x) + ": " + std::to_string(R(x).bits()) + ", not " + std::to_string(want));
  const auto f = static_cast<float>(x);
  if (static_cast<double>(f) == x && R(f).bits() != want)
    wrong.add("from float " + hex(x) + ": " + std::to_string(R(f).bits()) + ", not " + std::to_string(want));
}

template <class R>
void check_format() {
  using format = typename R::format;
  const nearest_reference<R> reference;
  std::int64_t checked = 0;

  // Every pattern reads as its value, and that value (as a double and as a
  // float) converts back to the same pattern; NaNs stay NaNs of their sign,
  // quiet, with their payload.
  mismatches wrong;
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto h = R::from_bits(static_cast<std::uint16_t>(b));
    const double value = static_cast<double>(h);
    const float single = static_cast<float>(h);
    const std::string which = "bits " + std::to_string(b) + ": ";
    if (std::signbit(value) != ((b & 0x8000) != 0)) wrong.add(which + "the sign");
    if (isnan(h)) {
      const std::uint16_t quiet = static_cast<std::uint16_t>(b | format::quiet_bit);
      if (!std::isnan(value) || !std::isnan(single) || isfinite(h) || h == h) wrong.add(which + "a NaN");
      if (R(value).bits() != quiet || R(single).bits() != quiet) wrong.add(which + "a NaN's round trip");
    } else {
      if (static_cast<double>(single) != value) wrong.add(which + "as a float");
      if (R(value).bits() != b || R(single).bits() != b) wrong.add(which + "the round trip");
      if (isinf(h) != std::isinf(value) || isfinite(h) != std::isfinite(value)) wrong.add(which + "isinf, isfinite");
    }
    ++checked;
  }

  // The midpoints between neighbours (exact in double and float alike) and
  // the doubles and floats beside them, both signs; past the largest value.
  const auto& v = reference.values;
  for (std::size_t i = 0; i + 1 < v.size(); ++i) {
    const double mid = (v[i] + v[i + 1]) / 2;
    for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300),
                     static_cast<double>(std::nextafter(static_cast<float>(mid), 0.0f)),
                     static_cast<double>(std::nextafter(static_cast<float>(mid), 1e30f))}) {
      check_rounding_of(reference, x, wrong);
      check_rounding_of(reference, -x, wrong);
      checked += 2;
    }
  }
  for (double x : {reference.overflow_tie, std::nextafter(reference.overflow_tie, 0.0), 1e300, 1e-300, 4.9e-324,
                   static_cast<double>(std::numeric_limits<float>::max()),
                   static_cast<double>(std::numeric_limits<float>::denorm_min()), 0.0}) {
    check_rounding_of(reference, x, wrong);
    check_rounding_of(reference, -x, wrong);
  }

  // A sweep of float bit patterns, every exponent (finite ones).
  for (std::uint64_t b = 0; b < 0x7f80'0000u; b += 0x1fe1) {
    check_rounding_of(reference, static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(b))), wrong);
    ++checked;
  }
  INFO("the first of them: " << wrong.first);
  CHECK(wrong.count == 0);
  CHECK(checked > 500'000);
  CHECK(R(std::numeric_limits<double>::infinity()).bits() == format::exponent_mask);
  CHECK(R(-std::numeric_limits<float>::infinity()).bits() == (0x8000 | format::exponent_mask));

  // Integers convert as their values do.
  CHECK(R(3).bits() == R(3.0).bits());
  CHECK(R(std::int64_t{1} << 40).bits() == R(std::ldexp(1.0, 40)).bits());
  CHECK(R(true).bits() == R(1.0f).bits());
}

}  // namespace

TEST_CASE("bfloat16 rounds to nearest even from double and float, over every bit pattern, tie and near tie") {
  check_format<bfloat16>();
}

TEST_CASE("float16 rounds to nearest even from double and float, over every bit pattern, tie and near tie") {
  check_format<float16>();
}

#if defined(__FLT16_MAX__)
TEST_CASE("float16 agrees with the compiler's _Float16 conversions") {
  mismatches wrong;
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto h = float16::from_bits(static_cast<std::uint16_t>(b));
    const auto theirs = std::bit_cast<_Float16>(static_cast<std::uint16_t>(b));
    if (!isnan(h) && static_cast<float>(h) != static_cast<float>(theirs)) wrong.add("bits " + std::to_string(b));
  }
  for (std::uint64_t b = 0; b < 0xff80'0000u; b += 0x3f1) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    if (std::isnan(f)) continue;
    const double d = std::nextafter(static_cast<double>(f), 0.0);
    if (float16(f).bits() != std::bit_cast<std::uint16_t>(static_cast<_Float16>(f))) wrong.add("from float " + hex(f));
    if (float16(d).bits() != std::bit_cast<std::uint16_t>(static_cast<_Float16>(d))) wrong.add("from double " + hex(d));
  }
  INFO("the first of them: " << wrong.first);
  CHECK(wrong.count == 0);
}
#endif

TEST_CASE("the formats' limits") {
  using b16 = std::numeric_limits<bfloat16>;
  using f16 = std::numeric_limits<float16>;
  CHECK(static_cast<double>(f16::max()) == 65504);
  CHECK(static_cast<double>(f16::lowest()) == -65504);
  CHECK(static_cast<double>(f16::min()) == std::ldexp(1.0, -14));
  CHECK(static_cast<double>(f16::denorm_min()) == std::ldexp(1.0, -24));
  CHECK(static_cast<double>(f16::epsilon()) == std::ldexp(1.0, -10));
  CHECK(static_cast<double>(b16::max()) == std::ldexp(255.0, 120));
  CHECK(static_cast<double>(b16::min()) == static_cast<double>(std::numeric_limits<float>::min()));
  CHECK(static_cast<double>(b16::denorm_min()) == std::ldexp(1.0, -133));
  CHECK(static_cast<double>(b16::epsilon()) == std::ldexp(1.0, -7));
  CHECK(f16::digits == 11);
  CHECK(b16::digits == 8);
  CHECK(isinf(b16::infinity()));
  CHECK(isnan(f16::quiet_NaN()));
  CHECK(isnan(f16::signaling_NaN()));
  // One past the largest finite value's half ulp is infinity; the largest
  // value plus less than that stays.
  CHECK(isinf(float16(65520.0f)));
  CHECK(float16(65519.0f).bits() == f16::max().bits());
  static_assert(bfloat16(1.0f).bits() == 0x3f80);
  static_assert(float16(1.0).bits() == 0x3c00);
  static_assert(float16::from_bits(0x3555) < float16(1.0f));
}

TEST_CASE("arithmetic computes in float and rounds once, correctly") {
  // float's 24 bits are at least 2p + 2 for both formats, so rounding the
  // float result again gives the correctly rounded 16-bit result.
  const bfloat16 a(1.0f), eps = std::numeric_limits<bfloat16>::epsilon();
  CHECK((a + eps).bits() == 0x3f81);
  CHECK((a + bfloat16(std::ldexp(1.0f, -8))).bits() == 0x3f80);  // a tie, to even
  CHECK(static_cast<float>(float16(3.0f) / float16(4.0f)) == 0.75f);
  CHECK(static_cast<float>(float16(0.1f) * float16(10.0f)) == 1.0f);
  CHECK((-float16(2.0f)).bits() == 0xc000);
  CHECK((-float16(0.0f)).bits() == 0x8000);
  CHECK(float16(-0.0f) == float16(0.0f));
  CHECK(bfloat16(2.0f) > bfloat16(1.0f));
  float16 x(1.5f);
  x += float16(0.25f);
  x *= float16(2.0f);
  CHECK(static_cast<float>(x) == 3.5f);
  // One format from the other rounds once (through float, exactly).
  CHECK(bfloat16(float16(1.0f / 3)).bits() == bfloat16(static_cast<float>(float16(1.0f / 3))).bits());
  CHECK(isinf(float16(bfloat16(1e5f))));
  CHECK(static_cast<float>(float16(bfloat16(0.1f))) == static_cast<float>(float16(static_cast<float>(bfloat16(0.1f)))));
  // Mixed with a float, a reduced float reads as a float.
  CHECK(bfloat16(0.5f) + 0.25f == 0.75f);
}
