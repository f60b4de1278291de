// Reductions: policies (tuning as data) and the candidate lists, shared by every target.
// Plain constexpr C++: used by the host planner at run time and by the kernels at compile time.
#pragma once
#include <pk/archdb/arch.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pk::reduction {

//! One compiled variant of the single-pass device reduction.
struct reduce_policy {
  int block_threads;     //!< threads per block (a multiple of every warp size: 64)
  int items_per_thread;  //!< 4-byte items each thread loads per tile (scaled by element size)
  int vector_width;      //!< 4-byte items per vector load (4 = 16-byte loads)
  friend constexpr bool operator==(const reduce_policy&, const reduce_policy&) = default;
};

//! "reduce_b256_i16_v4" — the instance name (in kernel names, plans and the tuning cache).
inline std::string name_of(const reduce_policy& p) {
  return "reduce_b" + std::to_string(p.block_threads) + "_i" + std::to_string(p.items_per_thread) + "_v" +
         std::to_string(p.vector_width);
}

//! Items per thread for elements of `bytes` bytes: the policy is written for 4-byte items and keeps
//! the bytes in flight per thread constant (CUB scale_mem_bound), at least 1.
constexpr int scaled_items(const reduce_policy& p, std::size_t bytes) {
  const int s = static_cast<int>(p.items_per_thread * 4 / static_cast<int>(bytes));
  return s < 1 ? 1 : s;
}
//! Elements per vector load for `bytes`-byte elements: 16 bytes when vector_width is 4.
constexpr int scaled_vector(const reduce_policy& p, std::size_t bytes) {
  const int v = static_cast<int>(p.vector_width * 4 / static_cast<int>(bytes));
  return v < 1 ? 1 : v;
}

// The compiled candidate list, shared by every target (default first). It is short on purpose: each
// entry is compiled for every target, op and dtype (7 kernels in each reduce_<type> TU). 16-byte vector
// loads (the widest global access on both vendors) and 64 bytes in flight per thread per tile; two block
// sizes so that the planner and `pk tune` have a real choice. A policy must be a whole number of warps on
// every arch (a multiple of 64 threads). Dropped, measured on the H200 with every candidate forced:
// 128-thread blocks ({128, 32, 4}), never more than 1% ahead of the best of the others at 2^10-2^20 and
// slower at 2^24-2^28 (bench/results/reduction-h200-2026-12-01.md); 1024-thread blocks ({1024, 4, 4}),
// which the model ranked first everywhere (its fewer blocks leave the smallest tail) and which ran 1-4%
// behind the best of these two at 2^24-2^28 and 9-10% behind for bf16 max at 2^28, in three runs
// (bench/results/reduction-h200-2026-12-02.md), while at 2^20-2^22 every candidate is within the
// host-bound noise of the others.
inline constexpr std::array<reduce_policy, 2> reduce_candidates{{
    {256, 16, 4},
    {512, 8, 4},
}};

//! One compiled variant of the per-segment kernels (segmented reduce, reduce along a unit-stride axis,
//! and the row operations of norm.hpp): blocks of `block_threads`, each segment (row) owned by a group
//! of `group_threads` threads (32: a logical warp, several rows per block; == block_threads: one row
//! per block), each thread keeping `unroll` 16-byte vectors in flight.
struct segment_policy {
  int block_threads;
  int group_threads;
  int unroll;
  friend constexpr bool operator==(const segment_policy&, const segment_policy&) = default;
};
inline std::string name_of(const segment_policy& p) {
  return "seg_b" + std::to_string(p.block_threads) + "_g" + std::to_string(p.group_threads) + "_u" +
         std::to_string(p.unroll);
}
// Short rows (up to a few hundred elements) want a warp each, long rows a block each; 1024-thread
// blocks keep 64 KB in flight per row for very wide rows (262k columns) with few rows. Initial values,
// not yet tuned on hardware (the bench/reduction sweep reports each).
inline constexpr std::array<segment_policy, 3> segment_candidates{{
    {256, 256, 4},
    {256, 32, 4},
    {1024, 1024, 4},
}};

