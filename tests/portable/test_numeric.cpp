// Exhaustive tests of pk::bf16 / pk::fp16 conversions and numeric_traits (host).
//
// Two references, both written here and independent of numeric.hpp:
//  - ref_decode(): the value of a 16-bit pattern from the IEEE formula, in double (std::ldexp).
//  - ref_round(): float -> nearest representable value of the format, in double: scale by the
//    quantum of the binade, floor, compare the remainder with 1/2, ties to the even significand.
//  - The exhaustive sweep over all 2^32 floats uses a third formulation: a sorted table of all
//    ref_decode() values walked alongside the floats in increasing order, comparing with midpoints.
#include <pk/portable/numeric.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Reference description of a binary format: p significand digits (with the implicit bit),
// w exponent bits, bias = 2^(w-1) - 1.
struct format {
  const char* name;
  int p;          // significand digits incl. implicit bit
  int w;          // exponent bits
  int bias() const { return (1 << (w - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  std::uint32_t man_mask() const { return (1u << (p - 1)) - 1u; }
  std::uint32_t exp_mask() const { return ((1u << w) - 1u) << (p - 1); }
  std::uint32_t sign_bit() const { return 1u << 15; }
  std::uint32_t quiet_bit() const { return 1u << (p - 2); }
  std::uint32_t inf_bits() const { return exp_mask(); }
  std::uint32_t max_bits() const { return exp_mask() - 1u; }  // largest finite, positive
  double max_value() const { return std::ldexp(std::ldexp(1.0, p) - 1.0, bias() - (p - 1)); }
};
constexpr format kBf16{"bf16", 8, 8};
constexpr format kFp16{"fp16", 11, 5};

bool is_nan_bits(const format& f, std::uint32_t b) {
  return (b & f.exp_mask()) == f.exp_mask() && (b & f.man_mask()) != 0;
}

// Value of a pattern (NaN patterns return NaN).
double ref_decode(const format& f, std::uint32_t b) {
  const bool neg = (b & f.sign_bit()) != 0;
  const std::uint32_t e = (b & f.exp_mask()) >> (f.p - 1);
  const std::uint32_t m = b & f.man_mask();
  double v;
  if (e == ((1u << f.w) - 1u)) {
    v = m == 0 ? HUGE_VAL : std::nan("");
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), f.emin() - (f.p - 1));
  } else {
    v = std::ldexp(static_cast<double>(m + (1u << (f.p - 1))), static_cast<int>(e) - f.bias() - (f.p - 1));
  }
  return neg ? -v : v;
}

// Correctly rounded (nearest, ties to even) value of x in the format, with +-inf on overflow.
double ref_round(const format& f, double x) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  const double a = std::fabs(x);
  int E = 0;
  std::frexp(a, &E);  // a = m * 2^E, m in [0.5, 1): the binade exponent is E - 1
  const int e = std::max(E - 1, f.emin());
  const int qexp = e - (f.p - 1);               // quantum of the binade (subnormals share emin's)
  const double n = std::ldexp(a, -qexp);        // exact: a has <= 53 bits
  double fl = std::floor(n);
  const double frac = n - fl;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0.0)) fl += 1.0;
  double r = std::ldexp(fl, qexp);
  if (r > f.max_value()) r = HUGE_VAL;          // unbounded-exponent result above max -> inf
  return x < 0 ? -r : r;
}

