// Host/device attribute macros: the only macros the dialect exposes besides feature predicates.
#pragma once
#include <pk/core/compiler.hpp>

#if PK_COMPILER_GPU
#define PK_HOST_DEVICE __host__ __device__
#define PK_DEVICE __device__
#define PK_KERNEL __global__
#define PK_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#define PK_DETAIL_SHARED __shared__
#else
#define PK_HOST_DEVICE
#define PK_DEVICE
#define PK_KERNEL
#define PK_LAUNCH_BOUNDS(threads)
#define PK_DETAIL_SHARED
#endif

#if defined(_MSC_VER)
#define PK_FORCEINLINE __forceinline
#else
#define PK_FORCEINLINE inline __attribute__((always_inline))
#endif

#define PK_DETAIL_CAT2(a, b) a##b
#define PK_DETAIL_CAT(a, b) PK_DETAIL_CAT2(a, b)
