// Portable 16-bit floating-point storage types (bf16, fp16), their conversions and numeric_traits.
//
// The conversions give the same bits on the host, under nvcc and under clang HIP: the portable integer
// sequences below define them, and a GPU uses its conversion instruction wherever that gives the same bits
// (every non-NaN value; a NaN's bits are selected), which do not depend on the device's FTZ/DAZ mode. One
// exception, by name: pk::widen, the value conversion of kernels that compute on loaded elements, lets an fp16
// NaN lose its payload (one instruction on the GPU instead of a select). No
// cuda_fp16.h / hip_fp16.h. They are constexpr wherever the compiler has __builtin_bit_cast
// (g++ >= 11, clang >= 9, nvcc 11.7+ host and device); see PK_DETAIL_BIT_CAST_CONSTEXPR.
//
//! Usage:
//! \code
//!   pk::bf16 h{1.0f / 3.0f};            // explicit, round to nearest even
//!   float f = h;                        // implicit widening, exact
//!   auto v = pk::to_fp16(f);            // free-function spelling
//!   static_assert(pk::numeric_traits<pk::bf16>::epsilon() == 0x1p-7);
//! \endcode
#pragma once

#include <cstdint>
#include <type_traits>

#include <pk/core/compiler.hpp>
#include <pk/dtype.hpp>
#include <pk/portable/macros.hpp>

#if PK_COMPILER_CUDA
#include <nv/target>  // NV_IF_TARGET: CCCL's target predicates (no raw arch macro here)
#endif

// Fallback for the host/device attribute macros, should a macros.hpp without them be found first
// (kept on purpose: STYLE §2.5 allows attribute macros).
#ifndef PK_HOST_DEVICE
#if PK_COMPILER_GPU
#define PK_HOST_DEVICE __host__ __device__
#else
#define PK_HOST_DEVICE
#endif
#endif
#ifndef PK_FORCEINLINE
#define PK_FORCEINLINE inline
#endif

// Feature predicate: 1 when the conversions are constant expressions (constexpr bit cast exists).
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define PK_DETAIL_HAS_BUILTIN_BIT_CAST 1
#endif
#endif
#ifdef PK_DETAIL_HAS_BUILTIN_BIT_CAST
#define PK_DETAIL_BIT_CAST_CONSTEXPR constexpr
#define PK_NUMERIC_CONSTEXPR_CONVERSIONS 1
#else
#define PK_DETAIL_BIT_CAST_CONSTEXPR
#define PK_NUMERIC_CONSTEXPR_CONVERSIONS 0
#endif

namespace pk {

namespace detail {

//! std::bit_cast for C++17 device code (nvcc -std=c++17 has no <bit> bit_cast).
template <class To, class From>
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "bit_cast: sizes differ");
  static_assert(std::is_trivially_copyable<To>::value && std::is_trivially_copyable<From>::value,
                "bit_cast: types must be trivially copyable");
#ifdef PK_DETAIL_HAS_BUILTIN_BIT_CAST
  return __builtin_bit_cast(To, from);
#else
  To to;
  __builtin_memcpy(&to, &from, sizeof(To));
  return to;
#endif
}

// ---- bf16 <-> float: bf16 is the upper half of a binary32. ----

PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR float bf16_bits_to_float(std::uint16_t h) noexcept {
  // Exact. A NaN keeps its payload bits (a signalling bf16 NaN stays a signalling float NaN).
  return bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

//! The portable float -> bf16 sequence: round to nearest even; a NaN keeps its sign and top payload bits,
//! made quiet.
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR std::uint16_t float_to_bf16_bits_portable(float f) noexcept {
  std::uint32_t u = bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep sign and the top 7 payload bits, set the quiet bit (0x0040 = mantissa MSB).
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  }
  // Round to nearest even on the 16 dropped bits: add 0x7fff, plus 1 if the kept LSB is odd,
  // so an exact tie (0x8000) carries only into an odd LSB. A carry out of the mantissa bumps the
  // exponent, which is correct (and turns values >= max + half ulp into inf).
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// ---- fp16 (IEEE binary16) <-> float. ----

#if PK_COMPILER_CUDA
// The hardware conversions (every CUDA target of pk is sm_80 or later, which has all three). Each gives the
// portable sequence's bits for every non-NaN value (tests/portable/test_numeric_gpu.cpp compares them on the
// GPU); a NaN's bits depend on the instruction ptxas picks (the paired fp16 widening, HADD2.F32, returns the
// canonical 0x7fffffff on the H200), so the callers select the NaN bits themselves. The portable sequences
// inlined at every load and store cost ~15 integer instructions an fp16 element, which made fp16 reductions
// compute-bound (0.59x CUB at 2^28 on the H200, bench/results/reduction-h200-2026-11-30.md), and with their
// branches made the fp16 reduction and row kernels 2.5-3.5x slower to compile than the bf16 ones.
__device__ PK_FORCEINLINE float fp16_bits_to_float_hw(std::uint16_t h) noexcept {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ PK_FORCEINLINE std::uint16_t float_to_fp16_bits_hw(float f) noexcept {
  std::uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ PK_FORCEINLINE std::uint16_t float_to_bf16_bits_hw(float f) noexcept {
  std::uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif

//! A NaN's bits in the portable sequences, for the GPU paths that select them: bf16 and fp16 keep the sign
//! and the top payload bits with the quiet bit set; fp16 -> float keeps the whole payload, made quiet.
PK_HOST_DEVICE PK_FORCEINLINE constexpr std::uint16_t bf16_nan_bits(std::uint32_t u) noexcept {
  return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
}
PK_HOST_DEVICE PK_FORCEINLINE constexpr std::uint16_t fp16_nan_bits(std::uint32_t u) noexcept {
  return static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
}
PK_HOST_DEVICE PK_FORCEINLINE constexpr std::uint32_t fp16_nan_to_float_bits(std::uint16_t h) noexcept {
  return (static_cast<std::uint32_t>(h & 0x8000u) << 16) | 0x7fc00000u | (static_cast<std::uint32_t>(h & 0x3ffu) << 13);
}

//! The portable fp16 -> float sequence: exact; a NaN comes back quiet with its payload (cvt.f32.f16's bits).
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR float fp16_bits_to_float_portable(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) {
    // inf, or NaN made quiet (0x400000 = float quiet bit), payload kept, as cvt.f32.f16 does.
    return bit_cast<float>(sign | 0x7f800000u | (man << 13) | (man != 0 ? 0x400000u : 0u));
  }
  if (exp == 0) {
    // Zero or subnormal: value = man * 2^-24. The int->float conversion and the multiplication by a
    // power of two are exact, and the result (>= 2^-24) is a normal float, so FTZ cannot touch it.
    return bit_cast<float>(sign | bit_cast<std::uint32_t>(static_cast<float>(man) * 0x1p-24f));
  }
  // Normal: rebias the exponent from 15 to 127 (127 - 15 = 112).
  return bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

//! The portable float -> fp16 sequence: round to nearest even, subnormal results, overflow to inf; a NaN
//! keeps its sign and top payload bits, made quiet.
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR std::uint16_t float_to_fp16_bits_portable(float f) noexcept {
  const std::uint32_t u = bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {
    // NaN: quiet (0x0200 = fp16 quiet bit), sign and top 9 payload bits kept.
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x477ff000u) {
    // >= 65520 = max (65504) + half an ulp: the tie goes to the even neighbour, which is 2^16 -> inf.
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  }
  if (a >= 0x38800000u) {
    // Normal fp16 range [2^-14, 65520): rebias (subtract 112 << 23), then round the 13 dropped
    // bits to nearest even as in float_to_bf16_bits_portable. A mantissa carry bumps the exponent correctly.
    a -= 0x38000000u;
    a += 0xfffu + ((a >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (a >> 13));
  }
  if (a <= 0x33000000u) {
    // |f| <= 2^-25 = half the smallest subnormal (2^-24): rounds to +-0 (the tie goes to even 0).
    return static_cast<std::uint16_t>(sign);
  }
  // Subnormal fp16: result = round(m * 2^(e - 150) / 2^-24) = round(m >> (126 - e)), with m the
  // 24-bit significand and e the biased float exponent (102..112, so the shift is 14..24).
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - e;
  std::uint32_t r = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  r += (rem > half || (rem == half && (r & 1u))) ? 1u : 0u;  // may carry into 0x400 = min normal
  return static_cast<std::uint16_t>(sign | r);
}

#if !PK_COMPILER_GPU
//! Host compilers (the emulator): the portable sequences out of line. Inlined at every load and store of the
//! unrolled emulated kernels they made the fp16 instances slow to compile under the sanitizers (rows_f16 for
//! host_sm80 with clang-19: 93 s, 39 s with the sequences out of line; the 11 fp16 kernel TUs of host_sm80: 437 s
//! of CPU, 329 s out of line). The compiler's _Float16 compiled rows_f16 in 60 s, and is a soft-float library
//! call on x86-64 without F16C: 30x slower in the exhaustive conversion tests.
[[gnu::noinline]] inline float fp16_bits_to_float_outlined(std::uint16_t h) noexcept {
  return fp16_bits_to_float_portable(h);
}
[[gnu::noinline]] inline std::uint16_t float_to_fp16_bits_outlined(float f) noexcept {
  return float_to_fp16_bits_portable(f);
}
#endif

// The conversions pk uses: the portable sequences' bits for every input, through the fastest path each
// compiler has. tests/portable/test_numeric.cpp checks the sequences exhaustively through pk::fp16 on the host
// (and that the host path is theirs for every NaN); test_numeric_gpu.cpp checks the CUDA paths on the GPU.
// On the GPUs: the conversion instruction, and the NaN bits selected without a branch.
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR std::uint16_t float_to_bf16_bits(float f) noexcept {
#if PK_COMPILER_CUDA
  if (!__builtin_is_constant_evaluated()) {
    NV_IF_TARGET(NV_IS_DEVICE, (const std::uint16_t hw = float_to_bf16_bits_hw(f);
                                return f == f ? hw : bf16_nan_bits(bit_cast<std::uint32_t>(f));))
  }
#endif
  return float_to_bf16_bits_portable(f);
}

PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR float fp16_bits_to_float(std::uint16_t h) noexcept {
#if PK_COMPILER_CUDA
  if (!__builtin_is_constant_evaluated()) {
    NV_IF_TARGET(NV_IS_DEVICE, (const float hw = fp16_bits_to_float_hw(h);
                                return (h & 0x7fffu) > 0x7c00u ? bit_cast<float>(fp16_nan_to_float_bits(h)) : hw;))
  }
#elif PK_COMPILER_HIP
  // clang's _Float16 (v_cvt_f32_f16 on the GPU; the host pass converts in software): exact for every
  // non-NaN value. The portable sequence instead made the fp16 kernels 3-4x larger than the bf16 ones on AMD
  // (rows_f16: 58 s of clang-19 for gfx1100 against 14 s for rows_bf16).
  if (!__builtin_is_constant_evaluated()) {
    const float hw = static_cast<float>(__builtin_bit_cast(_Float16, h));
    return (h & 0x7fffu) > 0x7c00u ? bit_cast<float>(fp16_nan_to_float_bits(h)) : hw;
  }
#else
  if (!__builtin_is_constant_evaluated()) return fp16_bits_to_float_outlined(h);
#endif
  return fp16_bits_to_float_portable(h);
}

//! An fp16's value for arithmetic: fp16_bits_to_float's bits for every non-NaN input; a NaN gives a quiet NaN whose
//! payload is not kept. On CUDA one cvt.f32.f16, which returns the canonical NaN 0x7fffffff for every fp16 NaN
//! (H200: all 2046 of them), where fp16_bits_to_float selects the portable bits with about five more
//! instructions an element. The loads of the reduction and row kernels use it (pk::widen): their results do not
//! promise a NaN's payload, and arithmetic on the GPU does not keep one either.
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR float fp16_bits_to_float_value(std::uint16_t h) noexcept {
#if PK_COMPILER_CUDA
  if (!__builtin_is_constant_evaluated()) {
    NV_IF_TARGET(NV_IS_DEVICE, (return fp16_bits_to_float_hw(h);))
  }
#elif PK_COMPILER_HIP
  if (!__builtin_is_constant_evaluated()) return static_cast<float>(__builtin_bit_cast(_Float16, h));
#endif
  return fp16_bits_to_float(h);
}

PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR std::uint16_t float_to_fp16_bits(float f) noexcept {
#if PK_COMPILER_CUDA
  if (!__builtin_is_constant_evaluated()) {
    NV_IF_TARGET(NV_IS_DEVICE, (const std::uint16_t hw = float_to_fp16_bits_hw(f);
                                return f == f ? hw : fp16_nan_bits(bit_cast<std::uint32_t>(f));))
  }
#elif PK_COMPILER_HIP
  // clang's _Float16 conversion (v_cvt_f16_f32 on the GPU): round to nearest even with subnormal results
  // and overflow to inf.
  if (!__builtin_is_constant_evaluated()) {
    const std::uint16_t hw = __builtin_bit_cast(std::uint16_t, static_cast<_Float16>(f));
    return f == f ? hw : fp16_nan_bits(bit_cast<std::uint32_t>(f));
  }
#else
  if (!__builtin_is_constant_evaluated()) return float_to_fp16_bits_outlined(f);
#endif
  return float_to_fp16_bits_portable(f);
}

}  // namespace detail

//! bfloat16 storage type: 1 sign, 8 exponent, 7 mantissa bits. Arithmetic happens in float through
//! the implicit conversion; construction from float is explicit and rounds to nearest even.
struct bf16 {
  std::uint16_t bits;

  bf16() = default;  // trivial: uninitialised, like float
  PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR explicit bf16(float f) noexcept
      : bits(detail::float_to_bf16_bits(f)) {}
  PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR operator float() const noexcept {
    return detail::bf16_bits_to_float(bits);
  }
  PK_HOST_DEVICE PK_FORCEINLINE static constexpr bf16 from_bits(std::uint16_t b) noexcept {
    bf16 r{};
    r.bits = b;
    return r;
  }
};

//! IEEE binary16 storage type: 1 sign, 5 exponent, 10 mantissa bits, with subnormals.
//! From float: nearest even, overflow -> +-inf, NaN -> quiet NaN with the sign kept.
struct fp16 {
  std::uint16_t bits;

  fp16() = default;
  PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR explicit fp16(float f) noexcept
      : bits(detail::float_to_fp16_bits(f)) {}
  PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR operator float() const noexcept {
    return detail::fp16_bits_to_float(bits);
  }
  PK_HOST_DEVICE PK_FORCEINLINE static constexpr fp16 from_bits(std::uint16_t b) noexcept {
    fp16 r{};
    r.bits = b;
    return r;
  }
};

//! Packed pairs for MMA operands and 32-bit loads: x is the low half.
struct alignas(4) bf16x2 {
  bf16 x, y;
};
struct alignas(4) fp16x2 {
  fp16 x, y;
};

//! Exact widening. bf16: plain bit shift (NaN payload kept). fp16: NaN comes back quiet.
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR float to_float(bf16 v) noexcept {
  return detail::bf16_bits_to_float(v.bits);
}
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR float to_float(fp16 v) noexcept {
  return detail::fp16_bits_to_float(v.bits);
}
//! x's value in the arithmetic type A, for kernels that compute on loaded elements: static_cast<A>(x), except
//! that an fp16 NaN becomes a quiet NaN without its payload (detail::fp16_bits_to_float_value: one instruction
//! on the GPU where the exact bits take a select). Exact for every other value.
template <class A, class T>
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR A widen(const T& x) noexcept {
  if constexpr (std::is_same_v<T, fp16>)
    return static_cast<A>(detail::fp16_bits_to_float_value(x.bits));
  else
    return static_cast<A>(x);
}

//! Round to nearest, ties to even; NaN -> quiet NaN with the sign kept.
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR bf16 to_bf16(float f) noexcept {
  return bf16::from_bits(detail::float_to_bf16_bits(f));
}
//! Round to nearest, ties to even, subnormals kept, overflow -> +-inf; NaN -> quiet NaN, sign kept.
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR fp16 to_fp16(float f) noexcept {
  return fp16::from_bits(detail::float_to_fp16_bits(f));
}

// ---- FP8 e4m3 (KV-cache storage): fn (OCP, bias 7, max 448, NaN S.1111.111) and fnuz (bias 8, max 240,
// the one NaN 0x80, no -0). Neither has infinities. ----
namespace detail {
template <bool Fnuz>
struct e4m3_format {
  static constexpr int bias = Fnuz ? 8 : 7;
  static constexpr std::uint32_t max_code = Fnuz ? 0x7fu : 0x7eu;  // largest finite magnitude: 240 / 448
  static constexpr float subnormal_quantum = Fnuz ? 0x1p-10f : 0x1p-9f;  // 2^(1 - bias - 3)
};

//! Exact (every e4m3 value is a binary32; bf16 and binary16 hold them too). NaN codes give a quiet NaN.
template <bool Fnuz>
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR float e4m3_bits_to_float(std::uint8_t b) noexcept {
  using f = e4m3_format<Fnuz>;
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  const std::uint32_t e = (b >> 3) & 0xfu, m = b & 0x7u;
  if (Fnuz ? b == 0x80u : (b & 0x7fu) == 0x7fu) return bit_cast<float>(sign | 0x7fc00000u);
  // A subnormal code (e = 0) is m quanta: int -> float and the power-of-two scaling are exact and give a
  // normal binary32, so no flush-to-zero mode can touch it. A normal code rebiases its exponent.
  if (e == 0) return bit_cast<float>(sign | bit_cast<std::uint32_t>(static_cast<float>(m) * f::subnormal_quantum));
  return bit_cast<float>(sign | ((e + 127u - f::bias) << 23) | (m << 20));
}

//! Round to nearest, ties to even; magnitudes past the largest finite value (infinities included)
//! saturate to it; NaN gives the format's NaN (fn: sign kept). fnuz has no -0: negative values that round
//! to zero give +0.
template <bool Fnuz>
PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR std::uint8_t float_to_e4m3_bits(float x) noexcept {
  using f = e4m3_format<Fnuz>;
  const std::uint32_t u = bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 24) & 0x80u;
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint8_t>(Fnuz ? 0x80u : (sign | 0x7fu));
  std::uint32_t code;
  if (a < ((128u - f::bias) << 23)) {
    // Below the smallest normal (2^(1 - bias)): a whole number of quanta, 0..8 (8 is the smallest normal's
    // code). The scaling is exact; the fraction is rounded to nearest even by hand (constexpr, device).
    const float q = bit_cast<float>(a) / f::subnormal_quantum;
    code = static_cast<std::uint32_t>(q);
    const float frac = q - static_cast<float>(code);
    code += (frac > 0.5f || (frac == 0.5f && (code & 1u))) ? 1u : 0u;
  } else {
    // Keep 3 mantissa bits, rounding the 20 dropped ones to nearest even (a carry bumps the exponent), then
    // rebias from 127 to the format's bias; past the largest finite code: saturate.
    a += 0x7ffffu + ((a >> 20) & 1u);
    const std::uint32_t e = a >> 23;
    code = e >= 127u - f::bias + 16u ? f::max_code : (((e - (127u - f::bias)) << 3) | ((a >> 20) & 0x7u));
    if (code > f::max_code) code = f::max_code;
  }
  if (Fnuz && code == 0) return 0;
  return static_cast<std::uint8_t>(sign | code);
}
}  // namespace detail

//! FP8 e4m3 storage types (KV caches). Widening is exact; narrowing rounds to nearest even and saturates.
template <bool Fnuz>
struct basic_e4m3 {
  std::uint8_t bits;
  basic_e4m3() = default;
  PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR explicit basic_e4m3(float f) noexcept
      : bits(detail::float_to_e4m3_bits<Fnuz>(f)) {}
  PK_HOST_DEVICE PK_FORCEINLINE PK_DETAIL_BIT_CAST_CONSTEXPR operator float() const noexcept {
    return detail::e4m3_bits_to_float<Fnuz>(bits);
  }
  PK_HOST_DEVICE PK_FORCEINLINE static constexpr basic_e4m3 from_bits(std::uint8_t b) noexcept {
    basic_e4m3 r{};
    r.bits = b;
    return r;
  }
  //! The largest finite value: 448 (fn), 240 (fnuz).
  static constexpr float max() noexcept { return Fnuz ? 240.0f : 448.0f; }
};
using f8e4m3fn = basic_e4m3<false>;
using f8e4m3fnuz = basic_e4m3<true>;

static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2, "bf16 must be 2 bytes, 2-aligned");
static_assert(sizeof(fp16) == 2 && alignof(fp16) == 2, "fp16 must be 2 bytes, 2-aligned");
static_assert(std::is_standard_layout<bf16>::value && std::is_trivially_copyable<bf16>::value &&
                  std::is_trivially_default_constructible<bf16>::value,
              "bf16 must be a trivial standard-layout type");
static_assert(std::is_standard_layout<fp16>::value && std::is_trivially_copyable<fp16>::value &&
                  std::is_trivially_default_constructible<fp16>::value,
              "fp16 must be a trivial standard-layout type");
static_assert(sizeof(bf16x2) == 4 && alignof(bf16x2) == 4, "bf16x2 must be 4 bytes, 4-aligned");
static_assert(sizeof(fp16x2) == 4 && alignof(fp16x2) == 4, "fp16x2 must be 4 bytes, 4-aligned");
static_assert(std::is_standard_layout<bf16x2>::value && std::is_trivially_copyable<bf16x2>::value,
              "bf16x2 must be trivially copyable");
static_assert(std::is_standard_layout<fp16x2>::value && std::is_trivially_copyable<fp16x2>::value,
              "fp16x2 must be trivially copyable");

//! Numeric facts per element type, usable in device code (every value is a constexpr function, so
//! nothing is ODR-used across the host/device boundary).
//!  - epsilon(): distance from 1 to the next value, as double (0 for integers, as numeric_limits).
//!  - digits: significand bits incl. the implicit one (floats), value bits without sign (integers),
//!    as std::numeric_limits::digits.
//!  - lowest(), max(); for floating types also min_normal(), infinity(), quiet_nan().
//!  - accum_type: what reductions accumulate in. bf16, fp16, float -> float; double -> double;
//!    int8, uint8, int32, int64 -> int64. Choice: a 64-bit accumulator makes int8/uint8/int32 sums
//!    exact (no signed overflow, so no UB) for any n < 2^32 elements, and the order of evaluation
//!    cannot change the result; converting back to int32 is modular (defined since C++20), so a
//!    result narrowed to T equals the wrapped sum. int64 sums that overflow are the caller's problem.
template <class T>
struct numeric_traits;

template <>
struct numeric_traits<float> {
  using accum_type = float;
  static constexpr bool is_floating = true;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 24;
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "f32"; }
  PK_HOST_DEVICE static constexpr double epsilon() noexcept { return 0x1p-23; }
  PK_HOST_DEVICE static constexpr float lowest() noexcept { return -0x1.fffffep127f; }
  PK_HOST_DEVICE static constexpr float max() noexcept { return 0x1.fffffep127f; }
  PK_HOST_DEVICE static constexpr float min_normal() noexcept { return 0x1p-126f; }
  PK_HOST_DEVICE static constexpr float infinity() noexcept { return __builtin_huge_valf(); }
  PK_HOST_DEVICE static constexpr float quiet_nan() noexcept { return __builtin_nanf(""); }
};

template <>
struct numeric_traits<double> {
  using accum_type = double;
  static constexpr bool is_floating = true;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 53;
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "f64"; }
  PK_HOST_DEVICE static constexpr double epsilon() noexcept { return 0x1p-52; }
  PK_HOST_DEVICE static constexpr double lowest() noexcept { return -0x1.fffffffffffffp1023; }
  PK_HOST_DEVICE static constexpr double max() noexcept { return 0x1.fffffffffffffp1023; }
  PK_HOST_DEVICE static constexpr double min_normal() noexcept { return 0x1p-1022; }
  PK_HOST_DEVICE static constexpr double infinity() noexcept { return __builtin_huge_val(); }
  PK_HOST_DEVICE static constexpr double quiet_nan() noexcept { return __builtin_nan(""); }
};