float f_of_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t bits_of_f(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Same double value and same sign of zero.
bool same_value(double got, double want) {
  return got == want && std::signbit(got) == std::signbit(want);
}

// ---------------------------------------------------------------------------------------------
// Type-parameterised glue.
template <class T>
struct conv;
template <>
struct conv<pk::bf16> {
  static constexpr const format& fmt = kBf16;
  static std::uint16_t from_float(float x) { return pk::to_bf16(x).bits; }
  static float to_float(std::uint16_t b) { return pk::to_float(pk::bf16::from_bits(b)); }
  static std::uint16_t ctor(float x) { return pk::bf16(x).bits; }
  static float implicit(std::uint16_t b) { return pk::bf16::from_bits(b); }
};
template <>
struct conv<pk::fp16> {
  static constexpr const format& fmt = kFp16;
  static std::uint16_t from_float(float x) { return pk::to_fp16(x).bits; }
  static float to_float(std::uint16_t b) { return pk::to_float(pk::fp16::from_bits(b)); }
  static std::uint16_t ctor(float x) { return pk::fp16(x).bits; }
  static float implicit(std::uint16_t b) { return pk::fp16::from_bits(b); }
};

template <class T>
class Portable_Numeric : public ::testing::Test {};
using half_types = ::testing::Types<pk::bf16, pk::fp16>;
TYPED_TEST_SUITE(Portable_Numeric, half_types);

// Checks one conversion float -> T against the expected correctly rounded value; for a NaN input
// the result must be a quiet NaN of the same sign. Returns false (and records) on mismatch.
template <class T>
bool check_round(float x, double want, int& failures) {
  const format& f = conv<T>::fmt;
  const std::uint32_t got = conv<T>::from_float(x);
  bool ok;
  if (std::isnan(x)) {
    ok = is_nan_bits(f, got) && (got & f.quiet_bit()) != 0 &&
         ((got & f.sign_bit()) != 0) == std::signbit(x);
  } else {
    ok = !is_nan_bits(f, got) && same_value(ref_decode(f, got), want);
  }
  if (!ok && ++failures <= 10) {
    ADD_FAILURE() << f.name << ": float " << std::hexfloat << x << " (0x" << std::hex << bits_of_f(x)
                  << ") -> 0x" << got << " = " << std::hexfloat << ref_decode(f, got) << ", want "
                  << want;
  }
  return ok;
}

// (1) Every pattern widens to exactly its reference value; NaN stays NaN with its sign.
TYPED_TEST(Portable_Numeric, ToFloatAllPatterns) {
  const format& f = conv<TypeParam>::fmt;
  int failures = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float got = conv<TypeParam>::to_float(static_cast<std::uint16_t>(b));
    ASSERT_EQ(bits_of_f(got), bits_of_f(conv<TypeParam>::implicit(static_cast<std::uint16_t>(b))));
    const double want = ref_decode(f, b);
    bool ok = std::isnan(want) ? (std::isnan(got) && std::signbit(got) == std::signbit(want))
                               : same_value(got, want);
    if (std::isnan(want)) {
      // Documented NaN widening: bf16 is the exact bit shift (payload and signalling state kept);
      // fp16 keeps sign and payload and comes back quiet, as the hardware cvt does.
      const std::uint32_t want_bits =
          f.p == 8 ? (b << 16)
                   : (((b & 0x8000u) << 16) | 0x7fc00000u | ((b & f.man_mask()) << 13));
      ok = ok && bits_of_f(got) == want_bits;
    }
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << f.name << " 0x" << std::hex << b << " -> " << std::hexfloat << got << ", want " << want;
    }
  }
  EXPECT_EQ(failures, 0);
}

// (1) to_T(to_float(x)) == x for all non-NaN patterns; NaN comes back as x with the quiet bit set.
TYPED_TEST(Portable_Numeric, RoundTripAllPatterns) {
  const format& f = conv<TypeParam>::fmt;
  int failures = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint32_t back = conv<TypeParam>::from_float(conv<TypeParam>::to_float(static_cast<std::uint16_t>(b)));
    const std::uint32_t want = is_nan_bits(f, b) ? (b | f.quiet_bit()) : b;
    if (back != want && ++failures <= 10) {
      ADD_FAILURE() << f.name << " 0x" << std::hex << b << " -> 0x" << back << ", want 0x" << want;
    }
    ASSERT_EQ(conv<TypeParam>::ctor(conv<TypeParam>::to_float(static_cast<std::uint16_t>(b))), back);
  }
  EXPECT_EQ(failures, 0);
}

// (2) For every pair of neighbouring finite values (including max and the first value past it,
// which rounds to inf), of both signs: the exact midpoint goes to the even one, one float ulp
// below goes down, one float ulp above goes up, and the values themselves are exact.
TYPED_TEST(Portable_Numeric, HalfwayPointsTiesToEven) {
  const format& f = conv<TypeParam>::fmt;
  int failures = 0;
  long checked = 0;
  for (std::uint32_t k = 0; k <= f.max_bits(); ++k) {
    const double lo = ref_decode(f, k);
    const double hi = k == f.max_bits() ? std::ldexp(1.0, f.bias() + 1) : ref_decode(f, k + 1);
    const double hi_rounded = k == f.max_bits() ? HUGE_VAL : hi;
    const double mid = (lo + hi) / 2;                  // exact in double
    const float midf = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(midf), mid) << "midpoint not representable in float";
    const double even = (k & 1u) == 0 ? lo : hi_rounded;
    const float below = std::nextafter(midf, 0.0f);
    const float above = std::nextafter(midf, HUGE_VALF);
    for (const double s : {1.0, -1.0}) {
      check_round<TypeParam>(static_cast<float>(s * lo), s * lo, failures);
      check_round<TypeParam>(static_cast<float>(s) * midf, s * even, failures);
      check_round<TypeParam>(static_cast<float>(s) * below, s * lo, failures);
      check_round<TypeParam>(static_cast<float>(s) * above, s * hi_rounded, failures);
      checked += 4;
    }
  }
  std::printf("[ %s ] %ld values around halfway points checked\n", f.name, checked);
  EXPECT_EQ(failures, 0);
}

