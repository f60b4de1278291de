// Programmatic dependent launch in device code. A kernel launched with launch_shape::overlaps_previous may start
// while the previous kernel of its stream is still running: it calls grid_wait_previous() before it reads
// anything that kernel wrote (the wait returns once that kernel has completed and its memory is visible). A kernel
// calls grid_release_dependents() once its remaining work no longer needs to keep the next kernel's blocks off the
// device: a scheduling hint, which gives the next kernel no visibility of this one's writes. On targets without
// the launch (archdb has_grid_dependency false: before sm_90, AMD, the emulator) both do nothing, and the launch
// is the stream-ordered one.
#pragma once
#include <pk/portable/detail_backend.hpp>

PK_DETAIL_TARGET_BEGIN

inline constexpr bool arch_has_grid_dependency = archdb::traits(device_arch).has_grid_dependency;

PK_DEVICE PK_FORCEINLINE void grid_wait_previous() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_grid_dependency) backend::cuda::grid_dependency_wait();
#endif
}

PK_DEVICE PK_FORCEINLINE void grid_release_dependents() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_grid_dependency) backend::cuda::grid_launch_dependents();
#endif
}

PK_DETAIL_TARGET_END
