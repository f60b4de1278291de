// pk::archdb — the device (product) database. Host-only.
//
// Built-in entries are the files archdb/devices/*.json, embedded into the library at configure time.
// Every number of an entry carries its source (see device_desc::sources / marks).
//
//! Usage:
//! \code
//!   if (const auto* d = pk::archdb::find_device("RTX 3090")) std::puts(pk::archdb::describe(*d).c_str());
//!   pk::archdb::device_query q;                      // filled by a backend from cudaGetDeviceProperties
//!   q.name = "NVIDIA H200"; q.vendor_id = pk::archdb::vendor::nvidia; q.cc_major = 9; q.sm_count = 132;
//!   pk::archdb::device_desc d = pk::archdb::resolve_device(q);   // d.name == "H200 SXM"
//! \endcode
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pk/archdb/arch.hpp"

namespace pk::archdb {

//! Runtime description of one device (product). NVIDIA-only fields are 0 on AMD and vice versa.
//! "sm" means SM on NVIDIA and CU on AMD; "smem" means shared memory on NVIDIA and LDS on AMD.
struct device_desc {
  std::string name;                  //!< canonical product name, e.g. "H200 SXM"
  std::vector<std::string> aliases;  //!< other spellings, e.g. "NVIDIA H200"
  vendor vendor_id = vendor::nvidia;
  arch isa = arch::generic;
  bool synthesized = false;     //!< built from a device query and arch traits: no database entry matched
  bool from_user_file = false;  //!< added or overridden by PK_ARCHDB_FILE / load_user_devices()

  int sm_count = 0;
  int warp_size = 0;
  int max_threads_per_sm = 0;
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;  //!< NVIDIA: hard block cap; AMD: single-wave workgroups per CU
  int max_threads_per_block = 0;

  int regs_per_sm = 0;          //!< NVIDIA: 32-bit registers per SM
  int regs_per_block = 0;       //!< NVIDIA: 32-bit registers per block
  int reg_alloc_unit = 0;       //!< NVIDIA: registers allocated per warp in steps of this
  int max_regs_per_thread = 0;  //!< NVIDIA
  int smsp_per_sm = 0;          //!< NVIDIA: SM sub-partitions (register file is split across them)
  int barrier_blocks_factor = 0;  //!< NVIDIA: named-barrier budget = factor x max_blocks_per_sm

  int simds_per_cu = 0;          //!< AMD: SIMDs (EUs) per CU
  int cus_per_wgp = 0;           //!< AMD: CUs per occupancy unit (2 on RDNA3 in WGP mode, else 1)
  int vgprs_per_simd_lane = 0;   //!< AMD: total VGPR file per lane (ArchVGPR + AGPR where unified)
  int max_arch_vgprs = 0;        //!< AMD: addressable ArchVGPRs per wave
  int agprs_per_lane = 0;        //!< AMD: addressable AGPRs per wave (0 where none)
  int vgpr_granule = 0;          //!< AMD: VGPR allocation granule
  int max_waves_per_simd = 0;    //!< AMD
  int sgprs_per_simd = 0;        //!< AMD: 0 = SGPRs do not limit occupancy
  int max_sgprs = 0;             //!< AMD: addressable SGPRs per wave
  int max_barrier_wgs_per_cu = 0;  //!< AMD: multi-wave workgroups per CU (barrier limit)

  std::int64_t smem_per_sm = 0;              //!< largest carveout (NVIDIA) / LDS per CU (AMD)
  std::int64_t smem_per_block = 0;           //!< without opt-in (NVIDIA static limit; AMD cap)
  std::int64_t smem_per_block_optin = 0;     //!< max per block with opt-in
  std::int64_t smem_reserved_per_block = 0;  //!< driver reservation per resident block
  std::int64_t smem_alloc_granularity = 0;
  std::vector<int> smem_carveouts_kb;        //!< NVIDIA: legal carveout sizes, KB, ascending

  std::int64_t l2_bytes = 0;
  std::int64_t llc_bytes = 0;  //!< Infinity Cache / MALL; 0 if none
  double mem_bw_gbps = 0;
  double peak_bf16_tflops = 0;  //!< dense matrix, FP32 accumulate
  double peak_fp16_tflops = 0;  //!< dense matrix, FP32 accumulate
  double peak_fp32_tflops = 0;  //!< non-matrix
  double peak_fp64_tflops = 0;  //!< non-matrix

  int cc_major = 0;
  int cc_minor = 0;
  std::string gcn_arch_name;  //!< AMD base target, e.g. "gfx942"