// (2) Edge cases named explicitly (both formats; the fp16-specific ones are its subnormal edge,
// overflow threshold and signed zero).
TYPED_TEST(Portable_Numeric, EdgeCases) {
  const format& f = conv<TypeParam>::fmt;
  int failures = 0;
  const float denorm_min = std::ldexp(1.0f, f.emin() - (f.p - 1));   // smallest subnormal of T
  const float min_normal = std::ldexp(1.0f, f.emin());
  const float fmax = static_cast<float>(f.max_value());
  const float overflow_tie = static_cast<float>(f.max_value() + std::ldexp(1.0, f.bias() - f.p));
  const float cases[] = {0.0f, -0.0f, 1.0f, -1.0f, HUGE_VALF, -HUGE_VALF,
                         std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(),
                         std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                         -std::numeric_limits<float>::denorm_min(),
                         denorm_min, denorm_min / 2, std::nextafter(denorm_min / 2, 0.0f),
                         std::nextafter(denorm_min / 2, 1.0f), denorm_min * 1.5f, denorm_min * 2.5f,
                         -denorm_min / 2, min_normal, std::nextafter(min_normal, 0.0f),
                         std::nextafter(min_normal, 1.0f), min_normal - denorm_min / 2,
                         min_normal - denorm_min / 4, fmax, -fmax, overflow_tie,
                         std::nextafter(overflow_tie, 0.0f), std::nextafter(overflow_tie, HUGE_VALF),
                         -overflow_tie, 65504.0f, 65519.0f, 65520.0f, 65536.0f, 1e5f, -1e5f,
                         1.0f + 0x1p-8f, 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f};
  for (float x : cases) check_round<TypeParam>(x, ref_round(f, x), failures);

  // NaNs: quiet and signalling, both signs, assorted payloads -> quiet NaN with the same sign.
  const std::uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu,
                                0x7fffffffu, 0xffffffffu, 0x7fa00000u, 0x7f802000u, 0x7f800100u};
  for (std::uint32_t u : nans) check_round<TypeParam>(f_of_bits(u), 0.0, failures);
  EXPECT_EQ(failures, 0);
}

// Explicit fp16 values, independent of both references (hand-computed).
TEST(Portable_NumericFp16, KnownValues) {
  EXPECT_EQ(pk::to_fp16(1.0f).bits, 0x3c00u);
  EXPECT_EQ(pk::to_fp16(-2.0f).bits, 0xc000u);
  EXPECT_EQ(pk::to_fp16(65504.0f).bits, 0x7bffu);
  EXPECT_EQ(pk::to_fp16(65519.996f).bits, 0x7bffu);
  EXPECT_EQ(pk::to_fp16(65520.0f).bits, 0x7c00u);    // tie with odd max -> inf
  EXPECT_EQ(pk::to_fp16(0x1p-24f).bits, 0x0001u);     // smallest subnormal
  EXPECT_EQ(pk::to_fp16(0x1p-25f).bits, 0x0000u);     // tie -> even (0)
  EXPECT_EQ(pk::to_fp16(0x1.000002p-25f).bits, 0x0001u);
  EXPECT_EQ(pk::to_fp16(0x3p-25f).bits, 0x0002u);     // 1.5 * 2^-24 tie -> 2
  EXPECT_EQ(pk::to_fp16(0x1.ff8p-15f).bits, 0x03ffu); // largest subnormal
  EXPECT_EQ(pk::to_fp16(0x1.ffcp-15f).bits, 0x0400u); // tie with odd 0x3ff -> smallest normal
  EXPECT_EQ(pk::to_fp16(-0.0f).bits, 0x8000u);
  EXPECT_EQ(pk::to_fp16(HUGE_VALF).bits, 0x7c00u);
  EXPECT_EQ(pk::to_fp16(-HUGE_VALF).bits, 0xfc00u);
  EXPECT_EQ(pk::to_fp16(f_of_bits(0x7f800001u)).bits & 0x7e00u, 0x7e00u);
  EXPECT_EQ(pk::to_fp16(f_of_bits(0xff800001u)).bits & 0xfe00u, 0xfe00u);
  EXPECT_EQ(pk::to_bf16(1.0f).bits, 0x3f80u);
  EXPECT_EQ(pk::to_bf16(0x1.01p0f).bits, 0x3f80u);    // tie -> even
  EXPECT_EQ(pk::to_bf16(0x1.03p0f).bits, 0x3f82u);    // tie -> even (up)
  EXPECT_EQ(pk::to_bf16(std::numeric_limits<float>::max()).bits, 0x7f80u);
  EXPECT_EQ(pk::to_bf16(f_of_bits(0xff800001u)).bits, 0xffc0u);
}

