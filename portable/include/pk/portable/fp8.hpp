// FP8 e4m3 codes to fp16 in bulk (KV caches; the MMA atoms' FP8 operand loads, pk/portable/mma.hpp): four
// codes per call, by the hardware conversion where the arch has one for the format, else by a bit shuffle.
// Either way the result is exact; the shuffle's results are the codes' values times a power of two
// (fp8_convert_shift), which the caller folds into its scales.
//
//   std::uint32_t lo, hi;                        // codes 0-1 and 2-3 as two fp16 each
//   fp8x4_to_half<false>(codes, lo, hi);         // e4m3fn -> fp16
//   scale *= 0x1p0f * (1 << fp8_convert_shift<false>);
#pragma once
#include <pk/portable/numeric.hpp>
#include <pk/portable/target.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN

//! Whether the arch converts e4m3fn pairs to f16x2 in one instruction: `cvt.rn.f16x2.e4m3x2` needs sm_89 or
//! later (PTX ISA 7.8, "cvt": ".e4m3x2 ... requires sm_89 or higher"). The emulator answers it exactly when
//! it impersonates such an arch. No NVIDIA arch converts the fnuz variant; AMD's conversions are not used yet.
inline constexpr bool arch_has_fp8_convert = device_arch == archdb::arch::sm89 || device_arch == archdb::arch::sm90a ||
                                             device_arch == archdb::arch::sm100 || device_arch == archdb::arch::sm120;

//! log2 of the factor by which fp8x4_to_half's results are smaller than the codes' values: 0 with the hardware
//! conversion; the shuffle keeps the code's exponent bits, so the result is off by the difference of the
//! biases (binary16: 15 - 7 = 8 for fn, 15 - 8 = 7 for fnuz).
template <bool Fnuz>
inline constexpr int fp8_convert_shift = (arch_has_fp8_convert && !Fnuz) ? 0 : (Fnuz ? 7 : 8);

namespace fp8_detail {
//! The shuffle: four codes (bytes of x, lowest first) as four binary16 (two per word, lowest first), each the
//! code's value times 2^-(15 - bias): sign to bit 15, exponent and mantissa one bit right of the byte's
//! position in the half's high byte, which rebiases normal and subnormal codes alike. NaN codes give a NaN.
template <bool Fnuz>
PK_DEVICE PK_FORCEINLINE void shuffle_to_half(std::uint32_t x, std::uint32_t& lo, std::uint32_t& hi) {
  const std::uint32_t t0 = ((x & 0xffu) << 8) | ((x & 0xff00u) << 16);
  const std::uint32_t t1 = ((x & 0xff0000u) >> 8) | (x & 0xff000000u);
  lo = (t0 & 0x80008000u) | ((t0 & 0x7f007f00u) >> 1);
  hi = (t1 & 0x80008000u) | ((t1 & 0x7f007f00u) >> 1);
  // Any NaN code among the four (fn: low 7 bits all ones; fnuz: 0x80)? Rare: fixed one byte at a time.
  const std::uint32_t v = Fnuz ? x ^ 0x80808080u : 0u;
  const bool nan = Fnuz ? ((v - 0x01010101u) & ~v & 0x80808080u) != 0 : (((x & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u) != 0;
  if (nan) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const std::uint32_t b = (x >> (8 * i)) & 0xffu;
      if (Fnuz ? b == 0x80u : (b & 0x7fu) == 0x7fu) (i < 2 ? lo : hi) |= 0x7e00u << (16 * (i % 2));
    }
  }
}

//! The hardware conversion of two e4m3fn codes (a 16-bit pair) to f16x2, as the emulator computes it. A
//! template: instantiated only where arch_has_fp8_convert selects it.
template <int = 0>
PK_DEVICE PK_FORCEINLINE std::uint32_t e4m3fn_x2_to_half2(std::uint32_t pair) {
#if defined(PK_DETAIL_BACKEND_CUDA)
  std::uint32_t r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(static_cast<std::uint16_t>(pair)));
  return r;
#else
  const std::uint32_t a = ::pk::detail::float_to_fp16_bits(::pk::detail::e4m3_bits_to_float<false>(pair & 0xffu));
  const std::uint32_t b = ::pk::detail::float_to_fp16_bits(::pk::detail::e4m3_bits_to_float<false>((pair >> 8) & 0xffu));
  return a | (b << 16);
#endif
}
}  // namespace fp8_detail

//! Four e4m3 codes (fn, or fnuz when Fnuz) to four fp16 in two words, lowest first; each result is the code's
//! value times 2^-fp8_convert_shift<Fnuz>, exactly.
template <bool Fnuz>
PK_DEVICE PK_FORCEINLINE void fp8x4_to_half(std::uint32_t x, std::uint32_t& lo, std::uint32_t& hi) {
  if constexpr (arch_has_fp8_convert && !Fnuz) {
    lo = fp8_detail::e4m3fn_x2_to_half2<>(x & 0xffffu);
    hi = fp8_detail::e4m3fn_x2_to_half2<>(x >> 16);
  } else {
    fp8_detail::shuffle_to_half<Fnuz>(x, lo, hi);
  }
}

PK_DETAIL_TARGET_END
