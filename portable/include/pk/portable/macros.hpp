// Host/device attribute macros: the only macros the dialect exposes besides feature predicates.
#pragma once
#include <pk/core/compiler.hpp>

#if PK_COMPILER_GPU
#define PK_HOST_DEVICE __host__ __device__
#define PK_DEVICE __device__
#define PK_KERNEL __global__
#define PK_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
//! Launch bounds with at least `blocks` resident blocks per SM (1: the register cap setmaxnreg needs).
#define PK_LAUNCH_BOUNDS_MIN(threads, blocks) __launch_bounds__(threads, blocks)
//! A kernel parameter that stays in parameter space (its address may be taken: tensor maps).
#if PK_COMPILER_CUDA
#define PK_GRID_CONSTANT __grid_constant__
//! Launch bounds that ask nvcc for `blocks` resident blocks per SM (a register cap of 64K / (blocks x
//! threads)); elsewhere the plain bounds (HIP's second argument counts waves per EU, not blocks).
#define PK_LAUNCH_BOUNDS_OCCUPANCY(threads, blocks) __launch_bounds__(threads, blocks)
#else
#define PK_GRID_CONSTANT
#define PK_LAUNCH_BOUNDS_OCCUPANCY(threads, blocks) __launch_bounds__(threads)
#endif
#define PK_DETAIL_SHARED __shared__
#else
#define PK_HOST_DEVICE
#define PK_DEVICE
#define PK_KERNEL
#define PK_LAUNCH_BOUNDS(threads)
#define PK_LAUNCH_BOUNDS_MIN(threads, blocks)
#define PK_LAUNCH_BOUNDS_OCCUPANCY(threads, blocks)
#define PK_GRID_CONSTANT
#define PK_DETAIL_SHARED
#endif

#if defined(_MSC_VER)
#define PK_FORCEINLINE __forceinline
#else
#define PK_FORCEINLINE inline __attribute__((always_inline))
#endif

#define PK_DETAIL_CAT2(a, b) a##b
#define PK_DETAIL_CAT(a, b) PK_DETAIL_CAT2(a, b)