// (2) All 2^32 floats against a table walk (third formulation of the reference): positive floats
// in increasing bit order are increasing values, so a cursor into the sorted table of all finite
// values of T (plus 2^(emax+1), the first value past max, which stands for inf) finds the two
// neighbours of every float in O(1); the negative float is checked from the same neighbours.
TYPED_TEST(Portable_Numeric, AllFloatsExhaustive) {
  const format& f = conv<TypeParam>::fmt;
  std::vector<double> vals;
  for (std::uint32_t k = 0; k <= f.max_bits(); ++k) vals.push_back(ref_decode(f, k));
  vals.push_back(std::ldexp(1.0, f.bias() + 1));       // index max_bits + 1 == inf_bits
  for (std::size_t i = 1; i < vals.size(); ++i) ASSERT_LT(vals[i - 1], vals[i]);
  std::vector<double> mids(vals.size() - 1);
  for (std::size_t i = 0; i + 1 < vals.size(); ++i) mids[i] = (vals[i] + vals[i + 1]) / 2;

  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t failures = 0;
  std::size_t k = 0;
  const std::size_t last = vals.size() - 1;
  for (std::uint32_t u = 0; u < 0x7f800000u; ++u) {      // all finite non-negative floats
    const double d = f_of_bits(u);
    while (k < last && vals[k + 1] <= d) ++k;
    std::uint32_t want;
    if (k == last || d == vals[k]) {
      want = static_cast<std::uint32_t>(k);              // k == last: beyond 2^(emax+1) -> inf
    } else if (d < mids[k]) {
      want = static_cast<std::uint32_t>(k);
    } else if (d > mids[k]) {
      want = static_cast<std::uint32_t>(k + 1);
    } else {
      want = static_cast<std::uint32_t>((k & 1u) == 0 ? k : k + 1);   // even significand LSB
    }
    const std::uint32_t got_pos = conv<TypeParam>::from_float(f_of_bits(u));
    const std::uint32_t got_neg = conv<TypeParam>::from_float(f_of_bits(u | 0x80000000u));
    if (got_pos != want || got_neg != (want | f.sign_bit())) {
      if (++failures <= 10) {
        ADD_FAILURE() << f.name << ": float 0x" << std::hex << u << " -> 0x" << got_pos << " / 0x"
                      << got_neg << ", want 0x" << want;
      }
    }
  }
  // inf and all NaNs, both signs.
  for (std::uint64_t u = 0x7f800000u; u <= 0x7fffffffu; ++u) {
    for (std::uint32_t s : {0u, 0x80000000u}) {
      const std::uint32_t got = conv<TypeParam>::from_float(f_of_bits(static_cast<std::uint32_t>(u) | s));
      const bool ok = u == 0x7f800000u
                          ? got == (f.inf_bits() | (s ? f.sign_bit() : 0u))
                          : (is_nan_bits(f, got) && (got & f.quiet_bit()) != 0 &&
                             ((got & f.sign_bit()) != 0) == (s != 0));
      if (!ok && ++failures <= 10) {
        ADD_FAILURE() << f.name << ": float 0x" << std::hex << (u | s) << " -> 0x" << got;
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ %s ] all 2^32 floats checked in %.2f s\n", f.name, secs);
  EXPECT_EQ(failures, 0u);
}

// (2) Random floats against ref_round (the arithmetic reference). Redundant with the exhaustive
// sweep for the rounding rule; kept as the cross-check of the two reference formulations.
TYPED_TEST(Portable_Numeric, RandomFloatsVsArithmeticReference) {
  const format& f = conv<TypeParam>::fmt;
  constexpr std::uint64_t seed = 0x9e3779b97f4a7c15ull;
  constexpr int n = 10'000'000;
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  std::printf("[ %s ] seed=%llu n=%d\n", f.name, static_cast<unsigned long long>(seed), n);
  std::mt19937_64 rng(seed);
  int failures = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t r = rng();
    // Half of the draws uniform over all bit patterns, half concentrated on the format's range
    // (|exponent| small) so that subnormals and rounding of normal values are well covered.
    std::uint32_t u = static_cast<std::uint32_t>(r);
    if (r >> 63) {
      const std::uint32_t e = 127u - 30u + static_cast<std::uint32_t>((r >> 32) % 50u);  // 2^-30 .. 2^19
      u = (u & 0x807fffffu) | (e << 23);
    }
    const float x = f_of_bits(u);
    check_round<TypeParam>(x, ref_round(f, x), failures);
    if (failures > 10) break;
  }
  EXPECT_EQ(failures, 0);
}

// The arithmetic reference agrees with the table at every halfway point (checks the references).
TYPED_TEST(Portable_Numeric, ReferencesAgree) {
  const format& f = conv<TypeParam>::fmt;
  for (std::uint32_t k = 0; k < f.max_bits(); ++k) {
    const double lo = ref_decode(f, k), hi = ref_decode(f, k + 1);
    ASSERT_EQ(ref_round(f, lo), lo);
    ASSERT_EQ(ref_round(f, (lo + hi) / 2), (k & 1u) ? hi : lo) << std::hex << k;
  }
}

// ---------------------------------------------------------------------------------------------
// numeric_traits and layout.
TEST(Portable_NumericTraits, Epsilon) {
  EXPECT_EQ(pk::numeric_traits<pk::bf16>::epsilon(), std::ldexp(1.0, -7));
  EXPECT_EQ(pk::numeric_traits<pk::fp16>::epsilon(), std::ldexp(1.0, -10));
  EXPECT_EQ(pk::numeric_traits<float>::epsilon(), static_cast<double>(std::numeric_limits<float>::epsilon()));
  EXPECT_EQ(pk::numeric_traits<double>::epsilon(), std::numeric_limits<double>::epsilon());
  // epsilon is the distance from 1 to the next representable value.
  EXPECT_EQ(ref_decode(kBf16, 0x3f81u) - 1.0, pk::numeric_traits<pk::bf16>::epsilon());
  EXPECT_EQ(ref_decode(kFp16, 0x3c01u) - 1.0, pk::numeric_traits<pk::fp16>::epsilon());
  EXPECT_EQ(pk::numeric_traits<std::int32_t>::epsilon(), 0.0);
}

template <class T, class Std>
void expect_traits_match_std() {
  using tr = pk::numeric_traits<T>;
  EXPECT_EQ(tr::digits, std::numeric_limits<Std>::digits);
  EXPECT_EQ(tr::lowest(), std::numeric_limits<Std>::lowest());
  EXPECT_EQ(tr::max(), std::numeric_limits<Std>::max());
  EXPECT_EQ(tr::is_floating, !std::numeric_limits<Std>::is_integer);
  EXPECT_EQ(tr::has_infinity, std::numeric_limits<Std>::has_infinity);
}

TEST(Portable_NumericTraits, MatchStdForBuiltins) {
  expect_traits_match_std<float, float>();
  expect_traits_match_std<double, double>();
  expect_traits_match_std<std::int8_t, std::int8_t>();
  expect_traits_match_std<std::uint8_t, std::uint8_t>();
  expect_traits_match_std<std::int32_t, std::int32_t>();
  expect_traits_match_std<std::int64_t, std::int64_t>();
  EXPECT_TRUE(std::isinf(pk::numeric_traits<float>::infinity()));
  EXPECT_TRUE(std::isnan(pk::numeric_traits<double>::quiet_nan()));
  EXPECT_EQ(pk::numeric_traits<float>::min_normal(), std::numeric_limits<float>::min());
}

template <class T>
void expect_half_traits(const format& f, const char* name) {
  using tr = pk::numeric_traits<T>;
  EXPECT_STREQ(tr::name(), name);
  EXPECT_TRUE(tr::is_floating);
  EXPECT_TRUE(tr::has_infinity);
  EXPECT_EQ(tr::digits, f.p);
  EXPECT_EQ(static_cast<double>(pk::to_float(tr::max())), f.max_value());
  EXPECT_EQ(static_cast<double>(pk::to_float(tr::lowest())), -f.max_value());
  EXPECT_EQ(static_cast<double>(pk::to_float(tr::min_normal())), std::ldexp(1.0, f.emin()));
  EXPECT_TRUE(std::isinf(pk::to_float(tr::infinity())) && pk::to_float(tr::infinity()) > 0);
  EXPECT_TRUE(std::isnan(pk::to_float(tr::quiet_nan())));
  EXPECT_NE(tr::quiet_nan().bits & f.quiet_bit(), 0u);
  EXPECT_FALSE(std::signbit(pk::to_float(tr::quiet_nan())));
}

TEST(Portable_NumericTraits, HalfTypes) {
  expect_half_traits<pk::bf16>(kBf16, "bf16");
  expect_half_traits<pk::fp16>(kFp16, "f16");
  EXPECT_STREQ(pk::numeric_traits<float>::name(), "f32");
  EXPECT_STREQ(pk::numeric_traits<std::int32_t>::name(), "i32");
}

static_assert(std::is_same_v<pk::numeric_traits<pk::bf16>::accum_type, float>);
static_assert(std::is_same_v<pk::numeric_traits<pk::fp16>::accum_type, float>);
static_assert(std::is_same_v<pk::numeric_traits<float>::accum_type, float>);
static_assert(std::is_same_v<pk::numeric_traits<double>::accum_type, double>);
static_assert(std::is_same_v<pk::numeric_traits<std::int8_t>::accum_type, std::int64_t>);
static_assert(std::is_same_v<pk::numeric_traits<std::uint8_t>::accum_type, std::int64_t>);
static_assert(std::is_same_v<pk::numeric_traits<std::int32_t>::accum_type, std::int64_t>);
static_assert(std::is_same_v<pk::numeric_traits<std::int64_t>::accum_type, std::int64_t>);

static_assert(sizeof(pk::bf16) == 2 && alignof(pk::bf16) == 2);
static_assert(sizeof(pk::fp16) == 2 && alignof(pk::fp16) == 2);
static_assert(sizeof(pk::bf16x2) == 4 && alignof(pk::bf16x2) == 4);
static_assert(sizeof(pk::fp16x2) == 4 && alignof(pk::fp16x2) == 4);
static_assert(std::is_trivial_v<pk::bf16> && std::is_standard_layout_v<pk::bf16>);
static_assert(std::is_trivial_v<pk::fp16> && std::is_standard_layout_v<pk::fp16>);
static_assert(std::is_trivially_copyable_v<pk::bf16x2> && std::is_trivially_copyable_v<pk::fp16x2>);
static_assert(!std::is_convertible_v<float, pk::bf16> && std::is_constructible_v<pk::bf16, float>);
static_assert(!std::is_convertible_v<float, pk::fp16> && std::is_constructible_v<pk::fp16, float>);
static_assert(std::is_convertible_v<pk::bf16, float> && std::is_convertible_v<pk::fp16, float>);

#if PK_NUMERIC_CONSTEXPR_CONVERSIONS
static_assert(pk::to_bf16(1.0f).bits == 0x3f80u);
static_assert(pk::to_fp16(1.0f).bits == 0x3c00u);
static_assert(pk::to_fp16(0x1p-24f).bits == 0x0001u);
static_assert(pk::to_float(pk::fp16::from_bits(0x0001u)) == 0x1p-24f);
static_assert(pk::to_float(pk::bf16::from_bits(0xc040u)) == -3.0f);
static_assert(static_cast<float>(pk::bf16(2.5f)) == 2.5f);
#endif


// ---------------------------------------------------------------------------------------------
// FP8 e4m3 (fn: bias 7, max 448, NaN S.1111.111; fnuz: bias 8, max 240, NaN 0x80, no -0). Reference written
// here from the bit fields, in double; rounding by exhaustive search over every finite code.
double ref_e4m3(std::uint8_t b, bool fnuz) {
  const int bias = fnuz ? 8 : 7;
  if (fnuz ? b == 0x80 : (b & 0x7f) == 0x7f) return std::numeric_limits<double>::quiet_NaN();
  const int e = (b >> 3) & 0xf, m = b & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, 1 - bias) : std::ldexp(1.0 + m / 8.0, e - bias);
  return (b & 0x80) ? -mag : mag;
}
// The code nearest to x among the finite codes of x's sign (fnuz: +0 too, it has no -0), ties to the even
// code (lowest bit 0: the even significand); infinities saturate to the largest finite value of their sign; NaN
// gives the format's NaN (fn: sign kept).
std::uint8_t ref_round_e4m3(double x, bool fnuz) {
  if (std::isnan(x)) return fnuz ? 0x80 : static_cast<std::uint8_t>((std::signbit(x) ? 0x80 : 0) | 0x7f);
  const bool neg = std::signbit(x);
  // Past the largest finite value (infinities too): saturate (a plain distance search would tie in double).
  if (std::fabs(x) >= (fnuz ? 240.0 : 448.0)) return static_cast<std::uint8_t>((neg ? 0x80 : 0) | (fnuz ? 0x7f : 0x7e));
  int best = -1;
  double best_d = 0;
  for (int c = 0; c < 256; ++c) {
    const double v = ref_e4m3(static_cast<std::uint8_t>(c), fnuz);
    if (std::isnan(v)) continue;
    const bool allowed = ((c & 0x80) != 0) == neg || (fnuz && c == 0);
    if (!allowed) continue;
    const double d = std::fabs(v - x);
    if (best < 0 || d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return static_cast<std::uint8_t>(best);
}

template <bool Fnuz>
void check_e4m3() {
  using T = pk::basic_e4m3<Fnuz>;
  // Widening: every code, exactly.
  for (int c = 0; c < 256; ++c) {
    const double r = ref_e4m3(static_cast<std::uint8_t>(c), Fnuz);
    const float got = T::from_bits(static_cast<std::uint8_t>(c));
    if (std::isnan(r)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), r) << "code " << c;
      EXPECT_EQ(std::signbit(got), std::signbit(r)) << "code " << c;
    }
  }
  // Narrowing: every code's value and the midpoints (and a hair either side) between neighbours, values past
  // the largest finite one, infinities, NaN, and random floats over the whole range.
  std::vector<double> vals;
  for (int c = 0; c < 256; ++c) {
    const double v = ref_e4m3(static_cast<std::uint8_t>(c), Fnuz);
    if (!std::isnan(v)) vals.push_back(v);
  }
  std::sort(vals.begin(), vals.end());
  std::vector<float> xs;
  for (std::size_t i = 0; i < vals.size(); ++i) {
    xs.push_back(static_cast<float>(vals[i]));
    if (i + 1 < vals.size()) {
      const float mid = static_cast<float>((vals[i] + vals[i + 1]) / 2);
      xs.push_back(mid);
      xs.push_back(std::nextafter(mid, -INFINITY));
      xs.push_back(std::nextafter(mid, INFINITY));
    }
  }
  const float mx = T::max();
  for (float x : {mx, mx * 1.03f, mx * 1.07f, mx * 2, 1e30f, INFINITY, -mx * 1.07f, -INFINITY, 0.0f, -0.0f, 1e-30f, -1e-30f})
    xs.push_back(x);
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> u(-600.0f, 600.0f);
  std::uniform_real_distribution<float> small(-0.02f, 0.02f);
  for (int i = 0; i < 20000; ++i) xs.push_back(u(rng)), xs.push_back(small(rng));
  for (float x : xs) {
    const std::uint8_t want = ref_round_e4m3(x, Fnuz);
    const std::uint8_t got = T(x).bits;
    ASSERT_EQ(got, want) << (Fnuz ? "fnuz" : "fn") << ": x = " << x << " (" << std::hexfloat << x << std::defaultfloat
                         << "): got " << ref_e4m3(got, Fnuz) << ", want " << ref_e4m3(want, Fnuz);
  }
  const std::uint8_t nan = T(std::numeric_limits<float>::quiet_NaN()).bits;
  EXPECT_TRUE(std::isnan(ref_e4m3(nan, Fnuz)));
}

