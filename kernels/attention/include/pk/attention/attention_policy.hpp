// Attention forward: policies (tuning as data) and the per-arch-family, per-head-dim candidate lists.
// Plain constexpr C++: the host planner reads them at run time, the kernels at compile time.
#pragma once
#include <pk/archdb/arch.hpp>
#include <pk/attention/attention.hpp>
#include <pk/attention/attn_fwd_keys.hpp>
#include <pk/config.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace pk::attention {

//! One compiled variant of a forward kernel.
//!  tiled_mma: rows of the query tile are split evenly across the block's warps (block_threads /
//!    warp_size of them: the same policy gives 4 warps of 32 rows on a wave32 NVIDIA arch and 2 waves of
//!    64 rows on wave64 CDNA).
//!  ws_wgmma_tma: one producer warpgroup and block_m / 64 consumer warpgroups (block_threads =
//!    128 * (1 + block_m / 64)); `stages` K and V tiles in flight.
struct policy {
  int block_m;        //!< queries per block
  int block_n;        //!< keys per inner iteration (K/V tile in shared memory)
  int block_threads;  //!< threads per block
  int stages;         //!< K/V shared-memory buffers. tiled_mma: 1 = FA2's overlap (V(j) loads during
                      //!< Q K(j)^T, K(j-1) during P V(j)); 2 = double buffering (K/V(j-1) load during all of
                      //!< tile j). ws_wgmma_tma: the depth of the K and V rings
  strategy strat = strategy::tiled_mma;
  //! ws_wgmma_tma: one block per SM walks the work items (a persistent grid): no block launch and set-up
  //! per item; O is staged in a tile of its own, so the next item's Q loads as soon as this item's last
  //! S = Q K^T has completed, under its last softmax, P V and epilogue (its own instance: the item loop).
  bool persistent = false;
  friend constexpr bool operator==(const policy&, const policy&) = default;
};

//! Which candidate list a code target compiles: one per vendor (a CUDA fat binary holds every NVIDIA
//! arch, a HIP one every AMD arch, so the list may depend only on the vendor).
enum class family : std::uint8_t { nvidia, amd };

constexpr family family_of(archdb::vendor v) { return v == archdb::vendor::amd ? family::amd : family::nvidia; }

//! The head dims with compiled instances: the instance table (kernels/attention/CMakeLists.txt).
inline constexpr auto& head_dims = instances::attn_fwd::head_dim_values;

constexpr bool supported_head_dim(int d) {
  for (int h : head_dims)
    if (h == d) return true;
  return false;
}

//! Elements of padding per shared-memory row: one 16-byte vector. Rows of the Q/K/V/P tiles are
//! (head_dim + pad) elements apart, so with 32 banks x 4 bytes (archdb smem_banks/smem_bank_bytes on
//! every supported arch) 8 consecutive rows read at the same column start in 8 different 16-byte bank
//! groups: the per-lane fragment loads (one row per lane group) are conflict-free.
constexpr int smem_pad_bytes = 16;

// Candidate lists, default first. Short on purpose: each entry is compiled per dtype and head dim.
// Initial values from FlashAttention-2's kernel traits (flash_fwd_launch_template.h, sm80: 128x64 with
// 4 warps for d <= 128, 8 warps for d >= 192; sm86: small tiles so that 2 blocks fit 100 KB), a
// double-buffered 128x64 for devices whose shared memory holds two of them per SM (H100/H200: 2 x 104 KB
// of 227 KB), and, for AMD, tiles sized to 64 KB of LDS with P staged in LDS. Not yet tuned on hardware
// (bench/results/attention-*). 128x128 with 8 warps was dropped: 254 registers at d128 on sm_90a (one
// block per SM) for no gain in the model.
inline constexpr std::array<policy, 4> nvidia_small{
    {{128, 64, 128, 2}, {128, 64, 128, 1}, {64, 64, 128, 1}, {64, 32, 128, 1}}};                         // d <= 128
inline constexpr std::array<policy, 3> nvidia_large{{{128, 64, 256, 1}, {64, 64, 128, 1}, {64, 32, 128, 1}}};  // d >= 192
inline constexpr std::array<policy, 3> amd_small{{{64, 64, 128, 1}, {128, 32, 256, 1}, {64, 32, 128, 1}}};     // d <= 128
inline constexpr std::array<policy, 2> amd_large{{{64, 32, 128, 1}, {32, 32, 64, 1}}};                         // d >= 192

