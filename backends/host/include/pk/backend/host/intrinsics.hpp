// The host emulator's device-side interface: what portable/ calls when a kernel runs on the CPU.
// Each GPU thread is a fiber; a block's fibers run on one OS thread, scheduled cooperatively, and
// switch only at barriers and warp collectives. See docs/emulator.md.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pk::backend::host {

//! Where a barrier or collective was called (reported in divergence/deadlock errors).
struct call_site {
  const char* file = "?";
  int line = 0;
  const char* what = "";
  static constexpr call_site current(const char* what = "", const char* file = __builtin_FILE(),
                                     int line = __builtin_LINE()) noexcept {
    return call_site{file, line, what};
  }
};

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct block_state;

//! Per-GPU-thread context, set by the scheduler before each fiber resumes.
struct thread_ctx {
  dim3 thread_idx;
  dim3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  int linear_tid = 0;  //!< x + y*bx + z*bx*by, as on hardware
  int warp_size = 32;
  block_state* block = nullptr;
  void* detail_lane = nullptr;  //!< the emulator's record of this thread
};

//! The GPU thread running on this OS thread (null outside an emulated kernel).
extern thread_local thread_ctx* current_thread;

//! Kinds of warp collectives; every live lane of the hardware warp must reach the same one.
enum class collective_kind : std::uint8_t { shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, sync, custom };

//! A warp-wide function: called once when every lane has arrived, with every lane's input and output.
//! `lanes` is the number of lanes of the hardware warp that exist in the block.
using warp_custom_fn = void (*)(const void* params, int lanes, const void* const* in, void* const* out);

//! Shuffle family: copies `bytes` from the source lane's `in` into this lane's `out`.
//! `width` is the logical width (power of two <= warp size) and `arg` the source lane / delta / mask,
//! with CUDA's semantics (a source outside the caller's segment yields the caller's own value).
void warp_shuffle(collective_kind kind, const void* in, void* out, std::size_t bytes, int width, int arg,
                  call_site site);
//! Bit i of the result is set iff `pred` is true on hardware lane i.
std::uint64_t warp_ballot(bool pred, call_site site);
//! Convergence point of the warp (__syncwarp).
void warp_sync(call_site site);
//! Warp-wide custom operation (MMA atoms use this to run with the instruction's exact layout).
void warp_custom(warp_custom_fn fn, const void* params, const void* in, void* out, call_site site);
//! Block barrier (__syncthreads): every live thread of the block must reach the same call site.
void block_sync(call_site site);

//! Static shared memory: one allocation per (block, key); every thread of the block gets the same address.
void* shared_static(const void* key, std::size_t bytes, std::size_t align, call_site site);
//! Dynamic shared memory of the launch (aligned to 16 bytes) and its size.
void* shared_dynamic() noexcept;
std::size_t shared_dynamic_bytes() noexcept;

//! Reports a kernel-side error (e.g. a trap): ends the launch with an emulation_error.
[[noreturn]] void trap(const char* message, call_site site);

}  // namespace pk::backend::host
