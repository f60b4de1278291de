// Fast transcendental functions for kernels that tolerate a few ulps (softmax probabilities rounded to
// 16 bits afterwards): the hardware's approximate instructions on GPUs, the C library on the host; and
// exp2_poly, the same float arithmetic on every target.
#pragma once
#include <pk/portable/numeric.hpp>
#include <pk/portable/target.hpp>

#include <cmath>
#include <cstdint>

PK_DETAIL_TARGET_BEGIN

//! log2(e) and ln(2): exp(x) = 2^(x log2 e) and ln(x) = log2(x) ln 2 on the exp2 and log2 units.
inline constexpr float log2e = 1.44269504088896340736f;
inline constexpr float ln2 = 0.693147180559945309f;

//! x * y rounded once, never fused into a neighbouring addition (CUDA/HIP __fmul_rn; the host targets compile
//! for x86-64 without FMA, where nothing contracts).
PK_DEVICE PK_FORCEINLINE float mul_rn(float x, float y) {
#if defined(PK_DETAIL_BACKEND_CUDA) || defined(PK_DETAIL_BACKEND_HIP)
  return __fmul_rn(x, y);
#else
  return x * y;
#endif
}

//! 2^x with at most 2 ulp error (CUDA ex2.approx.ftz.f32, AMD v_exp_f32); exp2(-inf) = 0, subnormal
//! results may flush to 0.
PK_DEVICE PK_FORCEINLINE float exp2_fast(float x) {
#if defined(PK_DETAIL_BACKEND_CUDA)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
#elif defined(PK_DETAIL_BACKEND_HIP)
  return __builtin_amdgcn_exp2f(x);
#else
  return std::exp2(x);
#endif
}

//! 2^x on the FMA units, for kernels whose exponentials outrun the exp2 unit (exp2_fast: 16 results a clock
//! per SM on sm_90, against 128 FMAs): x = j + f with j = round(x) (the 1.5 * 2^23 addition, in the low
//! mantissa bits) and |f| <= 1/2, 2^f by a degree-4 polynomial (relative minimax on [-1/2, 1/2] with p(0) = 1,
//! coefficients rounded to float; measured maximum relative error 3.6e-6, 2^-18, against a 16-bit P's rounding
//! of 2^-9 (bf16) and 2^-11 (fp16)), times 2^j built in the exponent field. About 11 instructions, all on the
//! FMA and integer pipes. For x <= 127: exp2(-inf) = 0, x < -126.5 gives 0 (as exp2_fast flushes subnormal
//! results), NaN stays NaN (the clamp's comparison is false for it, and the last step multiplies). Tested on
//! every target against exp2 in double (tests/portable/test_dialect.cpp).
//! No kernel uses it: computing every 4th or 6th exponential of the warp-specialized attention's head_dim 64
//! softmax with it made the kernel 2-13% slower on an H100 (its softmax is bound by issue slots, not
//! by the exp2 unit; bench/results/attention-h100-2026-12-07.md). It is the form FlashAttention-4 uses where the
//! exp2 unit does bind (Blackwell, research/HOPPER_ATTENTION.md).
PK_HOST_DEVICE PK_FORCEINLINE float exp2_poly(float x) {
  constexpr float round_magic = 0x1.8p23f;  // x + 1.5 * 2^23 rounds |x| < 2^22 to an integer, to nearest
  const float xc = x < -127.0f ? -127.0f : x;
  const float t = xc + round_magic;
  const float f = xc - (t - round_magic);
  float p = 0.009782912209630013f;
  p = fmaf(p, f, 0.055976882576942444f);
  p = fmaf(p, f, 0.24020710587501526f);
  p = fmaf(p, f, 0.6931136250495911f);
  p = fmaf(p, f, 1.0f);
  // 2^j for j = round(xc) in [-127, 127]: the biased exponent j + 127 in its field (j = -127: 0.0f).
  const std::int32_t j = ::pk::detail::bit_cast<std::int32_t>(t) - ::pk::detail::bit_cast<std::int32_t>(round_magic);
  return p * ::pk::detail::bit_cast<float>(static_cast<std::uint32_t>(j + 127) << 23);
}

//! log2(x) for normal positive x, within 2^-22 absolute (CUDA lg2.approx.ftz.f32, AMD v_log_f32): one
//! instruction where logf is a sequence with a slow-path call (ptxas spilled around it in block-wide
//! row kernels); log2(+inf) = +inf, log2(0) = -inf, NaN for x < 0.
PK_DEVICE PK_FORCEINLINE float log2_fast(float x) {
#if defined(PK_DETAIL_BACKEND_CUDA)
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
#elif defined(PK_DETAIL_BACKEND_HIP)
  return __builtin_amdgcn_logf(x);
#else
  return std::log2(x);
#endif
}

PK_DETAIL_TARGET_END
