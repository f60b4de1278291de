// CUDA device intrinsics behind the portable dialect (included only by portable/ in CUDA TUs).
#pragma once
#include <cstdint>
#include <cstring>

namespace pk::backend::cuda {

inline constexpr unsigned full_mask = 0xffffffffu;  // every lane of a 32-lane warp

template <class T, class F>
__device__ __forceinline__ T by_words(const T& v, F&& f) {
  constexpr int words = (sizeof(T) + 3) / 4;
  unsigned w[words] = {};
  __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < words; ++i) w[i] = f(w[i]);
  T r;
  __builtin_memcpy(&r, w, sizeof(T));
  return r;
}

template <class T> __device__ __forceinline__ T shfl(const T& v, int src, int width) {
  return by_words(v, [&](unsigned x) { return __shfl_sync(full_mask, x, src, width); });
}
template <class T> __device__ __forceinline__ T shfl_up(const T& v, int d, int width) {
  return by_words(v, [&](unsigned x) { return __shfl_up_sync(full_mask, x, d, width); });
}
template <class T> __device__ __forceinline__ T shfl_down(const T& v, int d, int width) {
  return by_words(v, [&](unsigned x) { return __shfl_down_sync(full_mask, x, d, width); });
}
template <class T> __device__ __forceinline__ T shfl_xor(const T& v, int m, int width) {
  return by_words(v, [&](unsigned x) { return __shfl_xor_sync(full_mask, x, m, width); });
}
__device__ __forceinline__ std::uint64_t ballot(bool p) { return __ballot_sync(full_mask, p); }
__device__ __forceinline__ void warp_sync() { __syncwarp(full_mask); }
__device__ __forceinline__ void block_sync() { __syncthreads(); }
__device__ __forceinline__ void thread_fence() { __threadfence(); }
[[noreturn]] __device__ __forceinline__ void trap() { __trap(); }
// Programmatic dependent launch (sm_90 and later; portable/grid_dependency.hpp calls these only there).
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void grid_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

}  // namespace pk::backend::cuda