template <>
struct numeric_traits<bf16> {
  using accum_type = float;
  static constexpr bool is_floating = true;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 8;
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "bf16"; }
  PK_HOST_DEVICE static constexpr double epsilon() noexcept { return 0x1p-7; }
  PK_HOST_DEVICE static constexpr bf16 lowest() noexcept { return bf16::from_bits(0xff7fu); }      // -0x1.fep127
  PK_HOST_DEVICE static constexpr bf16 max() noexcept { return bf16::from_bits(0x7f7fu); }         // 0x1.fep127
  PK_HOST_DEVICE static constexpr bf16 min_normal() noexcept { return bf16::from_bits(0x0080u); }  // 2^-126
  PK_HOST_DEVICE static constexpr bf16 infinity() noexcept { return bf16::from_bits(0x7f80u); }
  PK_HOST_DEVICE static constexpr bf16 quiet_nan() noexcept { return bf16::from_bits(0x7fc0u); }
};

template <>
struct numeric_traits<fp16> {
  using accum_type = float;
  static constexpr bool is_floating = true;
  static constexpr bool has_infinity = true;
  static constexpr int digits = 11;
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "f16"; }
  PK_HOST_DEVICE static constexpr double epsilon() noexcept { return 0x1p-10; }
  PK_HOST_DEVICE static constexpr fp16 lowest() noexcept { return fp16::from_bits(0xfbffu); }      // -65504
  PK_HOST_DEVICE static constexpr fp16 max() noexcept { return fp16::from_bits(0x7bffu); }         // 65504
  PK_HOST_DEVICE static constexpr fp16 min_normal() noexcept { return fp16::from_bits(0x0400u); }  // 2^-14
  PK_HOST_DEVICE static constexpr fp16 infinity() noexcept { return fp16::from_bits(0x7c00u); }
  PK_HOST_DEVICE static constexpr fp16 quiet_nan() noexcept { return fp16::from_bits(0x7e00u); }
};

