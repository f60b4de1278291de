// Attention over a KV cache: the decode kernel's policies and candidate lists (tuning as data), read by the
// planner at run time and by the kernels at compile time.
#pragma once
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/attn_decode_keys.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace pk::attention {

//! One compiled variant of the decode kernel. A block owns block_m packed query rows (the seqlen_q x
//! heads_q / heads_kv queries that share one KV head: GQA packing) of one sequence and KV head, and one
//! split of its keys; its warps split each key tile of block_n keys between them (block_n / warps keys
//! each, every warp all block_m rows), keep their own online softmax and merge at the end. K/V tiles are
//! in a ring of `stages` (16-byte asynchronous copies of rows gathered through the block table).
struct decode_policy {
  int block_m;        //!< packed query rows per block (whole MMA atoms in M)
  int block_n;        //!< keys per block tile
  int block_threads;  //!< threads per block
  int stages;         //!< K/V tiles in the shared-memory ring (stages - 1 in flight while one is computed)
  friend constexpr bool operator==(const decode_policy&, const decode_policy&) = default;
};

//! The head dims with compiled decode instances: the instance table (kernels/attention/CMakeLists.txt).
inline constexpr auto& decode_head_dims = instances::attn_decode::head_dim_values;

constexpr bool supported_decode_head_dim(int d) {
  for (int h : decode_head_dims)
    if (h == d) return true;
  return false;
}

// Candidate lists, default first. Short on purpose: each entry is compiled per dtype and head dim.
// NVIDIA (mma.sync m16n8k16, 4 warps): 16 rows cover the decode shapes of GQA ratios up to 16 at seqlen_q 1
// with one atom in M (FlashAttention's decode packs the group the same way); more packed rows (speculative
// decoding) take more blocks, which read the same K/V through L2. Every warp holds all rows' outputs, so
// more rows per block cost registers: 64 rows spilled 360 bytes at head_dim 128 and 4.3 KB at 256 (ptxas,
// sm_90a, 2026-11-30). 16 keys per warp and tile: with 32, ncu showed 1200 instructions per warp and tile
// issued every 4.4 cycles by one warp per scheduler (H200, 2026-11-30), so the issue rate, not memory, bound
// the tile. 64 keys with 4 warps keep two stages of K/V at head_dim 256 within 140 KB and fit three blocks per
// SM at head_dim 128; 128 keys with 8 warps (one block per SM) measured 0-8% slower on every row of the H200's
// split sweep (bench/results/decode-h200-2026-11-30.md), so it is not compiled. Three stages keep two tiles in
// flight per block (two blocks per SM at head_dim 128): 0-7% faster than two stages on the H200 where few blocks
// stream, within 2% elsewhere. 32 keys with 2 warps and two stages is the candidate for devices with less
// shared memory (head_dim 256: 76 KB, where the first takes 211 KB; the RTX 3090 has 99 KB). AMD: 32
// rows (MFMA 32x32 is one atom, WMMA 16x16 two) and one wave64 (two wave32) of 32 keys, so that head_dim 256
// fits 64 KB of LDS (84 KB with 64 keys and two stages); loads there are not asynchronous (archdb
// has_async_copy), so one stage loses no overlap.
inline constexpr std::array<decode_policy, 1> decode_nvidia{{{16, 64, 128, 3}}};
inline constexpr std::array<decode_policy, 2> decode_nvidia_256{{{16, 64, 128, 3}, {16, 32, 64, 2}}};
inline constexpr std::array<decode_policy, 1> decode_amd{{{32, 32, 64, 1}}};

//! The decode candidates of a vendor's code targets at `head_dim`, default first (the smaller tile only where
//! the default may not fit: head_dim 256).
constexpr std::span<const decode_policy> decode_candidates(family f, int head_dim) {
  if (f == family::amd) return decode_amd;
  return head_dim >= 256 ? std::span<const decode_policy>(decode_nvidia_256) : std::span<const decode_policy>(decode_nvidia);
}
constexpr std::size_t decode_candidate_count(family f, int head_dim) { return decode_candidates(f, head_dim).size(); }

//! Candidates that spill and are kept on purpose (the planner and the CI resource check accept them). Every
//! warp holds all block_m rows of the output, so wave32 targets hold twice the wave64 share. clang-19's remarks
//! (CI compile matrix, 2026-12-03), scratch bytes per lane of the 16-bit / FP8 instances of the policy: gfx1100
//! (RDNA3 WMMA) head_dim 64 0 / 236 (the FP8 ones: the codes' byte loads and conversions on top of a kernel
//! already at 256 VGPRs), 128 328 / 1076, 256 848 / 2728; gfx1201 (RDNA4 WMMA, whose operands take half the
//! registers) 0 / 84, 128-144 / 716, 780-792 / 1884; gfx90a/gfx942 (256 VGPRs + 256 AGPRs) at head_dim 256
//! only, 0 / 392; gfx950 (clang-22) and NVIDIA (ptxas, sm_80-120) none. One instance reads every cache format,
//! so the declaration covers the instance. The fix is 16 rows per block on wave32 targets and at head_dim 256.
constexpr bool decode_declares_spills(archdb::arch a, const decode_policy&, int head_dim) {
  if (a == archdb::arch::gfx90a || a == archdb::arch::gfx942) return head_dim >= 256;
  return a == archdb::arch::gfx1100 || a == archdb::arch::gfx1201;
}

//! The cache's storage formats the kernel reads (runtime parameter: one instance reads all three).
enum class kv_format : std::uint8_t { same, e4m3fn, e4m3fnuz };

//! The split combine (attn_decode_combine_kernel): a row's head_dim / 4 threads walk its splits. With one group
//! of them per row, batch 1 with 8 query heads and 128 splits ran the combine as 2 blocks whose threads walked all
//! 128 splits (H200, 2026-12-04; bench/results/decode-h200-2026-12-04.md), so from decode_combine_group_splits
//! splits on a row has up to 4 groups in a 128-thread block, and from decode_combine_many_splits on up to 16 in
//! a 512-thread block, each group walking a share of the splits.
inline constexpr int decode_combine_group_splits = 16;
inline constexpr int decode_combine_many_splits = 64;
constexpr int decode_combine_threads(int splits) { return splits >= decode_combine_many_splits ? 512 : 128; }
constexpr int decode_combine_groups(int splits, int head_dim) {
  const int want = splits >= decode_combine_many_splits ? 16 : (splits >= decode_combine_group_splits ? 4 : 1);
  const int fit = decode_combine_threads(splits) / (head_dim / 4);
  return want < fit ? want : fit;
}

//! The end-of-block merge of a block's warps: the upper half of the warps store their weighted outputs into
//! one fp32 slice each, the lower half add theirs into those slices, and the stores read the sum of the slices
//! (two barriers: the warps do not take turns). One warp: one slice.
constexpr int decode_merge_slices(int warps) { return warps > 1 ? warps / 2 : 1; }
//! Floats of padding per merge row: a row pitch of 8 banks modulo 32 spreads the 8 rows of an mma.sync
//! C fragment's lanes over 4 bank octets.
inline constexpr int decode_merge_pad = 8;

//! Shared memory of a decode policy: the Q tile, `stages` K and V tiles (padded rows; FP8 caches: swizzled rows
//! of codes, turned into fp16 in the operand loads); P staged per warp (MFMA/WMMA); the K and V row offsets of each stage;
//! FP8: the queries' largest magnitude per 16 columns and each row's factor; at least the end-of-block merge (the
//! rows' fp32 output, per-row LSEs, per-warp flags). Warps are counted at 32 lanes, an upper bound for wave64
//! targets.
constexpr std::int64_t decode_smem_bytes(const decode_policy& p, int head_dim, int elem_bytes, bool fp8, bool staged_p) {
  constexpr int min_warp = 32;
  const std::int64_t warps = p.block_threads / min_warp;
  const std::int64_t pad = smem_pad_bytes / elem_bytes;
  const std::int64_t row = (head_dim + pad) * elem_bytes;
  const std::int64_t q = std::int64_t{p.block_m} * row;
  const std::int64_t kv_row = fp8 ? head_dim : row;  // FP8: swizzled, unpadded rows
  const std::int64_t kv = 2 * std::int64_t{p.stages} * p.block_n * kv_row;
  const std::int64_t q_stats = fp8 ? std::int64_t{p.block_m} * (head_dim / 16 + 1) * 4 : 0;
  // [warps][block_m][block_n / warps + pad]
  const std::int64_t pt = staged_p ? (std::int64_t{p.block_m} * (p.block_n + warps * pad) * elem_bytes + 15) / 16 * 16 : 0;
  // The merge: half the warps' weighted fp32 outputs (decode_merge_slices, rows of head_dim + decode_merge_pad
  // floats), each warp's LSE per row, the merged LSE per row, a flag per warp.
  const std::int64_t merge =
      (decode_merge_slices(static_cast<int>(warps)) * std::int64_t{p.block_m} * (head_dim + decode_merge_pad) + warps * p.block_m +
       p.block_m + warps) *
      4;
  const std::int64_t rows = std::int64_t{p.stages} * 2 * p.block_n * 8;  // the K and V row offsets of each stage, int64
  const std::int64_t main = q + kv + pt + rows + q_stats;
  return main > q + merge ? main : q + merge;
}

//! "attn_decode_bf16_d128_b16x64_t128_s3".
inline std::string decode_name_of(const decode_policy& p, const char* type, int head_dim) {
  return std::string("attn_decode_") + type + "_d" + std::to_string(head_dim) + "_b" + std::to_string(p.block_m) + "x" +
         std::to_string(p.block_n) + "_t" + std::to_string(p.block_threads) + "_s" + std::to_string(p.stages);
}

}  // namespace pk::attention