// The warp-specialized strategy's candidates (sm_90a), for the head dims it covers. Starting tiles from
// FlashAttention-3's sm90 tile table (hopper/tile_size.h: d64 192x128 with 3 consumer warpgroups; d128
// 128x128 causal, 128x176 otherwise; d256 128x80 "hits the limit of smem"), 2 stages (its sm90 launch
// template). Measured on the H200 (bench/results/attention-h200-2026-11-30-ws.md): 128x176 was within 1% of
// 128x128 at d128 non-causal and 6% behind it causal at 16k, so it is not compiled (each candidate costs
// compile time in every sm_90a build); at d256, 128x80 measured 1-6% ahead of 128x64.
// Each tile at head_dim 64 and 128 comes as one block per work item (ws) and as a persistent grid (wsp):
// measured on the H200, the persistent grid is 6-13% faster at seqlen 1k, 6% faster at d64 16k, and up to 14%
// slower on long causal rows (its static rounds; bench/results/attention-h200-2026-12-03-qrelease.md). Not at head_dim 256: its
// item loop spilled 4-64 bytes at 240 registers (nvcc 13.0, sm_90a), and it was not measured.
inline constexpr policy ws(int bm, int bn) { return {bm, bn, 128 * (1 + bm / 64), 2, strategy::ws_wgmma_tma}; }
inline constexpr policy wsp(int bm, int bn) { return {bm, bn, 128 * (1 + bm / 64), 2, strategy::ws_wgmma_tma, true}; }
inline constexpr std::array<policy, 4> ws_d64{{ws(192, 128), wsp(192, 128), ws(128, 128), wsp(128, 128)}};
inline constexpr std::array<policy, 2> ws_d128{{ws(128, 128), wsp(128, 128)}};
inline constexpr std::array<policy, 2> ws_d256{{ws(128, 80), ws(128, 64)}};

//! The head dims the warp-specialized strategy has instances for (others plan onto tiled_mma).
constexpr std::span<const policy> ws_candidates(int head_dim) {
  switch (head_dim) {
    case 64: return ws_d64;
    case 128: return ws_d128;
    case 256: return ws_d256;
    default: return {};
  }
}

//! Whether a code target holds the warp-specialized instances: a host target emulating an arch with
//! warpgroup MMA (host_sm90a), or a CUDA build with sm_90a code (PK_CUDA_SM90A). Other targets neither
//! compile nor list them: an sm_80/86/89 build does not pay for them.
constexpr bool ws_compiled(target t) {
  const code_target_info& i = info(t);
  if (i.backend == backend_kind::cuda) return PK_CUDA_SM90A != 0;
  return i.backend == backend_kind::host && archdb::traits(i.isa).has_wgmma && archdb::traits(i.isa).has_tma;
}

namespace detail {
template <std::size_t A, std::size_t B>
constexpr std::array<policy, A + B> concat(const std::array<policy, A>& a, const std::array<policy, B>& b) {
  std::array<policy, A + B> r{};
  for (std::size_t i = 0; i < A; ++i) r[i] = a[i];
  for (std::size_t i = 0; i < B; ++i) r[A + i] = b[i];
  return r;
}
inline constexpr auto ws_then_small_64 = concat(ws_d64, nvidia_small);
inline constexpr auto ws_then_small_128 = concat(ws_d128, nvidia_small);
inline constexpr auto ws_then_large_256 = concat(ws_d256, nvidia_large);
}  // namespace detail

//! The candidate list of a code target, default first: the warp-specialized ones (where compiled, for
//! the head dims they cover), then the tiled ones of the vendor.
constexpr std::span<const policy> candidates(family f, bool ws, int head_dim) {
  if (f == family::nvidia && ws) {
    if (head_dim == 64) return detail::ws_then_small_64;
    if (head_dim == 128) return detail::ws_then_small_128;
    if (head_dim == 256) return detail::ws_then_large_256;
  }
  if (f == family::nvidia) return head_dim <= 128 ? std::span<const policy>(nvidia_small) : std::span<const policy>(nvidia_large);
  return head_dim <= 128 ? std::span<const policy>(amd_small) : std::span<const policy>(amd_large);
}
constexpr std::size_t candidate_count(family f, bool ws, int head_dim) { return candidates(f, ws, head_dim).size(); }