//! One compiled variant of the segmented reduction by an even split of the elements over the grid
//! (detail/split_agent.hpp): blocks of `block_threads`, tiles of `unroll` 16-byte vectors a thread for 4- and
//! 8-byte elements (128 x 8 x 16 B = 16 KB a tile; split_unroll for narrower ones), each block a contiguous
//! chunk of tiles; the segments' lengths do not matter to its speed (the host does not see them).
struct split_policy {
  int block_threads;
  int unroll;
  //! Blocks per SM the kernel is compiled to fit (NVIDIA: the launch bounds' minimum, which caps the
  //! registers at the register file over blocks_per_sm x block_threads); the planner sizes the grid from the
  //! same number.
  int blocks_per_sm;
  friend constexpr bool operator==(const split_policy&, const split_policy&) = default;
};
inline std::string name_of(const split_policy& p) {
  return "split_b" + std::to_string(p.block_threads) + "_u" + std::to_string(p.unroll);
}
//! 16-byte vectors a thread holds per tile for elements of `bytes` bytes: `unroll` for 4- and 8-byte
//! elements, and as many elements a thread as 4-byte ones have for narrower ones (unroll / 2 for 16-bit,
//! unroll / 4 for 8-bit). The fold's registers grow with the elements a thread holds, not with its bytes: with
//! unroll vectors of 16- and 8-bit elements (64-128 a thread) the kernel took 150-242 registers on sm_80 and
//! spilled 48-216 B (CI compile matrix, 2026-12-02), 3 or 2 blocks per SM where 5 were planned, and the
//! H200 summed 2^26 bf16 at 1.0 TB/s where f32 streamed at 3.3 (reduction-h200-2026-12-02.md).
constexpr int split_unroll(const split_policy& p, std::size_t bytes) {
  const int u = bytes >= 4 ? p.unroll : p.unroll * static_cast<int>(bytes) / 4;
  return u < 1 ? 1 : u;
}
//! Elements of `bytes` bytes in one tile of the split kernel.
constexpr std::int64_t split_tile_elems(const split_policy& p, std::size_t bytes) {
  return std::int64_t{p.block_threads} * split_unroll(p, bytes) *
         (bytes >= 16 ? 1 : static_cast<std::int64_t>(16 / bytes));
}
// One candidate: 128-thread blocks (a block's barriers stall fewer warps) with 16 KB tiles (8 vectors a
// thread) of 4- and 8-byte elements, compiled to fit 5 blocks per SM (at most 96 registers on NVIDIA).
// H200 sweep of 2^26 f32 elements over 64 .. 2^20-element and power-law segments
// (bench/results/reduction-h200-2026-12-01-split.md): fastest of the tile shapes on 4 of 6 lengths; 8 KB
// tiles (4 vectors) were 4% ahead at 4096 and within 1% at 2^20, slower elsewhere, and are not compiled
// (each split candidate is 6 operations x 8 types per code target). 256-thread blocks with 4 vectors a
// thread were 4-30% slower at lengths up to 4096 and on power-law lengths, with 2 vectors 9-48% slower on
// every length; prefetching the next tile into a second set of registers was slower on every length.
// Blocks per SM, same sweep (bench/results/reduction-h200-2026-12-02.md): 4 (128 registers, no spills) was
// 3-4% ahead at 65536 and 2^20 and 12-16% behind at 64-4096 and on power-law lengths; 6 (80 registers, the
// sum spilling 12 B, argmax 180 B) 1-2% ahead at 64-4096 and 7-12% behind at 65536-2^20; 5 is within 3.2% of
// the better of the two on every length and operation. Left free, ptxas took 80 registers for the sum
// (spilling 20-32 B) and 124 for argmax, whose 4 resident blocks then ran a grid planned for 5.
// One contiguous chunk a block: cutting the input into 4 or 16 chunks a block, taken in turn (block b: chunks b,
// b + grid, ...), so that a block's loads spread over the input, ran 15-39% (4) and 25-130% (16) slower on an
// H100 at every length and operation (each chunk pays a search of the offsets and the publication of its pieces
// with no loads in flight; bench/results/reduction-h100-2026-12-06b.md).
inline constexpr std::array<split_policy, 1> split_candidates{{
    {128, 8, 5},
}};

