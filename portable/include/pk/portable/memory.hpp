// Shared memory (static per block, dynamic per launch), 16-byte vector loads/stores, global atomics
// and fences.
#pragma once
#include <pk/portable/detail_backend.hpp>

#include <cstdint>
#include <type_traits>

#if defined(PK_DETAIL_BACKEND_HOST)
#include <atomic>
#endif

//! Declares a block-shared object `name` of type `Type` (trivially constructible, as on GPUs; array
//! types allowed: `PK_SHARED(float[256], tile);`). Every thread of the block sees the same object.
//! On the emulator it is carved from the block's shared memory, bounded by the impersonated device's
//! limit and poisoned (0xFF bytes) when allocated.
#if defined(PK_DETAIL_BACKEND_HOST)
#define PK_SHARED(Type, name)                                                                          \
  static const char PK_DETAIL_CAT(pk_detail_shared_key_, name) = 0;                                    \
  std::type_identity_t<Type>& name = *static_cast<std::type_identity_t<Type>*>(                        \
      ::pk::backend::host::shared_static(&PK_DETAIL_CAT(pk_detail_shared_key_, name), sizeof(Type),    \
                                         alignof(std::type_identity_t<Type>),                          \
                                         ::pk::backend::host::call_site::current(#name)))
#else
#define PK_SHARED(Type, name) __shared__ std::type_identity_t<Type> name
#endif

PK_DETAIL_TARGET_BEGIN

//! The launch's dynamic shared memory, aligned to 16 bytes.
template <class T>
PK_DEVICE PK_FORCEINLINE T* dynamic_shared() noexcept {
#if defined(PK_DETAIL_BACKEND_HOST)
  return static_cast<T*>(backend::host::shared_dynamic());
#else
  extern __shared__ __align__(16) unsigned char pk_detail_dynamic_smem[];
  return reinterpret_cast<T*>(pk_detail_dynamic_smem);
#endif
}

//! N elements of T loaded or stored as one access of sizeof(T)*N bytes (at most 16); the address
//! must be aligned to that size.
template <class T, int N>
struct alignas(sizeof(T) * N) vec {
  static_assert(sizeof(T) * N <= 16 && (sizeof(T) * N & (sizeof(T) * N - 1)) == 0,
                "a vector access is a power of two of at most 16 bytes");
  T v[N];
  PK_HOST_DEVICE T& operator[](int i) noexcept { return v[i]; }
  PK_HOST_DEVICE const T& operator[](int i) const noexcept { return v[i]; }
};

template <int N, class T>
PK_DEVICE PK_FORCEINLINE vec<T, N> load_vec(const T* p) noexcept {
  return *reinterpret_cast<const vec<T, N>*>(p);
}
template <int N, class T>
PK_DEVICE PK_FORCEINLINE void store_vec(T* p, const vec<T, N>& v) noexcept {
  *reinterpret_cast<vec<T, N>*>(p) = v;
}

//! Atomic add on global memory (int32, uint32, uint64, float, double). Returns the old value.
template <class T>
PK_DEVICE PK_FORCEINLINE T atomic_add(T* p, T v) noexcept {
#if defined(PK_DETAIL_BACKEND_HOST)
  return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
#else
  return atomicAdd(p, v);
#endif
}

//! Orders this thread's prior global-memory writes before its later ones, device-wide
//! (__threadfence).
PK_DEVICE PK_FORCEINLINE void thread_fence() noexcept {
#if defined(PK_DETAIL_BACKEND_HOST)
  std::atomic_thread_fence(std::memory_order_seq_cst);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  backend::cuda::thread_fence();
#else
  backend::hip::thread_fence();
#endif
}

//! Ends the kernel with an error (a trap on GPUs; an emulation_error naming the site on the host).
[[noreturn]] PK_DEVICE PK_FORCEINLINE void trap(const char* message,
                                                 impl::site s = impl::site::current("trap")) {
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::trap(message, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)message;
  (void)s;
  backend::cuda::trap();
#else
  (void)message;
  (void)s;
  backend::hip::trap();
#endif
}

PK_DETAIL_TARGET_END