TEST(Portable_Fp8, E4m3fnAgainstTheReference) { check_e4m3<false>(); }
TEST(Portable_Fp8, E4m3fnuzAgainstTheReference) { check_e4m3<true>(); }

TEST(Portable_NumericTraits, ConstexprConversionsAvailable) {
  EXPECT_EQ(PK_NUMERIC_CONSTEXPR_CONVERSIONS, 1) << "this host compiler lacks __builtin_bit_cast";
}

}  // namespace

// On a host compiler pk::fp16 converts through an out-of-line copy of the portable sequences (numeric.hpp), so
// the typed tests above check those sequences, which define the bits of every path. This keeps the two the same
// bits, NaN payloads included (the typed tests compare NaNs with the reference only as NaNs): every fp16 pattern
// widened, and every float NaN (2^24 patterns) narrowed.
TEST(Portable_NumericFp16, CompilerConversionsAreThePortableBits) {
  for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    ASSERT_EQ(bits_of_f(pk::detail::fp16_bits_to_float(b)), bits_of_f(pk::detail::fp16_bits_to_float_portable(b)))
        << "fp16 0x" << std::hex << h;
  }
  for (std::uint32_t m = 1; m <= 0x7fffffu; ++m)
    for (std::uint32_t s : {0u, 0x80000000u}) {
      const float x = f_of_bits(s | 0x7f800000u | m);
      ASSERT_EQ(pk::detail::float_to_fp16_bits(x), pk::detail::float_to_fp16_bits_portable(x))
          << "float 0x" << std::hex << (s | 0x7f800000u | m);
    }
}