//! One compiled variant of the row operations (norm.hpp: softmax, log_softmax, LayerNorm, RMSNorm, row
//! mean/variance). A group of `group_threads` threads owns a row (32: a logical warp, several rows per
//! block; == block_threads: one row per block).
//!  - on chip (items > 0): the whole row is held in the group's registers, `items` 4-byte accumulator
//!    words a thread (32 fp32 values: 32 elements of f32/f16/bf16, 16 of f64), loaded as 16-byte vectors
//!    (vector k of thread t holds elements (k * group_threads + t) * V ..), so the row is read from
//!    memory once and written once; rows of up to row_capacity() elements.
//!  - streaming (items == 0): rows of any width, 4 vectors in flight a thread; the statistics pass reads
//!    the row and the output pass reads it again.
//! An on-chip policy with `stages` >= 2 stages its rows through a ring of that many rows per group in shared
//! memory: a group handles one row after another (one wave of blocks) and copies the next stages - 1 rows
//! asynchronously while it computes this one. Staged instances exist for 16-bit elements on targets with
//! asynchronous copies only (row_compiled; archdb has_async_copy), and the planner rules the policy out
//! elsewhere. stages == 0: each row is loaded into the registers when its turn comes.
struct row_policy {
  int block_threads;
  int group_threads;
  int items;
  int stages = 0;
  friend constexpr bool operator==(const row_policy&, const row_policy&) = default;
};
constexpr bool on_chip(const row_policy& p) { return p.items > 0; }
constexpr bool staged(const row_policy& p) { return on_chip(p) && p.stages >= 2; }
//! Whether the policy's kernel is compiled for `elem_bytes`-byte elements on a target with (or without)
//! asynchronous copies: staged rows for 16-bit elements where the copies exist (see row_candidates).
constexpr bool row_compiled(const row_policy& p, int elem_bytes, bool has_async_copy) {
  return !staged(p) || (elem_bytes == 2 && has_async_copy);
}
inline std::string name_of(const row_policy& p) {
  return std::string(on_chip(p) ? "row_onchip" : "row_stream") + "_b" + std::to_string(p.block_threads) + "_g" +
         std::to_string(p.group_threads) + (on_chip(p) ? "_i" + std::to_string(p.items) : std::string()) +
         (staged(p) ? "_s" + std::to_string(p.stages) : std::string());
}
//! Elements of `elem_bytes` bytes a thread of an on-chip policy holds (accumulated in fp32, or fp64 for
//! 8-byte elements).
constexpr int held_elements(const row_policy& p, int elem_bytes) { return p.items * 4 / (elem_bytes == 8 ? 8 : 4); }
//! 16-byte vectors a thread holds (on chip) or keeps in flight (streaming).
constexpr int row_vectors(const row_policy& p, int elem_bytes) {
  return on_chip(p) ? held_elements(p, elem_bytes) * elem_bytes / 16 : 4;
}
//! Elements of a row an on-chip policy holds (0 for streaming: no limit).
constexpr std::int64_t row_capacity(const row_policy& p, int elem_bytes) {
  return on_chip(p) ? std::int64_t{p.group_threads} * held_elements(p, elem_bytes) : 0;
}
//! Threads per SM plan_rows counts for a streaming row kernel (its registers: the register file over these). ptxas,
//! sm_90a, CUDA 13.0: softmax, log_softmax and rms_norm of 16-bit and fp32 elements take 40-52 registers (most 48:
//! 1280 threads, 5 blocks of 256), the Welford rows (layer_norm, mean_var) and fp64 53-64 (1024 threads). The count
//! is not imposed: launch bounds of 1280 threads made ptxas schedule the 16-bit softmax of 8192 columns 27% slower
//! on an H100 (51.6 -> 65.6 us) at the same 48 registers. Counting 64 for all of them, the plan tied the streaming
//! 256-thread block with the on-chip blocks and took the latter, 1.1-1.2x slower for 16-bit softmax at 8192-16384
//! columns (bench/results/reduction-h100-2026-12-05.md). The instances that keep the row's head in shared memory
//! (`cached`, row_cacheable) of 16-bit elements take 57-63 (ptxas -v, sm_90a, CUDA 13.0, Release, 2026-12-05:
//! softmax and log_softmax 63, rms_norm 57): 1024 threads, 4 blocks of 256, among which the shared memory is
//! divided; their fp32 instances stay within 48.
constexpr int row_stream_threads_per_sm(int elem_bytes, bool welford, bool cached = false) {
  return welford || elem_bytes > 4 || (cached && elem_bytes == 2) ? 1024 : 1280;
}
//! Whether a policy has an instance that keeps each row's head in shared memory between the passes
//! (row_cache_vectors): a streaming block per row, for the operations without a Welford state (softmax,
//! log_softmax, rms_norm; layer_norm ran slower with it, mean_var makes one pass).
constexpr bool row_cacheable(const row_policy& p, bool welford) {
  return !on_chip(p) && p.group_threads == p.block_threads && !welford;
}
//! Dynamic shared memory of a staged policy's block: `stages` rows of its capacity for every group.
constexpr std::int64_t row_stage_bytes(const row_policy& p, int elem_bytes) {
  return staged(p) ? std::int64_t{p.stages} * p.block_threads * row_vectors(p, elem_bytes) * 16 : 0;
}
// On chip: a warp per row up to 1024 elements (512 f64), a 128-thread block per row up to 4096 (twice the
// rows in flight per SM of the 256-thread block at the same threads per SM: H200 ncu of the on-chip kernel,
// 16-bit softmax: L1TEX waits the top stall at 4 resident blocks), a 256-thread block per row up to 8192, a
// 512-thread block per row up to 16384. Streaming: a warp per row, a 256-thread block per row, and a
// 1024-thread block per row for the widest rows. A group handles one row after another, so the rows in
// flight per SM hide the latency: where an on-chip kernel needs many registers (layer_norm) the
// streaming warp holds more rows in flight and wins (H200: 16-bit layer_norm at 4096 columns, 71 us
// streaming a warp per row against 109 us on chip); plan_rows weighs both. The held values are 32
// registers and the passes keep about as many again live (ptxas keeps each exp(x - max) of the sum for
// the output): 60-125 registers a thread (sm_90a, CUDA 13.0), within the 128 a thread may have at 512
// threads (64K registers per SM / 512). At 1024 threads (64 registers) the fp32 and fp64 kernels spilled
// 24-690 bytes; holding 64 fp32 values a thread made ptxas use 230-254 registers at 256 threads. Rows
// between two capacities run on the larger one with idle slots; the planner weighs them (plan_rows).
// Staged (16-bit rows only, devices with asynchronous copies): a warp per row two rows deep and a 128-thread
// block per row three deep. H200, bf16, every candidate forced (bound calls, 2^25 elements): softmax 1024
// columns 45.6 -> 42.5 us, rms_norm 45.4 -> 39.8, layer_norm 61.1 -> 53.6; 4096 columns softmax 49.2 -> 41.9,
// rms_norm 48.3 -> 43.5. fp32 rows ran 2-20% slower staged (their 128 bytes a thread already keep the loads
// busy), so the 4- and 8-byte instances are not compiled. Three stages for the warp measured within 3% of two.
inline constexpr std::array<row_policy, 9> row_candidates{{
    {256, 32, 32},
    {128, 128, 32},
    {256, 256, 32},
    {512, 512, 32},
    {256, 32, 0},
    {256, 256, 0},
    {1024, 1024, 0},
    {256, 32, 32, 2},
    {128, 128, 32, 3},
}};

