// HIP device intrinsics behind the portable dialect (included only by portable/ in HIP TUs).
// The non-_sync forms are used: HIP's wavefronts execute in lockstep and ROCm 5.2 lacks the _sync ones.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdint>
#include <cstring>

namespace pk::backend::hip {

template <class T, class F>
__device__ __forceinline__ T by_words(const T& v, F&& f) {
  constexpr int words = (sizeof(T) + 3) / 4;
  int w[words] = {};
  __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < words; ++i) w[i] = f(w[i]);
  T r;
  __builtin_memcpy(&r, w, sizeof(T));
  return r;
}

template <class T> __device__ __forceinline__ T shfl(const T& v, int src, int width) {
  return by_words(v, [&](int x) { return __shfl(x, src, width); });
}
template <class T> __device__ __forceinline__ T shfl_up(const T& v, int d, int width) {
  return by_words(v, [&](int x) { return __shfl_up(x, static_cast<unsigned>(d), width); });
}
template <class T> __device__ __forceinline__ T shfl_down(const T& v, int d, int width) {
  return by_words(v, [&](int x) { return __shfl_down(x, static_cast<unsigned>(d), width); });
}
template <class T> __device__ __forceinline__ T shfl_xor(const T& v, int m, int width) {
  return by_words(v, [&](int x) { return __shfl_xor(x, m, width); });
}
__device__ __forceinline__ std::uint64_t ballot(bool p) { return static_cast<std::uint64_t>(__ballot(p)); }
__device__ __forceinline__ void warp_sync() { __builtin_amdgcn_wave_barrier(); }
// The barrier and the fence as clang builtins rather than ROCm 5.2's __syncthreads / __threadfence: those
// call __atomic_work_item_fence, which clang-19 lowers itself but newer clangs (gfx950 needs clang-22) leave
// to a device library that ROCm 5.2 does not have. Same semantics: workgroup release before the barrier,
// acquire after it; a sequentially consistent device-scope ("agent") fence.
__device__ __forceinline__ void block_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__device__ __forceinline__ void thread_fence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
[[noreturn]] __device__ __forceinline__ void trap() { __builtin_trap(); }

}  // namespace pk::backend::hip