//! Candidates that spill a little and are kept on purpose (the planner and the CI resource check accept
//! their spills), per arch as the CI compile matrix measured them.
//! NVIDIA (ptxas -v, CUDA 13.0, sm_80/86/90a, 2026-11-30): at 255 registers, 24-128 bytes of spill
//! loads+stores per thread for 32 query rows per warp (two m16 atoms) at head_dim >= 96 and for 64x64 tiles
//! at head_dim 192 (and, since the kernel was split into pieces, 64 B at head_dim 96 on sm_90a: CI compile
//! matrix 2026-11-30). The 32-rows-per-warp tiles are still the fastest measured on the H200
//! (bench/results/attention-h200-2026-11-30.md); 64x64 is declared for every head_dim >= 96.
//! AMD (clang-19 remarks, scratch bytes per lane): gfx1100 (WMMA, wave32, 256 VGPRs) 144-348 at head_dim 96
//! and 192 (2026-11-30); gfx1201 (RDNA4 WMMA) 20-36 at head_dim 96 and 128, 88-412 at 192 and 256
//! (2026-12-02); gfx90a/gfx942 and gfx950 (clang-22) none.
constexpr bool declares_spills(archdb::arch a, const policy& p, int head_dim) {
  if (p.strat == strategy::ws_wgmma_tma) return false;
  if (a == archdb::arch::gfx1100) return head_dim == 96 || head_dim == 192;
  if (a == archdb::arch::gfx1201) return head_dim >= 96;
  if (archdb::traits(a).vendor_id != archdb::vendor::nvidia) return false;
  const int rows_per_warp = p.block_m * 32 / p.block_threads;  // NVIDIA warps are 32 lanes
  return (rows_per_warp >= 32 && head_dim >= 96) || (p.block_m == 64 && p.block_n == 64 && head_dim >= 96);
}

//! Whether the kernel stages P (the softmax probabilities) in shared memory: when the MMA atom's
//! accumulator layout is not its A-operand layout (MFMA, WMMA). Decided per atom by mma_layout::c_feeds_a;
//! the planner needs it per vendor: NVIDIA's mma.sync keeps P in registers.
constexpr bool stages_p(family f) { return f == family::amd; }

//! Shared memory of the warp-specialized kernel: swizzled Q, K and V tiles (no padding: the swizzle
//! spreads the banks), the persistent grid's O tile (the one-block-per-item kernel stages O in the Q
//! tile), its barriers, and the slack that aligns the tiles to their 1024-byte swizzle pattern.
//! Room for the kernel's 2 + 4 * stages barriers: 8 bytes each on the device, 24 in the emulator
//! (backends/host mbarrier_state), and 10 x 24 = 240 at 2 stages.
inline constexpr int ws_barrier_bytes = 256;
inline constexpr int ws_align_slack = 1024;
constexpr std::int64_t ws_smem_bytes(const policy& p, int head_dim, int elem_bytes) {
  const std::int64_t q_and_o = std::int64_t{p.block_m} * (p.persistent ? 2 : 1);
  const std::int64_t tiles = (q_and_o + 2 * std::int64_t{p.block_n} * p.stages) * head_dim * elem_bytes;
  return tiles + ws_barrier_bytes + ws_align_slack;
}

//! Dynamic shared memory of a policy: Q tile, `stages` K and V tiles and (if staged) the P tile.
constexpr std::int64_t smem_bytes(const policy& p, int head_dim, int elem_bytes, bool staged_p) {
  if (p.strat == strategy::ws_wgmma_tma) return ws_smem_bytes(p, head_dim, elem_bytes);
  const std::int64_t pad = smem_pad_bytes / elem_bytes;
  const std::int64_t qkv = (std::int64_t{p.block_m} + 2 * std::int64_t{p.block_n} * p.stages) * (head_dim + pad);
  const std::int64_t pt = staged_p ? std::int64_t{p.block_m} * (p.block_n + pad) : 0;
  return (qkv + pt) * elem_bytes;
}

//! "attn_fwd_bf16_d128_b128x64_t128_s2" (tiled), "attn_fwd_bf16_d128_ws_b128x128_t384_s2" (warp-specialized;
//! "_wsp_": its persistent grid) — the instance name (kernel names, plans, tuning cache).
inline std::string name_of(const policy& p, const char* type, int head_dim) {
  return std::string("attn_fwd_") + type + "_d" + std::to_string(head_dim) +
         (p.strat == strategy::ws_wgmma_tma ? (p.persistent ? "_wsp" : "_ws") : "") +
         "_b" + std::to_string(p.block_m) + "x" +
         std::to_string(p.block_n) + "_t" + std::to_string(p.block_threads) + "_s" + std::to_string(p.stages);
}

}  // namespace pk::attention