//! The reproducible fp32/fp64 sum. The ORDER of the summation is fixed by these constants alone and is
//! the same for every candidate (candidates only change how many chunks a block handles at once):
//!  - a chunk is 32 leaves of `leaf_vectors` 16-byte vectors; leaf j of a chunk holds vectors
//!    (k * 32 + j), k = 0..leaf_vectors-1, summed left to right from -0 (elements past n are -0);
//!  - a chunk sum is the binary tree over its 32 leaves (adjacent pairs first);
//!  - a group sum is the binary tree over 256 consecutive chunk sums (missing chunks are -0);
//!  - the result is the binary tree over 256 level-1 values, each the binary tree over 256
//!    consecutive group sums (so n <= 2^16 groups: 2^35 fp32 elements).
//! -0 is the exact identity of IEEE addition, so padding never changes a bit; only additions occur,
//! so FMA contraction cannot either (the TU is still compiled with contraction off).
struct reproducible_layout {
  static constexpr int leaf_vectors = 16;
  static constexpr int chunk_leaves = 32;
  static constexpr int group_chunks = 256;
  static constexpr int top_fanout = 256;
  static constexpr std::int64_t max_groups = std::int64_t{top_fanout} * top_fanout;
  //! Elements per chunk for `bytes`-byte elements (fp32: 2048, fp64: 1024).
  static constexpr std::int64_t chunk_elems(int bytes) { return std::int64_t{chunk_leaves} * leaf_vectors * (16 / bytes); }
};
//! Candidates: block size only (32-thread teams per block).
inline constexpr std::array<int, 3> reproducible_candidates{{256, 512, 128}};
inline std::string reproducible_name(int block_threads) { return "repro_sum_b" + std::to_string(block_threads); }

}  // namespace pk::reduction