// The GPU paths (numeric.hpp) convert with the hardware instruction and select a NaN's bits with bf16_nan_bits,
// fp16_nan_bits and fp16_nan_to_float_bits (the instruction's non-NaN results are compared with the portable
// sequences on the GPU by test_numeric_gpu.cpp). Those selections are the portable sequences' NaN bits for
// every NaN: each fp16 NaN widened, each float NaN narrowed to bf16 and to fp16.
TEST(Portable_Numeric, GpuNanSelectionsAreThePortableBits) {
  for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
    if ((h & 0x7fffu) <= 0x7c00u) continue;
    const auto b = static_cast<std::uint16_t>(h);
    ASSERT_EQ(pk::detail::fp16_nan_to_float_bits(b), bits_of_f(pk::detail::fp16_bits_to_float_portable(b)))
        << "fp16 0x" << std::hex << h;
  }
  for (std::uint32_t m = 1; m <= 0x7fffffu; ++m)
    for (std::uint32_t s : {0u, 0x80000000u}) {
      const std::uint32_t u = s | 0x7f800000u | m;
      ASSERT_EQ(pk::detail::bf16_nan_bits(u), pk::detail::float_to_bf16_bits_portable(f_of_bits(u))) << "float 0x" << std::hex << u;
      ASSERT_EQ(pk::detail::fp16_nan_bits(u), pk::detail::float_to_fp16_bits_portable(f_of_bits(u))) << "float 0x" << std::hex << u;
    }
}

