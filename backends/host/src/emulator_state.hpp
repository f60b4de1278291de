// The emulator's internal state, shared by the scheduler (emulator.cpp) and the sm_90a machinery
// (hopper.cpp): the record of each GPU thread (a fiber and what it waits on) and of each block.
#pragma once
#include <pk/backend/host/launch.hpp>

#include <boost/context/fiber.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace pk::backend::host {

namespace detail {

// Thrown inside a fiber after the error was recorded, or when the scheduler abandons the block; unwinds
// the GPU thread's stack.
struct emulation_failure {};

// A fiber's stack as AddressSanitizer's fiber-switch annotations name it (bottom: lowest address).
struct stack_bounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
};

// What a suspended GPU thread waits for. ready: runnable; at_barrier: block barrier; at_warp: warp
// collective; at_warpgroup: warpgroup collective (wgmma, setmaxnreg); at_mbarrier: a phase of an
// mbarrier (re-checked after each scheduler pass); at_named: a named barrier.
enum class lane_status : std::uint8_t { ready, at_barrier, at_warp, at_warpgroup, at_mbarrier, at_named, done, failed };

//! Warpgroup collectives.
enum class group_kind : std::uint8_t { wgmma, setmaxnreg };

struct lane {
  lane_status st = lane_status::ready;
  boost::context::fiber fiber;  // the GPU thread while it is suspended
  boost::context::fiber sched;  // the scheduler while the GPU thread runs
  thread_ctx tc;
  // Set by the scheduler before it resumes a suspended thread for the last time (after an error): the
  // thread unwinds instead of continuing (emulator.cpp, abandon_block).
  bool abandon = false;
  // For the sanitizer's fiber-switch annotations (switch_start/switch_finish in emulator.cpp).
  stack_bounds own_stack;    // this GPU thread's fiber stack
  stack_bounds sched_stack;  // the scheduler's (the worker thread's) stack
  void* fake_stack = nullptr;
  // The pending barrier or collective.
  call_site site;
  collective_kind kind = collective_kind::sync;
  group_kind gkind = group_kind::wgmma;
  const void* in = nullptr;
  void* out = nullptr;
  std::size_t bytes = 0;
  int width = 0;
  int arg = 0;
  bool pred = false;
  std::uint64_t mask_result = 0;
  warp_custom_fn fn = nullptr;
  const void* params = nullptr;
  const mbarrier_state* mbar = nullptr;  // at_mbarrier: the barrier, `arg` the parity waited on
  int named_id = 0;                      // at_named
};

//! One named barrier's phase in progress (ids 1..15).
struct named_barrier_phase {
  int count = 0;    //!< threads the phase needs (0: no phase in progress)
  int arrived = 0;  //!< threads arrived so far
  call_site first;  //!< the first arrival's call site
};

inline constexpr int named_barrier_ids = 16;
inline constexpr int warpgroup_threads = 128;

}  // namespace detail

struct block_state {
  std::vector<detail::lane> lanes;
  int warp_size = 32;
  dim3 block_idx;
  const launch_config* cfg = nullptr;
  // Shared memory: [0, dynamic) is the dynamic region, static allocations follow. The arena is
  // 1024-byte aligned and `arena_bytes` (the device's per-block limit) long.
  std::byte* arena = nullptr;
  std::size_t arena_bytes = 0;
  std::size_t used = 0;
  std::vector<std::pair<const void*, std::size_t>> statics;
  // The guard band: shared_guard_bytes of the arena past `used` hold shared_guard_byte while the block runs; a
  // byte that changed there at the block's end is a write past the launch's shared memory (on a GPU: another
  // block's memory or a fault). The byte is the poison's (0xFF: NaN in every floating-point type), so a read past
  // the allocation reads NaN, which the tests' comparisons catch; a store of 0xFF bytes there goes unnoticed.
  static constexpr std::size_t shared_guard_bytes = 4096;
  static constexpr std::byte shared_guard_byte{0xFF};
  void guard_after_used() {
    if (used < arena_bytes) std::memset(arena + used, static_cast<int>(shared_guard_byte), std::min(shared_guard_bytes, arena_bytes - used));
  }
  //! The offset of the first guard byte a thread changed, or arena_bytes.
  std::size_t guard_broken_at() const {
    const std::size_t end = std::min(arena_bytes, used + shared_guard_bytes);
    for (std::size_t i = used; i < end; ++i)
      if (arena[i] != shared_guard_byte) return i;
    return arena_bytes;
  }
  // mbarrier_state::magic of barriers initialised in this block (differs between blocks, so a barrier
  // left in the arena by an earlier block on the same worker reads as uninitialised).
  std::uint32_t mbarrier_magic = 0;
  detail::named_barrier_phase named[detail::named_barrier_ids];
  std::string error;

  std::string block_name() const;
  void fail(const std::string& what) {
    if (error.empty()) error = block_name() + ": " + what;
  }
};

namespace detail {

lane& self();
void yield_to_scheduler(lane& l);
[[noreturn]] void fail_here(const std::string& what);
thread_ctx& require_thread(const char* api);

std::string where(const call_site& s);
bool same_site(const call_site& a, const call_site& b);
std::string ranges(const std::vector<int>& ids);

// sm_90a pieces the scheduler calls (hopper.cpp).
//! Completes the wgmma of the warpgroup whose threads start at `first`: every thread has arrived at
//! the same call site. Records an error in b.error and returns false on invalid operands.
bool complete_wgmma(block_state& b, int first);
//! Whether the phase a thread waits on has completed; an error (recorded) if the barrier is no longer valid.
bool mbarrier_wait_done(block_state& b, const lane& l);
//! "mbarrier at shared offset X: expected arrivals E, pending arrivals P, pending tx bytes T, phase N"
std::string describe_mbarrier(const block_state& b, const mbarrier_state* m);

}  // namespace detail
}  // namespace pk::backend::host
