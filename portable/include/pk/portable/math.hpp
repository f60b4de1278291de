// Fast transcendental functions for kernels that tolerate a few ulps (softmax probabilities rounded to
// 16 bits afterwards): the hardware's approximate instructions on GPUs, the C library on the host.
#pragma once
#include <pk/portable/target.hpp>

#include <cmath>

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
