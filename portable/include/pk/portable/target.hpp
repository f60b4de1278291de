// Target detection: the ONE file that reads compiler arch macros (__CUDA_ARCH__, __gfx942__, ...).
// It maps them to a pk::archdb::arch value and a backend, and does nothing else. Kernels ask
// `pk::device_arch`, `pk::warp_size` and the feature predicates below, never the raw macros.
//
// Backends of a translation unit:
//   CUDA (nvcc):  host pass -> device_arch == generic; device pass -> the arch being compiled.
//   HIP (clang):  likewise; an unknown gfx target is an #error unless PK_ALLOW_GENERIC_ARCH.
//   host emulator: the TU is compiled with -DPK_HOST_ARCH=<arch enumerator> (sm80, gfx942, gfx1201, ...)
//                  and every function is a "device pass": kernels run on the CPU, impersonating it.
#pragma once
#include <pk/archdb/arch.hpp>
#include <pk/portable/macros.hpp>

#if defined(__CUDACC__) && !defined(__HIP__)
#define PK_DETAIL_BACKEND_CUDA 1
#define PK_DETAIL_TARGET_NS cuda
#if defined(__CUDA_ARCH__)
#define PK_DETAIL_DEVICE_PASS 1
#if __CUDA_ARCH__ >= 1200
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::sm120
#elif __CUDA_ARCH__ >= 1000
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::sm100
#elif __CUDA_ARCH__ >= 900
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::sm90a
#elif __CUDA_ARCH__ >= 890
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::sm89
#elif __CUDA_ARCH__ >= 860
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::sm86
#elif __CUDA_ARCH__ >= 800
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::sm80
#else
#error "pk: CUDA architectures below sm_80 are not supported (archdb has no row for them)"
#endif
#else
#define PK_DETAIL_DEVICE_PASS 0
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::generic
#endif

#elif defined(__HIP__)
#define PK_DETAIL_BACKEND_HIP 1
#define PK_DETAIL_TARGET_NS hip
#if defined(__HIP_DEVICE_COMPILE__) && __HIP_DEVICE_COMPILE__
#define PK_DETAIL_DEVICE_PASS 1
#if defined(__gfx90a__)
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::gfx90a
#elif defined(__gfx942__)
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::gfx942
#elif defined(__gfx950__)
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::gfx950
#elif defined(__gfx1100__)
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::gfx1100
#elif defined(__gfx1201__)
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::gfx1201
#elif defined(PK_ALLOW_GENERIC_ARCH)
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::generic
#else
#error "pk: unknown AMD gfx target: add an archdb row (or define PK_ALLOW_GENERIC_ARCH)"
#endif
#else
#define PK_DETAIL_DEVICE_PASS 0
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::generic
#endif

#elif defined(PK_HOST_ARCH)
#define PK_DETAIL_BACKEND_HOST 1
#define PK_DETAIL_TARGET_NS PK_DETAIL_CAT(host_, PK_HOST_ARCH)
#define PK_DETAIL_DEVICE_PASS 1
#define PK_DETAIL_DEVICE_ARCH ::pk::archdb::arch::PK_HOST_ARCH

#else
#error "pk: device code must be compiled as CUDA, HIP, or host code with PK_HOST_ARCH (see cmake/pk_targets.cmake)"
#endif

//! Opens the per-target inline namespace. Device code (the dialect and kernel agents) lives inside it
//! so that the same template compiled for several targets (host_sm80, host_gfx942, cuda ...) gives
//! distinct symbols in one library.
#define PK_DETAIL_TARGET_BEGIN namespace pk { inline namespace PK_DETAIL_TARGET_NS {
#define PK_DETAIL_TARGET_END } }

namespace pk {
inline namespace PK_DETAIL_TARGET_NS {

//! The arch of the code being compiled (generic in a CUDA/HIP host pass).
inline constexpr archdb::arch device_arch = PK_DETAIL_DEVICE_ARCH;
//! Whether this pass generates code that runs as GPU threads (a CUDA/HIP device pass, or the emulator).
inline constexpr bool is_device_pass = PK_DETAIL_DEVICE_PASS != 0;
//! The warp/wavefront size of device_arch, from archdb. A compile-time constant on every backend.
inline constexpr int warp_size = archdb::traits(device_arch).warp_size;

// Feature predicates derived from archdb (kernels use these, never raw arch macros).
inline constexpr bool arch_has_async_copy = archdb::traits(device_arch).has_async_copy;
inline constexpr archdb::mma_family arch_mma = archdb::traits(device_arch).mma;
//! Whether the archs this backend compiles for have asynchronous copies, as a constant of the host pass too
//! (host code that chooses which kernels to instantiate reads it; device_arch is generic there): every CUDA
//! arch pk supports (sm_80 and later) has them, no AMD arch does, the emulator as its impersonated arch.
#if defined(PK_DETAIL_BACKEND_CUDA)
inline constexpr bool backend_has_async_copy = true;
#elif defined(PK_DETAIL_BACKEND_HIP)
inline constexpr bool backend_has_async_copy = false;
#else
inline constexpr bool backend_has_async_copy = arch_has_async_copy;
#endif
static_assert(!is_device_pass || arch_has_async_copy == backend_has_async_copy,
              "archdb's has_async_copy for this arch differs from its backend's: update backend_has_async_copy");

}  // namespace PK_DETAIL_TARGET_NS
}  // namespace pk