// pk::widen, the value conversion of the reduction and row kernels' loads: the exact conversion's bits for every
// non-NaN fp16 and a NaN for every NaN (its payload is not promised: the GPU's cvt.f32.f16 returns the canonical
// NaN, which test_numeric_gpu.cpp checks there); the plain conversion for the other types.
TEST(Portable_Numeric, WidenIsTheValueForEveryFp16) {
  for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto x = pk::fp16::from_bits(static_cast<std::uint16_t>(h));
    const float got = pk::widen<float>(x), want = pk::detail::fp16_bits_to_float_portable(x.bits);
    const double got_d = pk::widen<double>(x);
    if (want != want) {
      ASSERT_TRUE(got != got && got_d != got_d) << "fp16 0x" << std::hex << h;
    } else {
      ASSERT_EQ(bits_of_f(got), bits_of_f(want)) << "fp16 0x" << std::hex << h;
      ASSERT_EQ(got_d, static_cast<double>(want)) << "fp16 0x" << std::hex << h;
    }
  }
  for (std::uint32_t h = 0; h <= 0xffffu; h += 7) {
    const auto b = pk::bf16::from_bits(static_cast<std::uint16_t>(h));
    ASSERT_EQ(bits_of_f(pk::widen<float>(b)), bits_of_f(static_cast<float>(b))) << "bf16 0x" << std::hex << h;
  }
  ASSERT_EQ(pk::widen<double>(0.1f), static_cast<double>(0.1f));
  ASSERT_EQ(pk::widen<std::int64_t>(std::int8_t{-7}), -7);
}