namespace detail {
template <class T, int Digits, long long Lowest, unsigned long long Max>
struct integer_numeric_traits {
  using accum_type = std::int64_t;
  static constexpr bool is_floating = false;
  static constexpr bool has_infinity = false;
  static constexpr int digits = Digits;
  PK_HOST_DEVICE static constexpr double epsilon() noexcept { return 0.0; }
  PK_HOST_DEVICE static constexpr T lowest() noexcept { return static_cast<T>(Lowest); }
  PK_HOST_DEVICE static constexpr T max() noexcept { return static_cast<T>(Max); }
};
}  // namespace detail

template <>
struct numeric_traits<std::int8_t> : detail::integer_numeric_traits<std::int8_t, 7, -128, 127> {
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "i8"; }
};
template <>
struct numeric_traits<std::uint8_t> : detail::integer_numeric_traits<std::uint8_t, 8, 0, 255> {
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "u8"; }
};
template <>
struct numeric_traits<std::int32_t>
    : detail::integer_numeric_traits<std::int32_t, 31, -2147483647LL - 1, 2147483647ULL> {
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "i32"; }
};
template <>
struct numeric_traits<std::int64_t>
    : detail::integer_numeric_traits<std::int64_t, 63, -9223372036854775807LL - 1, 9223372036854775807ULL> {
  PK_HOST_DEVICE static constexpr const char* name() noexcept { return "i64"; }
};

//! The dtype of a C++ element type.
template <class T>
inline constexpr dtype dtype_of = [] {
  if constexpr (std::is_same_v<T, double>) return dtype::f64;
  else if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, fp16>) return dtype::f16;
  else if constexpr (std::is_same_v<T, bf16>) return dtype::bf16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return dtype::i64;
  else if constexpr (std::is_same_v<T, std::int8_t>) return dtype::i8;
  else if constexpr (std::is_same_v<T, f8e4m3fn>) return dtype::f8e4m3fn;
  else if constexpr (std::is_same_v<T, f8e4m3fnuz>) return dtype::f8e4m3fnuz;
  else {
    static_assert(std::is_same_v<T, std::uint8_t>, "pk: no dtype for this element type");
    return dtype::u8;
  }
}();

}  // namespace pk
