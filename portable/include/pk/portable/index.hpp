// Thread, block and grid indices, and lane/warp ids derived from the arch's warp size.
#pragma once
#include <pk/portable/detail_backend.hpp>

PK_DETAIL_TARGET_BEGIN

struct idx3 {
  unsigned x, y, z;
};

#if defined(PK_DETAIL_BACKEND_HOST)
PK_FORCEINLINE idx3 thread_idx() noexcept {
  const auto& t = ::pk::backend::host::current_thread->thread_idx;
  return {t.x, t.y, t.z};
}
PK_FORCEINLINE idx3 block_idx() noexcept {
  const auto& t = ::pk::backend::host::current_thread->block_idx;
  return {t.x, t.y, t.z};
}
PK_FORCEINLINE idx3 block_dim() noexcept {
  const auto& t = ::pk::backend::host::current_thread->block_dim;
  return {t.x, t.y, t.z};
}
PK_FORCEINLINE idx3 grid_dim() noexcept {
  const auto& t = ::pk::backend::host::current_thread->grid_dim;
  return {t.x, t.y, t.z};
}
#else
PK_DEVICE PK_FORCEINLINE idx3 thread_idx() noexcept { return {threadIdx.x, threadIdx.y, threadIdx.z}; }
PK_DEVICE PK_FORCEINLINE idx3 block_idx() noexcept { return {blockIdx.x, blockIdx.y, blockIdx.z}; }
PK_DEVICE PK_FORCEINLINE idx3 block_dim() noexcept { return {blockDim.x, blockDim.y, blockDim.z}; }
PK_DEVICE PK_FORCEINLINE idx3 grid_dim() noexcept { return {gridDim.x, gridDim.y, gridDim.z}; }
#endif

//! Linear thread rank in the block (x fastest), as hardware numbers lanes.
PK_DEVICE PK_FORCEINLINE int thread_rank() noexcept {
  const idx3 t = thread_idx(), d = block_dim();
  return static_cast<int>(t.x + d.x * (t.y + d.y * t.z));
}
//! Hardware lane id in [0, warp_size).
PK_DEVICE PK_FORCEINLINE int lane_id() noexcept { return thread_rank() % warp_size; }
//! Warp index within the block.
PK_DEVICE PK_FORCEINLINE int warp_id() noexcept { return thread_rank() / warp_size; }

//! `x`, which the optimizer may not look through: what derives from the result is computed where it is used
//! instead of being hoisted out of an enclosing loop and kept live across it. For per-thread values inside a
//! loop whose body needs every register: the persistent attention kernel's item loop (attention_ws.hpp) kept
//! the epilogue's per-thread shared-memory offsets live across items and spilled 124 bytes at head_dim 128
//! on sm_90a (0 with the thread rank passed through here once per item). The emulator has no registers to
//! save: there it is `x`.
PK_DEVICE PK_FORCEINLINE int opaque(int x) noexcept {
#if defined(PK_DETAIL_BACKEND_CUDA)
  asm volatile("" : "+r"(x));
#elif defined(PK_DETAIL_BACKEND_HIP)
  asm volatile("" : "+v"(x));
#endif
  return x;
}

PK_DETAIL_TARGET_END
