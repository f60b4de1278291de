// The host emulator's device-side interface: what portable/ calls when a kernel runs on the CPU.
// Each GPU thread is a fiber; a block's fibers run on one OS thread, scheduled cooperatively, and
// switch only at barriers, warp and warpgroup collectives and mbarrier waits. See docs/emulator.md.
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

// ---------------------------------------------------------------------------------------------
// The sm_90a (Hopper) machinery, emulated for the host_sm90a code target (docs/emulator.md, "Hopper").
// portable/ (warpgroup.hpp, pipeline.hpp) maps onto these; kernels never call them directly.

namespace pk::backend::host {

//! Offset of `p` from the start of the block's shared-memory arena (the "shared window" address the
//! hardware's descriptors and barriers use). The arena is 1024-byte aligned, so swizzle patterns that
//! read address bits [4, 10) see the same bits as on the device. A pointer outside the arena is an error.
std::uint32_t shared_offset(const void* p, call_site site);

//! Named barrier (PTX bar.sync / bar.arrive with a barrier id and a thread count): completes when
//! `count` threads have arrived at barrier `id` (0 < id < 16; id 0 is the block barrier). `sync` waits,
//! `arrive` counts without waiting. `count` must be a multiple of the warp size and the same for every
//! arrival of one phase; mixing counts, or a phase that can never complete, is an error naming the id
//! and the call sites. Each calling thread counts one (the hardware counts a whole warp per warp that
//! executes the instruction, and requires the warp converged: the same when every lane calls).
void named_barrier_sync(int id, int count, call_site site);
void named_barrier_arrive(int id, int count, call_site site);

//! An mbarrier (PTX mbarrier.* on a .shared::cta .b64 object), emulated with explicit state. It lives in
//! shared memory like the hardware's (24 bytes here instead of 8: kernels size it with sizeof), 8-byte
//! aligned as the hardware requires.
struct alignas(8) mbarrier_state {
  std::int32_t expected = 0;  //!< arrivals per phase (set by init)
  std::int32_t pending = 0;   //!< arrivals still missing in the current phase
  std::int32_t tx = 0;        //!< transaction bytes expected and not yet completed (may go negative transiently)
  std::uint32_t phase = 0;    //!< completed phases; the current phase's parity is phase & 1
  std::uint32_t magic = 0;    //!< set by init: use before init is an error
  std::uint32_t pad_ = 0;
};
//! mbarrier.init: `arrivals` (>= 1) per phase, phase 0.
void mbarrier_init(mbarrier_state* b, int arrivals, call_site site);
//! mbarrier.arrive (one arrival); with expect_tx: adds `tx_bytes` to the expected transaction count
//! first (mbarrier.arrive.expect_tx). The phase completes when no arrival and no transaction byte is
//! pending; the pending count then resets to `expected`. More arrivals than the phase expects is an error.
void mbarrier_arrive(mbarrier_state* b, std::uint32_t tx_bytes, call_site site);
//! mbarrier.expect_tx without an arrival.
void mbarrier_expect_tx(mbarrier_state* b, std::uint32_t tx_bytes, call_site site);
//! mbarrier.try_wait.parity in a loop: returns once the phase with parity `parity` has completed
//! (the current phase's parity differs from `parity`). Suspends the thread meanwhile; if no thread of
//! the block can make progress, the launch fails naming the barrier (its shared-memory offset), its
//! expected arrivals, pending arrivals and pending transaction bytes ("a wrong expect-tx count"), and
//! the call site, instead of hanging.
void mbarrier_wait(mbarrier_state* b, int parity, call_site site);

//! Swizzle of a shared-memory tile as the hardware applies it to shared-window addresses: with S the
//! swizzle span in bytes (32, 64 or 128), the 16-byte chunk bits [4, 4 + log2(S/16)) of an address are
//! XORed with bits [7, 7 + log2(S/16)). Numbered like CUtensorMapSwizzle.
enum class swizzle_mode : std::uint8_t { none = 0, b32 = 1, b64 = 2, b128 = 3 };

//! A tensor map (CUtensorMap's content for a tiled, interleave-free map), built on the host.
struct tma_map {
  const void* base = nullptr;
  int rank = 0;                        //!< 1..5
  int elem_bytes = 2;
  std::uint64_t dims[5] = {};          //!< elements per dimension, dimension 0 contiguous
  std::uint64_t strides[5] = {};       //!< bytes between consecutive indices of dimension i (strides[0] = elem_bytes)
  std::uint32_t box[5] = {};           //!< the tile copied per load, in elements
  swizzle_mode swizzle = swizzle_mode::none;
};
//! cp.async.bulk.tensor.<rank>d.shared::cluster.global.mbarrier::complete_tx::bytes: copies the box at
//! element coordinates `coords` (signed; elements outside [0, dims) read as zero) into shared memory at
//! `dst`, densely (box[0] elements per row, rows in dimension order), with the map's swizzle applied to
//! the destination addresses, then completes box-bytes transaction bytes on `bar` (the whole box,
//! out-of-bounds elements included). Checks what the hardware requires: dst 128-byte aligned (1024 with
//! 128-byte swizzle), box[0] * elem_bytes a multiple of 16 and at most the swizzle span, box sizes in
//! 1..256, base 16-byte aligned, strides multiples of 16. The emulator copies synchronously: shared
//! memory is written and the bytes completed when the call returns.
void tma_load(const tma_map* map, void* dst, mbarrier_state* bar, const std::int32_t* coords, call_site site);

//! One warpgroup MMA (wgmma.mma_async m64nNk16, fp32 accumulators, bf16 or fp16 inputs), executed as a
//! collective of the 128 threads of a warpgroup (threads [128 g, 128 g + 128) of the block): every thread
//! must reach the same call site; the product is computed when all have, from shared memory through the
//! descriptors and from every thread's A registers, with the PTX ISA's layouts:
//!  - accumulator (per thread t: warp w = t / 32 of the group, lane l): value i = 4 j + r holds row
//!    16 w + l / 4 + 8 (r / 2), column 8 j + 2 (l % 4) + r % 2;
//!  - A in registers (4 x 32 bits = 8 elements per thread): value v holds row 16 w + l / 4 + 8 ((v / 2) % 2),
//!    k = 2 (l % 4) + v % 2 + 8 (v / 4);
//!  - A or B in shared memory: a 64-bit descriptor (start address >> 4 in bits 0-13, leading byte offset
//!    >> 4 in 16-29, stride byte offset >> 4 in 32-45, layout in 62-63: 0 none, 1 128-byte swizzle,
//!    2 64-byte, 3 32-byte) read through the ISA's canonical K-major or MN-major layouts (`a_mn_major`,
//!    `b_mn_major`: the transpose immediates). The matrix base offset (bits 49-51) must be 0 (swizzle
//!    patterns start at their repeat boundary, as CUTLASS always encodes it); the emulator reports others.
//! The product is computed synchronously when the warpgroup has arrived (wgmma.fence, commit_group and
//! wait_group have nothing to order on the emulator and are not checked).
struct wgmma_op {
  int n = 0;                        //!< N: a multiple of 8, 8..256
  bool bf16 = true;                 //!< inputs bf16 (else fp16)
  bool a_in_registers = false;
  bool a_mn_major = false, b_mn_major = false;
  bool accumulate = true;           //!< scale-d: false overwrites D with A*B
  std::uint64_t a_desc = 0, b_desc = 0;
  const std::uint32_t* a_regs = nullptr;  //!< this thread's 4 registers when a_in_registers
  float* d = nullptr;                     //!< this thread's n / 2 accumulators
};
void wgmma(const wgmma_op& op, call_site site);

//! setmaxnreg.{inc,dec}.sync.aligned.u32: a checked no-op (24 <= n <= 256, n % 8 == 0, executed by
//! every thread of the warpgroup at the same call site).
void set_max_registers(int n, call_site site);

}  // namespace pk::backend::host