  std::vector<std::string> mma_families;  //!< e.g. "mma_sync_m16n8k16", "wgmma", "mfma_cdna3"
  std::vector<std::string> async_copy;    //!< e.g. "cp.async", "tma", "lds_dma_b128"
  std::vector<std::string> name_patterns; //!< '*' globs matched against queried names

  //! Cost-model constants measured on this device ("calibration": {"<family>.<name>": {"value": x,
  //! "source": "measured: device, date, command, where the fit is recorded"}}); read through calibrated(),
  //! which also finds a measurement of another device of the same arch. Source: sources["calibration.<key>"].
  std::map<std::string, double, std::less<>> calibration;

  std::map<std::string, std::string> sources;  //!< field -> source text ("[KEY] ..." or "query")
  std::map<std::string, std::string> marks;    //!< field -> "derived" | "2nd" | "unsourced" | "conflict"

  //! Occupancy units (SMs, CUs, or WGPs on RDNA3 in WGP mode) over which blocks are distributed.
  [[nodiscard]] int occupancy_units() const noexcept {
    return cus_per_wgp > 1 ? sm_count / cus_per_wgp : sm_count;
  }
};

//! All devices: built-in entries, then entries of PK_ARCHDB_FILE (read on first call) and of
//! load_user_devices(). Load user files at start-up, before other threads use the database: a later
//! load may reallocate the vector and invalidate references into it.
const std::vector<device_desc>& all_devices();

//! Problems met while loading the built-in entries and user files (empty when all loaded).
std::vector<std::string> load_errors();

//! Adds or overrides entries from a JSON file holding one entry object or an array of them. An entry
//! whose name matches an existing one (find_device rules) overrides only the fields it lists; a new name
//! must list every required field. Returns false and sets *err (if given) on failure; never throws.
bool load_user_devices(const std::string& path, std::string* err = nullptr);

//! Device by name or alias: case-insensitive, ignoring spaces, dashes and underscores. nullptr if none.
const device_desc* find_device(std::string_view name);

//! A cost-model constant: where its value comes from.
struct calibrated_value {
  double value = 0;
  //! The device whose measurement it is (d itself, or another device of d's arch), or empty: the
  //! uncalibrated value the caller passed.
  std::string measured_on;
  //! Where the value comes from, for a plan's reasons: "measured on the <device>" or "a priori".
  [[nodiscard]] std::string origin() const { return measured_on.empty() ? "a priori" : "measured on the " + measured_on; }
};
//! Cost-model constant `key` ("<family>.<name>") for device d: d's own measurement, else the measurement of
//! the first database device of the same arch that has one (the same SM design: the constants describe how a
//! kernel runs on it), else `uncalibrated` (the model's a-priori value).
calibrated_value calibrated(const device_desc& d, std::string_view key, double uncalibrated);

//! What a backend reads from cudaGetDeviceProperties / hipGetDeviceProperties. 0 / empty = unknown.
struct device_query {
  std::string name;
  vendor vendor_id = vendor::nvidia;
  int cc_major = 0, cc_minor = 0;
  std::string gcn_arch_name;  //!< e.g. "gfx942:sramecc+:xnack-"
  int sm_count = 0, warp_size = 0, max_threads_per_sm = 0, max_threads_per_block = 0, regs_per_sm = 0,
      regs_per_block = 0, max_blocks_per_sm = 0;
  std::int64_t smem_per_sm = 0, smem_per_block = 0, smem_per_block_optin = 0, smem_reserved_per_block = 0,
               l2_bytes = 0;
  double mem_clock_khz = 0;
  int mem_bus_width_bits = 0;
};

//! Maps a query to a device. A database entry matches when vendor and compute capability / gfx target
//! agree and either an exact name/alias matches, or a name pattern matches and the SM count agrees.
//! Queried non-zero limits then override the entry (sources[field] becomes "query"). Without a match the
//! result is synthesized (synthesized = true) from the query, the arch traits and the per-arch limits of
//! a database entry of the same arch; product facts the query lacks (peak rates) stay 0.
device_desc resolve_device(const device_query& q);

//! Arch a device query runs: the gfx target on AMD; on NVIDIA the table arch of the same major
//! compute capability with the highest minor <= the query's, else the highest lower one. generic if none.
arch arch_of(const device_query& q) noexcept;

//! Multi-line human-readable summary, with marks on derived/2nd/unsourced/conflicting values.
std::string describe(const device_desc& d);

}  // namespace pk::archdb