namespace pk::reduction {
//! A kernel that spills, declared: a fragment of its mangled name (the resource check matches it against
//! the compiler's reports) and the archs (archdb names, space-separated) whose reports showed the spill, or
//! "*" for a declaration that predates per-arch declarations and holds on every arch.
struct spill_declaration {
  const char* kernel;
  const char* archs;
};
//! Whether declaration d covers arch `arch_name` (archdb::name_of).
constexpr bool declares_on(const spill_declaration& d, std::string_view arch_name) {
  const std::string_view a = d.archs;
  if (a == "*") return true;
  for (std::size_t i = 0; i < a.size();) {
    const std::size_t j = a.find(' ', i);
    if (a.substr(i, j == std::string_view::npos ? a.size() - i : j - i) == arch_name) return true;
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return false;
}
//! Reduction kernels that spill registers on some NVIDIA arch (ptxas -v, CUDA 13.0, the CI compile
//! matrix, 2026-11-30): 8-300 bytes per thread, worst in the f64 row kernels of 1024 threads (188-300 B)
//! and the per-segment kernels (12-48 B); on gfx90a/gfx942 the f16 row kernels spill SGPRs only. They are
//! declared so that the CI resource check accepts them and keeps rejecting any other spill; each is a
//! performance defect to remove (less per-thread state), not a tuning choice. Fragments of the mangled
//! kernel names (the resource check matches them against the compiler's reports).
inline constexpr std::array<spill_declaration, 14> declared_spilling_kernels{{
    {"rows_stream_kernel", "*"},
    // The on-chip row kernels (the CI compile matrix's reports, 2026-12-01): every instance spills SGPRs on
    // gfx90a/gfx942 (4-64 per wave); layer_norm also spills to scratch: 16-bit 304 B (gfx942 f16), fp32
    // 44-172 B (gfx90a/gfx942/gfx1100) and 8-12 B on sm_80. None spill on sm_90a. The layer_norm
    // instances keep weight, bias and x - K live for the output pass (111-148 registers on sm_90a).
    {"rows_onchip_kernel", "*"},
    {"segment_reduce_kernel", "*"},
    // The even split (split_agent.hpp), compiled for 5 blocks of 128 per SM (96 registers on NVIDIA). On
    // sm_90a (ptxas -v, CUDA 13.0, 2026-12-02): f32 argmin/argmax 88 B and f64 argmin/argmax 24 B, the
    // others (bf16 and u8 included, with split_unroll's vectors) none; unbounded, the f32 sum and prod had
    // spilled 20-32 B at 80 registers on sm_80 and sm_90a; on gfx942 (clang-19 remarks, 2026-12-01; HIP does
    // not apply the bound) 109-129 SGPRs spilled in argmin/argmax (2026-12-03; the 32 B of scratch a lane they
    // also had was arg_op's select between its operands' addresses, gone since it selects scalars), and on
    // gfx1201 28-44 B of scratch in the i32 instances.
    {"segment_split_kernel", "*"},
    {"repro_sum_kernel", "*"},
    {"strided_reduce_kernel", "*"},
    {"reduce_single_pass_kernelILi512ELi4", "*"},  // the f64 instance of {512, 8, 4}: 32-40 B on sm_80/86
    // The f64 instance of {256, 16, 4}: its Welford (mean/variance on x - K) kernel spills 24-40 B on
    // sm_80/86/89/90a since the shifted formulation (CI compile matrix, 2026-11-30).
    {"reduce_single_pass_kernelILi256ELi8ELi2Ed", "*"},
    // The mean/variance (Welford) instances of the f32, f16 and bf16 device-wide reduce on sm_100a and sm_120
    // (ptxas -v, CUDA 13.0, 2026-12-02): 20-68 B at 40 registers, the same with -maxrregcount=64, 8 B left
    // with the merge's division replaced by div.approx: the stack traffic of IEEE division's slow-path
    // subroutine calls, not register pressure. None on sm_80/86/89/90a. The fp16 instances after fp16 took
    // cvt (numeric.hpp; CI compile matrix of 2026-12-04 against 2026-12-03's): {512, 16, 8} 0 -> 44 B on
    // sm_100a and 0 -> 76 B on sm_120, {256, 32, 8} 0 -> 32 B on sm_120 and none on sm_100a. Since the loads widen
    // fp16 without selecting a NaN's bits (pk::widen; CUDA 13.0, 2026-12-04): {512, 16, 8} 28 B on sm_100a and
    // 68 B on sm_120, {256, 32, 8} 36 B on sm_100a and none on sm_120.
    {"reduce_single_pass_kernelILi512ELi8ELi4Ef", "sm_100 sm_120"},
    {"reduce_single_pass_kernelILi512ELi16ELi8ENS_4fp16E", "sm_100 sm_120"},
    {"reduce_single_pass_kernelILi512ELi16ELi8ENS_4bf16E", "sm_100 sm_120"},
    {"reduce_single_pass_kernelILi256ELi16ELi4Ef", "sm_100"},
    {"reduce_single_pass_kernelILi256ELi32ELi8ENS_4fp16E", "sm_100"},
    {"reduce_single_pass_kernelILi256ELi32ELi8ENS_4bf16E", "sm_100"},
}};
}  // namespace pk::reduction
