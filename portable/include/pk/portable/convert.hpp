// Rounding float to the 16-bit storage types in kernels: to_storage<T>(a) is T(a) (round to nearest
// even; a NaN keeps sign and payload as numeric.hpp's conversion does), with the hardware instruction
// where there is one. numeric.hpp's conversions are portable integer sequences (6 instructions a value
// for bf16, ~15 for fp16), which made 16-bit row outputs instruction-bound on the H200 (ncu, softmax
// bf16 32768 x 1024: the integer pipe the busiest); cvt.rn.bf16.f32 (sm_80 and later) and
// cvt.rn.f16.f32 give the same bits for every non-NaN float (tests/portable/test_numeric_gpu.cpp checks
// them against the portable path), and the NaN bits are selected without a branch.
#pragma once
#include <pk/portable/numeric.hpp>
#include <pk/portable/target.hpp>

#include <cstdint>
#include <type_traits>

PK_DETAIL_TARGET_BEGIN

namespace detail_convert {
#if defined(PK_DETAIL_BACKEND_CUDA)
PK_DEVICE PK_FORCEINLINE std::uint16_t bf16_bits(float f) {
  std::uint16_t h = 0;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));  // sm_80 and later: every CUDA target of pk
  const std::uint32_t u = ::pk::detail::bit_cast<std::uint32_t>(f);
  return f == f ? h : static_cast<std::uint16_t>((u >> 16) | 0x0040u);
}
PK_DEVICE PK_FORCEINLINE std::uint16_t fp16_bits(float f) {
  std::uint16_t h = 0;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  const std::uint32_t u = ::pk::detail::bit_cast<std::uint32_t>(f);
  return f == f ? h : static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
}
#endif
}  // namespace detail_convert

//! T(a) for an accumulator value a (float or double), through the hardware conversion to bf16 / fp16
//! on CUDA; every other case is the plain conversion.
template <class T, class A>
PK_DEVICE PK_FORCEINLINE T to_storage(A a) {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (std::is_same_v<A, float> && std::is_same_v<T, ::pk::bf16>) {
    return ::pk::bf16::from_bits(detail_convert::bf16_bits(a));
  } else if constexpr (std::is_same_v<A, float> && std::is_same_v<T, ::pk::fp16>) {
    return ::pk::fp16::from_bits(detail_convert::fp16_bits(a));
  } else {
    return static_cast<T>(a);
  }
#else
  return static_cast<T>(a);
#endif
}

PK_DETAIL_TARGET_END
