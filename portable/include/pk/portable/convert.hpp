// Pairs of 16-bit values in kernels: to_storage_x2 rounds two floats into one word with one paired
// conversion instruction, from_storage_x2 widens one word into two floats; each gives the bits of numeric.hpp's
// conversions of the values one at a time (for an fp16 NaN, some NaN: pk::widen's value conversion;
// tests/portable/test_numeric_gpu.cpp checks them on the GPU).
#pragma once
#include <pk/portable/numeric.hpp>
#include <pk/portable/target.hpp>

#include <cstdint>
#include <type_traits>

PK_DETAIL_TARGET_BEGIN

//! Two values rounded to the 16-bit T and packed into one word, `lo` in bits 0-15 and `hi` in bits 16-31: the
//! bits of T(lo) and T(hi). On CUDA one cvt.rn.{bf16x2,f16x2}.f32 for the pair, and the per-value conversions
//! only when either is NaN: the store of a 16-bit row output took 3.5 instructions an element one value at a
//! time (H200 SASS of the bf16 softmax: a NaN test, a shift, a select and a byte permute beside each
//! conversion), about 1 this way.
template <class T>
PK_DEVICE PK_FORCEINLINE std::uint32_t to_storage_x2(float lo, float hi) {
  static_assert(sizeof(T) == 2, "to_storage_x2 packs 16-bit storage types");
#if defined(PK_DETAIL_BACKEND_CUDA)
  if (!(lo != lo || hi != hi)) {
    std::uint32_t p = 0;
    if constexpr (std::is_same_v<T, ::pk::bf16>) {
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));  // the first source fills bits 16-31
    } else {
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    }
    return p;
  }
#endif
  return std::uint32_t{T(lo).bits} | std::uint32_t{T(hi).bits} << 16;
}

//! The two 16-bit values packed in w (bits 0-15, bits 16-31) as floats, the bits of T's conversion: for bf16
//! a shift and a mask (exact, NaN payloads included), where converting each element of a vector on its own
//! took a byte permute and a multiply for the high half (H200 SASS); fp16 converts each half for arithmetic
//! (fp16_bits_to_float_value: the hardware conversion; a NaN stays NaN without its payload).
template <class T>
PK_DEVICE PK_FORCEINLINE void from_storage_x2(std::uint32_t w, float& lo, float& hi) {
  static_assert(sizeof(T) == 2, "from_storage_x2 unpacks 16-bit storage types");
  if constexpr (std::is_same_v<T, ::pk::bf16>) {
    lo = ::pk::detail::bit_cast<float>(w << 16);
    hi = ::pk::detail::bit_cast<float>(w & 0xffff0000u);
  } else {
    lo = ::pk::detail::fp16_bits_to_float_value(static_cast<std::uint16_t>(w & 0xffffu));
    hi = ::pk::detail::fp16_bits_to_float_value(static_cast<std::uint16_t>(w >> 16));
  }
}

PK_DETAIL_TARGET_END
