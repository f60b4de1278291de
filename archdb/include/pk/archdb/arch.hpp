// pk::archdb — ISA ("arch") traits: one row per compile target.
//
// Header-only and usable in device code (nvcc with --expt-relaxed-constexpr, HIP clang): only constexpr
// functions, no std::string, no containers, no exceptions. In nvcc device code, call traits()/parse_arch()
// with constant arguments (as selectors do with the compiled arch): nvcc does not place namespace-scope
// constexpr arrays in device memory, so a lookup with a run-time index does not compile there. Every fact cites a key of
// ARCH_FACTS §9 (the project's sourced hardware notes) in brackets. Per-product facts (SM count, L2, bandwidth, ...) live in
// archdb/devices/*.json, not here.
//
//! Usage:
//! \code
//!   constexpr auto& t = pk::archdb::traits(pk::archdb::arch::gfx942);
//!   static_assert(t.warp_size == 64);
//!   pk::archdb::arch a{};
//!   if (pk::archdb::parse_arch("sm_86", a)) { /* a == arch::sm86 */ }
//! \endcode
#pragma once

#include <cstddef>
#include <cstdint>

namespace pk::archdb {

//! GPU vendor.
enum class vendor : std::uint8_t { nvidia, amd };

//! Compile targets. The enumerator order is the row order of arch_table (checked by static_assert).
enum class arch : std::uint16_t {
  generic,
  sm80,
  sm86,
  sm89,
  sm90a,
  sm100,
  sm120,
  gfx90a,
  gfx942,
  gfx950,
  gfx1100,
  gfx1201
};

//! Matrix-instruction family used by the portable attention path on an arch.
enum class mma_family : std::uint8_t {
  none,
  mma_sync_m16n8k16,
  wgmma,
  tcgen05,
  mfma_cdna2,
  mfma_cdna3,
  mfma_cdna4,
  wmma_rdna3,
  wmma_rdna4
};

//! ISA facts of one compile target.
struct arch_traits {
  arch id;
  vendor vendor_id;
  const char* name;     //!< "sm_80", "sm_90a", "gfx942", "generic"
  arch fallback;        //!< next arch whose tuned data/code path is valid here; ends at generic
  int warp_size;        //!< 32 | 64
  int max_threads_per_block;
  int smem_banks;       //!< shared memory / LDS banks
  int smem_bank_bytes;  //!< bytes per bank
  bool has_async_copy;  //!< per-lane asynchronous 16-B global->shared copy (cp.async semantics)
  bool has_tma;         //!< cp.async.bulk.tensor
  bool has_clusters;    //!< thread-block clusters / distributed shared memory
  mma_family mma;       //!< matrix family the portable attention path uses
  bool has_wgmma;       //!< wgmma.mma_async available (sm_90a only)
  //! Programmatic dependent launch: a kernel may start while the previous one in its stream finishes, and waits
  //! for it with griddepcontrol.wait. [PTX griddepcontrol]: PTX ISA, "griddepcontrol": introduced in PTX ISA
  //! 7.8, requires sm_90 or higher (https://docs.nvidia.com/cuda/parallel-thread-execution/, not in ARCH_FACTS §9).
  bool has_grid_dependency;
};

// Row conventions:
//  * The portable attention path uses mma.sync m16n8k16 on every NVIDIA arch from sm_80 (DESIGN.md,
//    "host emulator": "mma.sync m16n8k16 for sm_80+"); wgmma/tcgen05 availability is a separate fact.
//  * Fallbacks follow ARCH_FACTS §7 pitfalls 8 and 10: an sm_90a cubin does not run on sm_100, so no
//    arch falls back to sm90a; sm_120 has sm_89-like limits and instructions.
//  * AMD has_async_copy is false everywhere. gfx950 does have 16 B/lane LDS DMA
//    (`global_load_lds_dwordx4`, `hasLDSLoadB96_B128() == hasGFX950Insts()` [LLVM-GCNST][TL-2058]), but it
//    writes to an M0-based, wave-uniform LDS address rather than a per-lane destination, so it is not the
//    cp.async programming model; a separate predicate should expose it when a kernel uses it.
inline constexpr arch_traits arch_table[] = {
    // generic: the host pass and unknown targets (vendor is nominal). Values are the most conservative common ones:
    // warp 32 is STYLE.md rule 4's min_warp_size; 1024 threads/block holds on every row below.
    {arch::generic, vendor::nvidia, "generic", arch::generic,
     32,                         // min_warp_size [STYLE rule 4]
     1024,                       // common to all rows [PG-CC][LLVM getMaxFlatWorkGroupSize]
     32, 4,                      // 32 x 4 B on every sourced row [PG-CC Tbl 31][RPC]
     false, false, false, mma_family::none, false,
     false},                     // the host pass
    {arch::sm80, vendor::nvidia, "sm_80", arch::generic,
     32,                         // [PG-CC]
     1024,                       // [PG-CC]
     32, 4,                      // [PG-CC Tbl 31][PG-BANK]
     true,                       // cp.async [PG-CC Tbl 29][CUTLASS copy_sm80]
     false,                      // no TMA [PG-CC Tbl 29]
     false,                      // no clusters [PG-CC]
     mma_family::mma_sync_m16n8k16,  // [TG-AMP][CUTLASS mma_sm80]
     false,                      // wgmma is sm_90a only [LLVM-D155851]
     false},                     // no griddepcontrol before sm_90 [PTX griddepcontrol]
    {arch::sm86, vendor::nvidia, "sm_86", arch::sm80,  // same instruction set as sm_80 minus FP64 TC [PG-CC Tbl 33]
     32, 1024,                   // [PG-CC]
     32, 4,                      // [PG-CC Tbl 31]
     true,                       // cp.async [PG-CC Tbl 29]
     false, false,               // [PG-CC Tbl 29]
     mma_family::mma_sync_m16n8k16,  // [PG-CC Tbl 33]
     false,                      // [LLVM-D155851]
     false},                     // no griddepcontrol before sm_90 [PTX griddepcontrol]
    {arch::sm89, vendor::nvidia, "sm_89", arch::sm86,  // sm_86 limits (48 warps, 99 KB) + FP8 mma [PG-CC][CUTLASS mma_sm89]
     32, 1024,                   // [PG-CC]
     32, 4,                      // [PG-CC Tbl 31]
     true,                       // cp.async [PG-CC Tbl 29]
     false, false,               // [PG-CC Tbl 29]
     mma_family::mma_sync_m16n8k16,  // [CUTLASS mma_sm89]
     false,                      // [LLVM-D155851]
     false},                     // no griddepcontrol before sm_90 [PTX griddepcontrol]
    {arch::sm90a, vendor::nvidia, "sm_90a", arch::sm80,  // mma.sync/cp.async baseline path [ARCH_FACTS §5]
     32, 1024,                   // [PG-CC]
     32, 4,                      // [PG-CC Tbl 31]
     true,                       // cp.async [PG-CC Tbl 29]
     true,                       // cp.async.bulk.tensor, PTX ISA 8.0 SM_90 [CCCL]
     true,                       // clusters / DSMEM [PG-CC]
     mma_family::mma_sync_m16n8k16,  // portable path; mma.sync still present [ARCH_FACTS §5]
     true,                       // wgmma needs sm_90a [LLVM-D155851]
     true},                      // [PTX griddepcontrol]: sm_90 and later
    {arch::sm100, vendor::nvidia, "sm_100", arch::sm80,  // sm_90a code does not run here [ARCH_FACTS §7.10]
     32, 1024,                   // [PG-CC]
     32, 4,                      // [PG-CC Tbl 31]
     true,                       // [PG-CC Tbl 29]
     true,                       // TMA [PG-CC Tbl 29][TG-BW]
     true,                       // clusters, portable 8 / non-portable 16 [TG-BW]
     mma_family::mma_sync_m16n8k16,  // portable path; tcgen05 needs sm_100a [CCCL tcgen05_alloc.h]
     false,                      // no wgmma on sm_100 [LLVM-D155851][ARCH_FACTS §5]
     true},                      // [PTX griddepcontrol]: sm_90 and later
    {arch::sm120, vendor::nvidia, "sm_120", arch::sm89,  // sm_89-like limits and mma.sync set [ARCH_FACTS §7.8]
     32, 1024,                   // [PG-CC]
     32, 4,                      // [PG-CC Tbl 31]
     true,                       // [PG-CC Tbl 29]
     true,                       // TMA for sm120f [CUTLASS config.hpp][PG-CC Tbl 29]
     true,                       // clusters [PG-CC]
     mma_family::mma_sync_m16n8k16,  // no tcgen05/wgmma [CUTLASS mma_sm120][NVF-tcgen05]
     false,                      // [NVF-tcgen05][LLVM-D155851]
     true},                      // [PTX griddepcontrol]: sm_90 and later
    {arch::gfx90a, vendor::amd, "gfx90a", arch::generic,
     64,                         // wave64 [ROCM-SPECS]
     1024,                       // [LLVM getMaxFlatWorkGroupSize]
     32, 4,                      // 32 banks x 4 B [RPC soc_gfx90a lds_banks_per_cu=32]
     false,                      // LDS DMA is 4 B/lane only [LLVM][GH-DTL]; see row conventions
     false, false,               // no TMA / clusters on AMD [ARCH_FACTS §5]
     mma_family::mfma_cdna2,     // MFMA 32x32x8 / 16x16x16 [MIC cdna2]
     false,
     false},                     // griddepcontrol is an NVIDIA PTX instruction [PTX griddepcontrol]
    {arch::gfx942, vendor::amd, "gfx942", arch::gfx90a,  // same MFMA shapes, wave64, 64 KiB LDS [MIC][ROCM-SPECS]
     64,                         // [ROCM-SPECS]
     1024,                       // [LLVM getMaxFlatWorkGroupSize]
     32, 4,                      // [RPC soc_gfx942]
     false,                      // <= 4 B/lane LDS DMA [LLVM-GCNST]
     false, false,               // [ARCH_FACTS §5]
     mma_family::mfma_cdna3,     // [MIC cdna3]
     false,
     false},                     // griddepcontrol is an NVIDIA PTX instruction [PTX griddepcontrol]
    {arch::gfx950, vendor::amd, "gfx950", arch::gfx942,  // gfx942 MFMA set is a subset [LLVM-gfx950-mfma]
     64,                         // [ROCM-SPECS]
     1024,                       // [LLVM getMaxFlatWorkGroupSize]
     32, 4,                      // unsourced (ARCH_FACTS §8): assumed equal to gfx942; measure
     false,                      // 16 B/lane LDS DMA exists but is not cp.async-like [LLVM-GCNST][TL-2058]
     false, false,               // [ARCH_FACTS §5]
     mma_family::mfma_cdna4,     // [LLVM-gfx950-mfma]
     false,
     false},                     // griddepcontrol is an NVIDIA PTX instruction [PTX griddepcontrol]
    {arch::gfx1100, vendor::amd, "gfx1100", arch::generic,
     32,                         // native wave32 [ROCM-SPECS][LLVM-BASEINFO]
     1024,                       // [LLVM getMaxFlatWorkGroupSize]
     32, 4,                      // unsourced (ARCH_FACTS §8): bank geometry not confirmed; measure
     false,                      // LDS-DMA on gfx11 unverified (unsourced, ARCH_FACTS §5)
     false, false,               // [ARCH_FACTS §5]
     mma_family::wmma_rdna3,     // WMMA 16x16x16 [MIC rdna3]
     false,
     false},                     // griddepcontrol is an NVIDIA PTX instruction [PTX griddepcontrol]
    // gfx1201 (RDNA4) does not fall back to gfx1100: its WMMA takes other operand layouts (no lane
    // duplication), so RDNA3 code is wrong there [GPUOPEN-RDNA4: AMD GPUOpen, "Using the Matrix Cores of AMD
    // RDNA 4 architecture GPUs", https://gpuopen.com/learn/using_matrix_core_amd_rdna4/].
    {arch::gfx1201, vendor::amd, "gfx1201", arch::generic,
     32,                         // native wave32 [LLVM-BASEINFO: GFX10+ default wave32]
     1024,                       // [LLVM getMaxFlatWorkGroupSize]
     32, 4,                      // unsourced (ARCH_FACTS §8, as gfx1100): bank geometry not confirmed; measure
     false,                      // no per-lane async copy known on gfx12 (unsourced)
     false, false,               // [ARCH_FACTS §5]
     mma_family::wmma_rdna4,     // WMMA 16x16x16, gfx12 operand layouts [GPUOPEN-RDNA4][LLVM BuiltinsAMDGPU *_gfx12]
     false,
     false},                     // griddepcontrol is an NVIDIA PTX instruction [PTX griddepcontrol]
};

//! Number of rows in arch_table (== number of arch enumerators).
inline constexpr std::size_t arch_count = sizeof(arch_table) / sizeof(arch_table[0]);

namespace detail {
constexpr bool table_in_enum_order() noexcept {
  for (std::size_t i = 0; i < arch_count; ++i)
    if (static_cast<std::size_t>(arch_table[i].id) != i) return false;
  return true;
}
constexpr char to_lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
// Case-insensitive equality of [a, a_end) with [b, b_end).
constexpr bool iequal(const char* a, std::size_t na, const char* b, std::size_t nb) noexcept {
  if (na != nb) return false;
  for (std::size_t i = 0; i < na; ++i)
    if (to_lower(a[i]) != to_lower(b[i])) return false;
  return true;
}
constexpr std::size_t length(const char* s) noexcept {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}
// Strips an optional "sm_" / "sm" prefix (NVIDIA spellings "sm_80", "sm80", "80").
constexpr void strip_sm_prefix(const char*& s, std::size_t& n) noexcept {
  if (n >= 2 && to_lower(s[0]) == 's' && to_lower(s[1]) == 'm') {
    s += 2;
    n -= 2;
    if (n >= 1 && s[0] == '_') {
      ++s;
      --n;
    }
  }
}
// Drops one trailing NVIDIA feature suffix letter ('a' arch-specific, 'f' family) after a digit.
constexpr void strip_feature_suffix(const char* s, std::size_t& n) noexcept {
  if (n >= 2 && (to_lower(s[n - 1]) == 'a' || to_lower(s[n - 1]) == 'f') && s[n - 2] >= '0' && s[n - 2] <= '9') --n;
}
}  // namespace detail

static_assert(detail::table_in_enum_order(), "arch_table rows must follow the order of enum class arch");

//! Traits of an arch. Out-of-range values yield the generic row.
constexpr const arch_traits& traits(arch a) noexcept {
  const auto i = static_cast<std::size_t>(a);
  return i < arch_count ? arch_table[i] : arch_table[0];
}

//! Canonical name of an arch ("sm_90a", "gfx942", "generic").
constexpr const char* name_of(arch a) noexcept { return traits(a).name; }

//! Parses an arch name, case-insensitively. Accepts the canonical names ("sm_80", "sm_90a", "gfx942",
//! "generic"), NVIDIA spellings without "sm_" or without the underscore ("sm80", "80", "90a"), and an
//! NVIDIA name without its feature suffix ("sm_90" -> sm90a, "sm_100a" -> sm100), since each compute
//! capability has exactly one row. Returns false and leaves `out` unchanged when nothing matches.
constexpr bool parse_arch(const char* s, arch& out) noexcept {
  if (s == nullptr) return false;
  const std::size_t n_in = detail::length(s);
  for (std::size_t i = 0; i < arch_count; ++i) {
    const char* row = arch_table[i].name;
    if (detail::iequal(s, n_in, row, detail::length(row))) {
      out = arch_table[i].id;
      return true;
    }
  }
  const char* q = s;
  std::size_t nq = n_in;
  detail::strip_sm_prefix(q, nq);
  if (nq == 0 || q[0] < '0' || q[0] > '9') return false;
  for (int pass = 0; pass < 2; ++pass) {  // pass 0: exact suffix; pass 1: suffix-insensitive
    std::size_t nq_cmp = nq;
    if (pass == 1) detail::strip_feature_suffix(q, nq_cmp);
    for (std::size_t i = 0; i < arch_count; ++i) {
      if (arch_table[i].vendor_id != vendor::nvidia || arch_table[i].id == arch::generic) continue;
      const char* r = arch_table[i].name;
      std::size_t nr = detail::length(r);
      detail::strip_sm_prefix(r, nr);
      if (pass == 1) detail::strip_feature_suffix(r, nr);
      if (detail::iequal(q, nq_cmp, r, nr)) {
        out = arch_table[i].id;
        return true;
      }
    }
  }
  return false;
}

//! True when code/tuning for `target` is valid on `a` (a == target or target is on a's fallback chain).
constexpr bool falls_back_to(arch a, arch target) noexcept {
  for (std::size_t hops = 0; hops <= arch_count; ++hops) {
    if (a == target) return true;
    if (a == arch::generic) return false;
    a = traits(a).fallback;
  }
  return false;
}

}  // namespace pk::archdb
