// pk::archdb — occupancy models (ARCH_FACTS §6): NVIDIA (cuda_occupancy.h, CUDA 13.0), AMD CDNA2/3/4
// (LLVM AMDGPU) and AMD RDNA3 (wave32, WGP mode). Host-only.
//
//! Usage:
//! \code
//!   const auto* h100 = pk::archdb::find_device("H100 SXM");
//!   pk::archdb::kernel_resources k{256, 168, 0, 64 * 1024};
//!   auto r = pk::archdb::occupancy(*h100, k);   // r.blocks_per_sm == 1, r.limiter == "registers"
//! \endcode
#pragma once

#include <cstdint>
#include <string>

#include "pk/archdb/device.hpp"

namespace pk::archdb {

//! Resources of one kernel instance, as the compiler reports them.
struct kernel_resources {
  int threads_per_block = 0;
  int regs_per_thread = 0;        //!< NVIDIA registers; AMD ArchVGPRs
  std::int64_t static_smem = 0;   //!< bytes (LDS on AMD)
  std::int64_t dynamic_smem = 0;  //!< bytes (LDS on AMD)
  int named_barriers = 0;         //!< NVIDIA: block barriers used (0 = the barrier limit is not applied)
  int agprs = 0;                  //!< AMD CDNA: AccVGPRs
  int sgprs = 0;                  //!< AMD: SGPRs (0 = unknown, not applied)
};

//! Result of an occupancy calculation. On RDNA3 the unit is a WGP (device_desc::occupancy_units()).
struct occupancy_result {
  int blocks_per_sm = 0;    //!< resident blocks (workgroups) per SM / CU / WGP; 0 = cannot launch
  int active_warps = 0;     //!< resident warps (waves) per SM / CU / WGP
  double occupancy = 0;     //!< fraction of the maximum resident warps (waves per SIMD / max on AMD)
  const char* limiter = ""; //!< "warps","registers","shared memory","blocks","barriers","vgprs","lds",
                            //!< "sgprs", or "invalid" when the kernel cannot launch on the device
  std::string detail;       //!< every intermediate limit, human readable
};

//! Occupancy of `k` on `d`, dispatched on the device's vendor and arch. Never throws; a kernel that can
//! not launch (too many threads, registers or bytes per block) yields blocks_per_sm == 0, limiter
//! "invalid" and the reason in detail. `preferred_carveout` (bytes, NVIDIA only; < 0 = the default, the
//! largest carveout) models cudaFuncAttributePreferredSharedMemoryCarveout: it is rounded up to a legal
//! carveout, and raised to the smallest legal one that holds one block (ARCH_FACTS §7.3).
occupancy_result occupancy(const device_desc& d, const kernel_resources& k, std::int64_t preferred_carveout = -1);

//! The NVIDIA model (ARCH_FACTS §6.1).
occupancy_result occupancy_nvidia(const device_desc& d, const kernel_resources& k, std::int64_t preferred_carveout = -1);
//! The AMD CDNA2/3/4 model (ARCH_FACTS §6.2). The LDS granule is applied (LLVM's own model ignores it).
occupancy_result occupancy_cdna(const device_desc& d, const kernel_resources& k);
//! The AMD RDNA3 model in WGP mode (ARCH_FACTS §6.3).
occupancy_result occupancy_rdna3(const device_desc& d, const kernel_resources& k);

}  // namespace pk::archdb
