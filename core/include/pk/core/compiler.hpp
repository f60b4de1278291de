// Compiler detection that is safe in host-only code: which compiler front end reads this translation
// unit (nvcc, clang HIP, or a plain host compiler), never which device arch a pass targets (that is
// portable/target.hpp's job, for device code only). Headers below kernels ask these macros instead of
// testing __CUDACC__ / __HIP__ themselves.
//
//   PK_COMPILER_CUDA  1 when the TU is compiled as CUDA by nvcc (host and device passes)
//   PK_COMPILER_HIP   1 when the TU is compiled as HIP by clang (host and device passes)
//   PK_COMPILER_GPU   1 for either: __host__/__device__ attributes exist
#pragma once

#if defined(__CUDACC__) && !defined(__HIP__)
#define PK_COMPILER_CUDA 1
#else
#define PK_COMPILER_CUDA 0
#endif

#if defined(__HIP__)
#define PK_COMPILER_HIP 1
#else
#define PK_COMPILER_HIP 0
#endif

#define PK_COMPILER_GPU (PK_COMPILER_CUDA || PK_COMPILER_HIP)
