// Host emulator: grid execution. A launch runs to completion before it returns (the host "stream"
// is in-order and synchronous); errors detected while emulating come back as a pk::status.
#pragma once
#include <pk/backend/host/intrinsics.hpp>
#include <pk/status.hpp>

#include <cstdint>
#include <functional>

namespace pk::backend::host {

struct launch_config {
  dim3 grid;
  dim3 block;
  std::size_t dynamic_smem = 0;
  int warp_size = 32;                         //!< of the impersonated arch (32 or 64)
  std::int64_t smem_limit_per_block = 48 * 1024;  //!< of the impersonated device (static + dynamic)
  int max_threads_per_block = 1024;           //!< of the impersonated device
  const char* kernel_name = "kernel";
};

//! Emulator-wide settings (process global; tests may change them).
struct emulator_options {
  bool poison_shared = true;  //!< fill shared memory with 0xFF bytes (NaN for floats) at allocation
  unsigned workers = 0;       //!< OS threads over blocks; 0 = std::thread::hardware_concurrency()
  std::size_t fiber_stack_bytes = 256 * 1024;  //!< per GPU thread; a guard page below catches overflow
};
emulator_options& options() noexcept;

//! Runs `body` once per GPU thread of the grid; returns when every block has finished.
//! Divergent warp collectives, barriers that cannot complete and shared-memory overuse end the
//! launch with errc::emulation_error naming the block, the threads and the call sites.
pk::status launch(const launch_config& cfg, const std::function<void()>& body);

}  // namespace pk::backend::host
