// Kernel launch through the backend of this translation unit's target. Kernel launch code (compiled
// once per target) calls pk::launch; the per-family dispatcher guarantees the stream belongs to it.
#pragma once
#include <pk/portable/target.hpp>
#include <pk/runtime.hpp>

#include <cstddef>

#if defined(PK_DETAIL_BACKEND_HOST)
#include <pk/backend/host/launch.hpp>
#elif defined(PK_DETAIL_BACKEND_CUDA)
#include <pk/backend/cuda/launch.hpp>
#elif defined(PK_DETAIL_BACKEND_HIP)
#include <pk/backend/hip/launch.hpp>
#endif

PK_DETAIL_TARGET_BEGIN

struct launch_shape {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  std::size_t dynamic_smem = 0;
  const char* name = "kernel";  //!< the instance name (policy-derived), used in errors
  //! The kernel's instance table is PLAIN (cmake/pk_instances.cmake): this target's code also serves the
  //! targets whose plain code it is (code_target_info::plain).
  bool plain = false;
  //! The kernel may start while the previous kernel of the stream finishes (programmatic dependent launch, where
  //! the kernel's code has it: compiled for archdb has_grid_dependency); it calls grid_wait_previous()
  //! (portable/grid_dependency.hpp) before it reads what that kernel wrote. Elsewhere the launch is the
  //! stream-ordered one.
  bool overlaps_previous = false;
};

//! The code target of this translation unit.
//! (The target's inline namespace is named after its code_targets entry.)
inline constexpr pk::target this_target = pk::target::PK_DETAIL_TARGET_NS;

//! Launches `kernel(args...)` over the grid on stream `s`: code of the stream's target, or, for a kernel of
//! a PLAIN table (shape.plain), of the target whose plain code (no matrix instructions or tensor copies)
//! serves it (code_target_info::plain).
template <class... KArgs, class... Args>
status launch(const pk::stream& s, void (*kernel)(KArgs...), const launch_shape& shape, Args&&... args) {
  if (s.code_target() != this_target && !(shape.plain && info(s.code_target()).plain == this_target))
    return {errc::internal, std::string(shape.name) + ": stream of target " + to_string(s.code_target()) +
                                " dispatched to code of target " + to_string(this_target)};
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::launch_config cfg;
  cfg.grid = {shape.grid_x, shape.grid_y, shape.grid_z};
  cfg.block = {shape.block_x, shape.block_y, shape.block_z};
  cfg.dynamic_smem = shape.dynamic_smem;
  cfg.warp_size = warp_size;
  cfg.smem_limit_per_block = s.device().smem_per_block_optin;
  cfg.max_threads_per_block = s.device().max_threads_per_block;
  cfg.kernel_name = shape.name;
  return backend::host::launch(cfg, [&] { kernel(args...); });
#elif defined(PK_DETAIL_BACKEND_CUDA)
  return backend::cuda::launch(kernel, dim3(shape.grid_x, shape.grid_y, shape.grid_z),
                               dim3(shape.block_x, shape.block_y, shape.block_z), shape.dynamic_smem, s.native(),
                               shape.name, shape.overlaps_previous, static_cast<Args&&>(args)...);
#else
  return backend::hip::launch(kernel, dim3(shape.grid_x, shape.grid_y, shape.grid_z),
                              dim3(shape.block_x, shape.block_y, shape.block_z), shape.dynamic_smem, s.native(),
                              shape.name, static_cast<Args&&>(args)...);
#endif
}

PK_DETAIL_TARGET_END
