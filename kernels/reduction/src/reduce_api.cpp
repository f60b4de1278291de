// Reductions: validation, planning and dispatch to the per-target instances. Compiled once.
#include "alignment.hpp"

#include <pk/archdb/family_plan.hpp>
#include <pk/config.hpp>
#include <pk/portable/lane.hpp>
#include <pk/reduction/detail/reduce_call.hpp>
#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/reduction/reduce_instances.hpp>
#include <pk/reduction/reduce_policy.hpp>
#include <pk/reduction/repro_instances.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>

namespace pk {
namespace reduction {

namespace {

// Registers per thread assumed when the compiler's report is not at hand (the host plans for any
// device): the reductions keep a few accumulators and U 16-byte vectors live, far from every register
// limit; the CI resource check verifies the real counts fit.
constexpr int assumed_regs_per_thread = 32;
constexpr int assumed_rows_regs_per_thread = 64;
// Bytes of one accumulator at most (welford<double>: 24 bytes, rounded up): sizes the partials.
constexpr std::size_t max_accum_bytes = 32;
// Memory latency under load assumed by the cost models (HBM round trip: ~0.6-0.8 us on A100/H100/MI300
// class devices); it bounds a group's serial chain of dependent load rounds.
constexpr double load_round_us = 0.8;
// Fixed cost of one wave of row-operation blocks and pass (block start, the group reduction's barriers,
// the tail of the slowest block): an initial estimate for plan_rows; the segment kernels' is calibrated per
// device (segment_wave_us).
constexpr double wave_overhead_us = 1.0;
// Thread instructions a row operation issues per element and pass set (H200 ncu source counters, softmax bf16
// 32768 x 1024 on the on-chip warp: 14.8, bench/results/reduction-h200-2026-12-03-rows.md); plan_rows takes it
// for every operation and type to size the compute that follows each load round.
constexpr double row_instructions_per_element = 15.0;

archdb::candidate candidate_of(const reduce_policy& p, int elem_bytes) {
  archdb::candidate c;
  c.name = name_of(p);
  c.res.threads_per_block = p.block_threads;
  c.res.regs_per_thread = assumed_regs_per_thread;
  // block_reduce temp storage: one partial per warp of the smallest warp size, the result, the flag.
  c.res.static_smem = static_cast<std::int64_t>(p.block_threads / min_warp_size + 2) * std::max(elem_bytes, 16);
  return c;
}

// Fraction of the device's thread slots that have work (a device at occupancy >= 50% is treated as
// saturating bandwidth).
double busy_fraction(const archdb::device_desc& d, std::int64_t threads) {
  return std::min(1.0, static_cast<double>(threads) / std::max(1.0, 0.5 * d.max_threads_per_sm * d.sm_count));
}

// What the per-group kernels (rows, segments) keep in flight: `items` groups of work over `resident_groups`
// group slots, each with `group_bytes` of loads outstanding, against the bytes an SM needs in flight to
// stream at the device's bandwidth (Little's law over the loaded memory latency).
struct flight_estimate {
  double groups_per_sm;  //!< groups active on an SM at once
  double per_sm;         //!< bytes in flight per SM (at least 1)
  double needed;         //!< bytes in flight per SM that stream at full bandwidth
  double factor;         //!< the share of the bandwidth reached: min(1, per_sm / needed)
};
flight_estimate in_flight(const archdb::device_desc& d, std::int64_t items, std::int64_t resident_groups,
                          double group_bytes) {
  flight_estimate f;
  const int sms = std::max(1, d.sm_count);
  f.groups_per_sm = std::min<double>(static_cast<double>(items), static_cast<double>(resident_groups)) / sms;
  f.per_sm = std::max(1.0, f.groups_per_sm * group_bytes);
  f.needed = d.mem_bw_gbps * 1e3 / sms * load_round_us;
  f.factor = std::min(1.0, f.per_sm / f.needed);
  return f;
}

}  // namespace

archdb::plan plan_reduce(const archdb::device_desc& device, std::int64_t n, int elem_bytes) {
  std::vector<archdb::candidate> cands;
  for (const reduce_policy& p : reduce_candidates) cands.push_back(candidate_of(p, elem_bytes));
  const double bytes = static_cast<double>(n) * elem_bytes;
  archdb::plan plan = archdb::choose(device, cands, [&](const archdb::candidate& c, const archdb::occupancy_result& occ) {
    const reduce_policy& p = reduce_candidates[static_cast<std::size_t>(&c - cands.data())];
    const std::int64_t tile = std::int64_t{p.block_threads} * scaled_items(p, static_cast<std::size_t>(elem_bytes));
    const std::int64_t tiles = std::max<std::int64_t>(1, (n + tile - 1) / tile);
    const std::int64_t resident = std::int64_t{occ.blocks_per_sm} * device.sm_count;
    const std::int64_t grid = std::min(tiles, std::max<std::int64_t>(1, resident));
    const double busy = busy_fraction(device, grid * p.block_threads);
    const double stream_us = archdb::roofline_us(device, bytes, 0, 0) / std::max(busy, 1e-3);
    // The last block reduces `grid` partials: a second, serial step proportional to the grid.
    const double tail_us = static_cast<double>(grid) / p.block_threads * 0.05;
    std::ostringstream why;
    why << "grid " << grid << " (" << tiles << " tiles, " << resident << " resident), " << static_cast<int>(busy * 100)
        << "% of thread slots busy, stream " << stream_us << " us + tail " << tail_us << " us";
    return archdb::cost_estimate{stream_us + tail_us, why.str()};
  });
  // A winner measured by `pk tune reduce` replaces the model's choice (archdb tuning cache; never times).
  archdb::apply_tuning_cache(device, "reduce", archdb::size_bucket(n, elem_bytes), plan);
  return plan;
}

unsigned reduce_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t n, int elem_bytes) {
  const reduce_policy& pol = reduce_candidates[static_cast<std::size_t>(p.index)];
  const std::int64_t tile = std::int64_t{pol.block_threads} * scaled_items(pol, static_cast<std::size_t>(elem_bytes));
  const std::int64_t tiles = std::max<std::int64_t>(1, (n + tile - 1) / tile);
  const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{p.occ.blocks_per_sm} * device.sm_count);
  return static_cast<unsigned>(std::min(tiles, resident));
}

archdb::plan plan_reduce_reproducible(const archdb::device_desc& device, std::int64_t n, int elem_bytes) {
  std::vector<archdb::candidate> cands;
  for (int b : reproducible_candidates) {
    archdb::candidate c;
    c.name = reproducible_name(b);
    c.res.threads_per_block = b;
    c.res.regs_per_thread = 2 * assumed_regs_per_thread;  // 16 vectors of 16 bytes in flight per thread
    c.res.static_smem = static_cast<std::int64_t>(b / 32) * 8 + 16 + reproducible_layout::top_fanout * 8;
    cands.push_back(c);
  }
  const std::int64_t chunk = reproducible_layout::chunk_elems(elem_bytes);
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  const double bytes = static_cast<double>(n) * elem_bytes;
  archdb::plan p = archdb::choose(device, cands, [&](const archdb::candidate& c, const archdb::occupancy_result& occ) {
    const int teams = c.res.threads_per_block / 32;
    const std::int64_t needed = std::max<std::int64_t>(1, (chunks + teams - 1) / teams);
    const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{occ.blocks_per_sm} * device.sm_count);
    const std::int64_t grid = std::min(needed, resident);
    const double busy = busy_fraction(device, grid * c.res.threads_per_block);
    const double stream_us = archdb::roofline_us(device, bytes, 0, 0) / std::max(busy, 1e-3);
    // Each round ends with a block barrier; the group and top trees are a few dependent rounds.
    const double rounds = static_cast<double>((needed + grid - 1) / grid);
    const double tail_us = 3 * load_round_us;
    std::ostringstream why;
    why << "grid " << grid << " (" << chunks << " chunks of " << chunk << ", " << rounds << " rounds), "
        << static_cast<int>(busy * 100) << "% of thread slots busy, stream " << stream_us << " us + trees "
        << tail_us << " us; the summation order is fixed by the layout: the plan changes speed, never bits";
    return archdb::cost_estimate{stream_us + tail_us, why.str()};
  });
  return p;
}

namespace {
// The per-segment kernels' registers: ptxas reports 40-61 per thread for seg_* on sm_80 and sm_90a (the CI
// compile matrix, reduce_<dtype>.sm_*.ptxas.log), allocated in units of 8: 64 (4 blocks of 256 threads per
// SM where 32 assumed 8).
constexpr int segment_regs_per_thread = 64;
// Fixed cost of one wave of per-segment blocks (launch, the group reduction, the store, retirement): the
// calibration "reduction.segment_wave_us" of archdb (the H200's: archdb/devices/h200-sxm.json), a priori the
// row operations' wave_overhead_us.
archdb::calibrated_value segment_wave_us(const archdb::device_desc& device) {
  return archdb::calibrated(device, "reduction.segment_wave_us", wave_overhead_us);
}

// Registers a thread has on NVIDIA when `threads` threads fit an SM: registers are allocated per warp in units of
// reg_alloc_unit, and the largest whole number of units per warp that lets them fit is what ptxas caps a kernel
// compiled to fit them at (launch bounds' minimum blocks: the split kernel) and what a kernel that fits them
// unbounded uses at most (the streaming row kernels). Elsewhere (HIP's bounds do not cap registers per block
// count) `otherwise`.
int bounded_regs(const archdb::device_desc& device, int threads, int otherwise) {
  if (device.vendor_id == archdb::vendor::nvidia && device.regs_per_sm > 0 && device.warp_size > 0 && threads > 0) {
    const int warps = std::max(1, threads / device.warp_size);
    const int unit = std::max(1, device.reg_alloc_unit);
    const int per_warp = device.regs_per_sm / warps / unit * unit;
    return std::min(device.max_regs_per_thread > 0 ? device.max_regs_per_thread : 255, per_warp / device.warp_size);
  }
  return otherwise;
}

// The split kernel's registers: it is compiled to fit split_policy::blocks_per_sm blocks per SM (launch
// bounds), so on NVIDIA its registers are at most the register file over that many blocks, and the plan
// assumes exactly that: the grid it sizes is one wave of the blocks that are resident. On AMD (HIP's bounds
// do not cap registers per block count) an estimate: 64 + 4 per vector a thread (89-115 at 8 vectors, argmax
// the most).
int split_regs(const archdb::device_desc& device, const split_policy& p, int elem_bytes) {
  return bounded_regs(device, p.blocks_per_sm * p.block_threads, 64 + 4 * split_unroll(p, static_cast<std::size_t>(elem_bytes)));
}

//! The even split's candidates in plan_segmented_reduce: bytes streamed at the bandwidth the resident
//! tiles in flight reach, after the prologue (the offsets' ends, then the B-ary search for the chunk's
//! first segment: ceil(log_B(segments + 1)) rounds of one dependent load).
void add_split_candidates(const archdb::device_desc& device, std::vector<archdb::candidate>& cands, int elem_bytes) {
  for (const split_policy& p : split_candidates) {
    archdb::candidate c;
    c.name = name_of(p);
    c.res.threads_per_block = p.block_threads;
    c.res.regs_per_thread = split_regs(device, p, elem_bytes);
    // The tile, the window of B + 1 offsets, two block reductions' storage (accumulator and count).
    c.res.static_smem = split_tile_elems(p, static_cast<std::size_t>(elem_bytes)) * elem_bytes +
                        static_cast<std::int64_t>(p.block_threads + 1) * 8 +
                        static_cast<std::int64_t>(p.block_threads / min_warp_size + 1) * (max_accum_bytes + 8) + 16;
    cands.push_back(c);
  }
}
archdb::cost_estimate split_cost(const archdb::device_desc& device, const split_policy& p, const archdb::occupancy_result& occ,
                                 std::int64_t segments, std::int64_t total, int elem_bytes) {
  const std::int64_t tile = split_tile_elems(p, static_cast<std::size_t>(elem_bytes));
  const std::int64_t tiles = std::max<std::int64_t>(1, (total + tile - 1) / tile);
  const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{occ.blocks_per_sm} * device.sm_count);
  const flight_estimate f = in_flight(device, tiles, resident, static_cast<double>(tile) * elem_bytes);
  const double bytes = static_cast<double>(total) * elem_bytes + static_cast<double>(segments + 1) * 8 +
                       static_cast<double>(segments) * elem_bytes;
  const double stream_us = archdb::roofline_us(device, bytes, 0, 0) / f.factor;
  const double rounds = 1 + std::ceil(std::log(static_cast<double>(segments) + 1) / std::log(static_cast<double>(p.block_threads)));
  const double prologue_us = rounds * load_round_us;
  std::ostringstream why;
  why << std::min(tiles, resident) << " blocks, " << (tiles + resident - 1) / resident << " tile(s) of " << tile
      << " elements each, " << static_cast<int>(f.per_sm / 1024) << " KB in flight per SM of "
      << static_cast<int>(f.needed / 1024) << " KB to stream; independent of the segment lengths: stream "
      << stream_us << " us + search " << prologue_us << " us";
  return archdb::cost_estimate{stream_us + prologue_us, why.str()};
}

archdb::plan plan_groups(const archdb::device_desc& device, std::int64_t segments, double avg_len, int elem_bytes,
                         double bytes, bool split = false) {
  std::vector<archdb::candidate> cands;
  if (split) add_split_candidates(device, cands, elem_bytes);
  const std::size_t first = cands.size();  // the per-segment candidates follow the split ones
  for (const segment_policy& p : segment_candidates) {
    archdb::candidate c;
    c.name = name_of(p);
    c.res.threads_per_block = p.block_threads;
    c.res.regs_per_thread = segment_regs_per_thread;
    c.res.static_smem = static_cast<std::int64_t>(p.block_threads / min_warp_size + 2) * 24;
    cands.push_back(c);
  }
  const int vec = std::max(1, 16 / elem_bytes);
  const double seg_bytes = avg_len * elem_bytes;
  const archdb::calibrated_value wave = segment_wave_us(device);
  const double wave_us = wave.value;
  return archdb::choose(device, cands, [&](const archdb::candidate& c, const archdb::occupancy_result& occ) {
    const std::size_t i = static_cast<std::size_t>(&c - cands.data());
    if (i < first)
      return split_cost(device, split_candidates[i], occ, segments,
                        static_cast<std::int64_t>(std::min(bytes / elem_bytes, 0x1p62)), elem_bytes);
    const segment_policy& p = segment_candidates[i - first];
    const std::int64_t per_block = p.block_threads / p.group_threads;
    const std::int64_t blocks = std::max<std::int64_t>(1, (segments + per_block - 1) / per_block);
    const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{occ.blocks_per_sm} * device.sm_count);
    const std::int64_t waves = (blocks + resident - 1) / resident;
    // Each resident group has one round of U vectors per thread in flight, or its whole (shorter) segment.
    const double round_bytes = static_cast<double>(p.group_threads) * p.unroll * 16;
    const flight_estimate f = in_flight(device, segments, resident * per_block, std::min(std::max(seg_bytes, 1.0), round_bytes));
    const double stream_us = archdb::roofline_us(device, bytes, 0, 0) / f.factor;
    // A group's chain of dependent load rounds (U vectors in flight each) and the fixed cost, per wave.
    const double rounds = std::ceil(avg_len / (static_cast<double>(p.group_threads) * vec));
    double chain_us = static_cast<double>(waves) * (std::ceil(rounds / p.unroll) * load_round_us + wave_us);
    // Lengths the host does not see (segmented_reduce): ranked on the worst distribution of the elements,
    // one segment holding them all, which one group reads alone (H200, power-law lengths: the warp per
    // segment ran 3x the even split, bench/results/reduction-h200-2026-12-01-split.md).
    const double worst_rounds = std::ceil(bytes / elem_bytes / (static_cast<double>(p.group_threads) * vec));
    if (split) chain_us = std::max(chain_us, std::ceil(worst_rounds / p.unroll) * load_round_us + wave_us);
    std::ostringstream why;
    why << blocks << " blocks of " << per_block << " segment(s) (" << waves << " wave(s)), "
        << static_cast<int>(f.per_sm / 1024) << " KB in flight per SM of " << static_cast<int>(f.needed / 1024)
        << " KB to stream, stream " << stream_us << " us, load chain " << chain_us << " us (" << wave_us
        << " us a wave, " << wave.origin() << ")"
        << (split ? " (lengths unknown: one segment of every element)" : "");
    return archdb::cost_estimate{std::max(stream_us, chain_us), why.str()};
  });
}
}  // namespace

archdb::plan plan_segmented(const archdb::device_desc& device, std::int64_t segments, std::int64_t total,
                            int elem_bytes) {
  const double avg = segments > 0 ? static_cast<double>(total) / static_cast<double>(segments) : 0.0;
  return plan_groups(device, segments, avg, elem_bytes, static_cast<double>(total) * elem_bytes);
}

archdb::plan plan_segmented_reduce(const archdb::device_desc& device, std::int64_t segments, std::int64_t assumed_len,
                                   int elem_bytes) {
  // At most 2^62 elements in the model (validation admits up to ~2^60 segments of any assumed length).
  const double total = std::min(static_cast<double>(segments) * static_cast<double>(assumed_len), 0x1p62);
  return plan_groups(device, segments, static_cast<double>(assumed_len), elem_bytes, total * elem_bytes, true);
}

namespace {
//! The resources plan_rows assumes for a row policy's kernel (without a streaming group's shared cache;
//! `cached`: the registers of the instance that keeps one).
archdb::kernel_resources row_resources(const archdb::device_desc& device, const row_policy& p, row_op op, int elem_bytes,
                                       bool cached = false) {
  archdb::kernel_resources r;
  r.threads_per_block = p.block_threads;
  // On chip: the held values, what the passes keep live and the loop's state (ptxas, sm_90a: 16-bit
  // rows 54-64 registers, 16-bit layer_norm 111-115 (weight, bias and x - K live for the output), fp32
  // and fp64 rows 64-148). Streaming: the registers ptxas gives it (row_stream_threads_per_sm).
  const int live = op == row_op::layer_norm || elem_bytes > 2 ? 3 : 1;
  const bool welford = welford_state(op);
  const int stream_threads =
      std::max(p.block_threads, row_stream_threads_per_sm(elem_bytes, welford, cached) / p.block_threads * p.block_threads);
  r.regs_per_thread = on_chip(p) ? assumed_regs_per_thread + live * p.items
                                 : bounded_regs(device, stream_threads, assumed_rows_regs_per_thread);
  r.static_smem = static_cast<std::int64_t>(p.block_threads / min_warp_size + 2) * 24;
  r.dynamic_smem = row_stage_bytes(p, elem_bytes);
  return r;
}

//! 16-byte vectors of each row's head a streaming block keeps in shared memory between its two passes, so
//! that the second pass reads only the rest from L2 or DRAM. Where the rows in flight at once exceed the half
//! of L2 the model gives the re-read (plan_rows): as many as the shared memory left by the blocks the
//! registers allow per SM holds, without lowering them, and at most the row. H100, one call against the
//! kernel without it: softmax f32 512 x 65536 133 -> 107 us, bf16 1024 x 131072 265 -> 224, rms_norm 287 -> 249,
//! f32 1024 x 131072 softmax 550 -> 494, bf16 128 x 262144 76.5 -> 71.5 (reduction-h100-2026-12-05.md).
//! 0 otherwise (row_cacheable): for on-chip policies; for a warp per row, whose rows the on-chip and staged
//! policies hold whole; for mean_var (one pass); and for layer_norm, which ran slower with it (bf16 128 x 262144
//! 84.9 -> 93.9 us, 1024 x 131072 314 -> 352: its Welford state and weights leave no registers for it).
std::int64_t stream_cache_vectors(const archdb::device_desc& device, const row_policy& p, const archdb::kernel_resources& res,
                                  row_op op, std::int64_t rows, std::int64_t cols, int elem_bytes) {
  if (!row_cacheable(p, welford_state(op)) || cols <= 0) return 0;
  const int blocks = archdb::occupancy(device, res).blocks_per_sm;
  if (blocks <= 0) return 0;
  const std::int64_t groups = p.block_threads / p.group_threads;
  const double in_flight = std::min(static_cast<double>(rows), static_cast<double>(blocks) * device.sm_count * groups);
  if (in_flight * static_cast<double>(cols) * elem_bytes <= static_cast<double>(device.l2_bytes) / 2) return 0;
  const std::int64_t per_block =
      std::min(device.smem_per_block_optin, device.smem_per_sm / blocks - device.smem_reserved_per_block) -
      res.static_smem - res.dynamic_smem;
  std::int64_t v = std::min(std::max<std::int64_t>(0, per_block) / groups / 16, (cols * elem_bytes + 15) / 16);
  // The allocation granularity may still cost a block: give up a share until the blocks per SM hold.
  archdb::kernel_resources r = res;
  for (r.dynamic_smem = res.dynamic_smem + groups * v * 16; v > 0 && archdb::occupancy(device, r).blocks_per_sm < blocks;
       r.dynamic_smem = res.dynamic_smem + groups * v * 16)
    v -= std::max<std::int64_t>(1, v / 16);
  return v;
}

//! The cache of a streaming row candidate as plan_rows sizes it: with the resources of the instance that keeps
//! it (which may hold fewer blocks per SM than the plain one: row_stream_threads_per_sm), 0 where that many
//! blocks hold their rows' re-read in L2.
std::int64_t planned_cache_vectors(const archdb::device_desc& device, const row_policy& p, row_op op, std::int64_t rows,
                                   std::int64_t cols, int elem_bytes) {
  return stream_cache_vectors(device, p, row_resources(device, p, op, elem_bytes, true), op, rows, cols, elem_bytes);
}
}  // namespace

std::int64_t row_cache_vectors(const archdb::device_desc& device, const archdb::plan& p, row_op op, std::int64_t rows,
                               std::int64_t cols, int elem_bytes) {
  return planned_cache_vectors(device, row_candidates[static_cast<std::size_t>(p.index)], op, rows, cols, elem_bytes);
}

archdb::plan plan_rows(const archdb::device_desc& device, row_op op, std::int64_t rows, std::int64_t cols,
                       int elem_bytes) {
  const bool writes = op != row_op::mean_var;
  const double row_bytes = static_cast<double>(cols) * elem_bytes;
  const double total_bytes = static_cast<double>(rows) * row_bytes;
  std::vector<archdb::candidate> cands;
  std::vector<std::int64_t> cached_bytes;  // per candidate: the head of a row kept in shared memory
  for (const row_policy& p : row_candidates) {
    archdb::candidate c;
    c.name = name_of(p);
    const std::int64_t cache = planned_cache_vectors(device, p, op, rows, cols, elem_bytes);
    c.res = row_resources(device, p, op, elem_bytes, cache > 0);
    c.res.dynamic_smem += std::int64_t{p.block_threads / p.group_threads} * cache * 16;
    cached_bytes.push_back(cache * 16);
    const std::int64_t cap = row_capacity(p, elem_bytes);
    if (staged(p) && !archdb::traits(device.isa).has_async_copy)
      c.unavailable = "staging rows through shared memory needs asynchronous copies, which " +
                      std::string(archdb::traits(device.isa).name) + " lacks (the copy would be a load the thread waits for)";
    else if (!row_compiled(p, elem_bytes, archdb::traits(device.isa).has_async_copy))
      c.unavailable = "staged rows are compiled for 16-bit elements only (fp32 rows ran slower staged)";
    else if (on_chip(p) && cols > cap)
      c.unavailable = "a row of " + std::to_string(cols) + " elements exceeds what the group holds on chip (" +
                      std::to_string(p.group_threads) + " threads x " + std::to_string(held_elements(p, elem_bytes)) +
                      " = " + std::to_string(cap) + " elements of " + std::to_string(elem_bytes) + " bytes)";
    // The 128-thread on-chip block for 16-bit layer_norm: its instance is bounded to 512 threads per SM (the
    // weight, bias and x - K it keeps live), one 8 KB row per block, and measured slower than the streaming
    // warp the model ranks just behind it (H200, 8192 x 4096 bf16: 86.7 against 66-72 us,
    // bench/results/reduction-h200-2026-12-02-axis.md); the model does not see that loss of rows in flight.
    else if (on_chip(p) && p.block_threads == 128 && op == row_op::layer_norm && elem_bytes == 2)
      c.unavailable = "16-bit layer_norm on a 128-thread block holds too few rows in flight (measured slower than "
                      "streaming)";
    cands.push_back(c);
  }
  // Fixed time of one wave of row blocks: archdb calibration "reduction.rows_wave_us", a priori wave_overhead_us.
  const archdb::calibrated_value rows_wave = archdb::calibrated(device, "reduction.rows_wave_us", wave_overhead_us);
  return archdb::choose(device, cands, [&](const archdb::candidate& c, const archdb::occupancy_result& occ) {
    const row_policy& p = row_candidates[static_cast<std::size_t>(&c - cands.data())];
    const std::int64_t per_block = p.block_threads / p.group_threads;
    const std::int64_t blocks = std::max<std::int64_t>(1, (rows + per_block - 1) / per_block);
    const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{occ.blocks_per_sm} * device.sm_count);
    const std::int64_t waves = (blocks + resident - 1) / resident;
    const double round_bytes = static_cast<double>(p.group_threads) * row_vectors(p, elem_bytes) * 16;
    // Bytes a resident group has in flight. Unstaged (on chip: the whole row; streaming: one round of U
    // vectors), a group issues a load round, waits for it and then computes on it with nothing in flight, so
    // its round is in flight for L / (L + C) of the time, C being what the SM takes to issue that compute for
    // all its resident groups (their threads x the elements of a round x row_instructions_per_element, at the
    // device's non-matrix fp32 rate). Staged, the next stages - 1 rows are copied at the start of the current
    // row's compute and are in flight until they land: min(1, L / C) of the time. At the same registers the
    // 16-bit rows hold twice the elements of fp32 rows per byte, so their compute leaves the loads idle longer.
    // Approximations: AMD's fp32 peaks count packed (dual-issue) FP32, so C is about half there; a streaming
    // round is charged a whole element's instructions though its two passes share them; a device without a
    // peak (one synthesized from a query) has no compute share, every load in flight all the time.
    const double active_groups_sm = std::min<double>(static_cast<double>(rows), static_cast<double>(resident * per_block)) /
                                    std::max(1, device.sm_count);
    // Elements a thread computes on after a round: every held slot on chip (the passes run over the padding
    // too); streaming, a round's U vectors or the thread's share of a shorter row.
    const double held = static_cast<double>(row_vectors(p, elem_bytes)) * 16 / elem_bytes;
    const double round_elements =
        on_chip(p) ? held : std::min(held, std::ceil(static_cast<double>(cols) / p.group_threads));
    const double issue_per_us = device.peak_fp32_tflops * 1e6 / 2 / std::max(1, device.sm_count);
    const double compute_us = issue_per_us > 0 ? active_groups_sm * p.group_threads * round_elements *
                                                     row_instructions_per_element / issue_per_us
                                               : 0.0;
    const double duty = staged(p) ? std::min(1.0, load_round_us / std::max(compute_us, 1e-9))
                                  : load_round_us / (load_round_us + compute_us);
    const double group_flight = duty * (staged(p)    ? (p.stages - 1) * row_bytes
                                        : on_chip(p) ? row_bytes
                                                     : std::min(row_bytes, round_bytes));
    const flight_estimate f = in_flight(device, rows, resident * per_block, group_flight);
    // DRAM bytes: read once (and written once) on chip; streaming reads the row a second time for the
    // output, from L2 while the rows in flight fit half of it (the other half for the writes), from
    // DRAM for the part that does not.
    // A streaming group that keeps its row's head in shared memory re-reads only the rest.
    const double passes = on_chip(p) || !writes ? 1 : 2;
    const double cached = std::min(row_bytes, static_cast<double>(cached_bytes[static_cast<std::size_t>(&c - cands.data())]));
    const double footprint = f.groups_per_sm * device.sm_count * (row_bytes - cached);
    const double l2_half = static_cast<double>(device.l2_bytes) / 2;
    const double reread =
        passes > 1 && footprint > l2_half ? (footprint - l2_half) / footprint * (row_bytes - cached) / row_bytes : 0.0;
    const double bytes = total_bytes * (1 + reread + (writes ? 1 : 0));
    const double stream_us = archdb::roofline_us(device, bytes, 0, 0) / f.factor;
    // A group's chain per wave: its dependent load rounds per pass (one on chip: every load at once) and
    // a fixed cost per wave of blocks (start, the group reductions, the slowest block).
    const double rounds = on_chip(p) ? 1.0 : std::ceil(row_bytes / round_bytes);
    // Staged: one wave, each group's rows one after another, their loads under the previous rows' passes.
    const double ring_rows = std::ceil(static_cast<double>(blocks) / static_cast<double>(resident));
    const double chain_us = staged(p) ? load_round_us + ring_rows * rows_wave.value
                                      : static_cast<double>(waves) * (passes * rounds * load_round_us + rows_wave.value);
    std::ostringstream why;
    why << blocks << " blocks of " << per_block << " row(s) (" << waves << " wave(s)), " << static_cast<int>(f.per_sm / 1024)
        << " KB in flight per SM (loads in flight " << static_cast<int>(duty * 100) << "% of the time, "
        << static_cast<int>(f.needed / 1024) << " KB streams at full bandwidth), "
        << (staged(p) ? "row staged through shared memory " + std::to_string(p.stages - 1) + " row(s) ahead, read once"
            : on_chip(p) ? "row held on chip, read once"
            : writes   ? "row read twice (" + std::to_string(static_cast<int>(reread * 100)) + "% of the second read from DRAM" +
                           (cached > 0 ? ", its first " + std::to_string(static_cast<std::int64_t>(cached) / 1024) +
                                             " KB kept in shared memory"
                                       : std::string()) +
                           ")"
                       : std::string("row read once"))
        << ": stream "
        << stream_us << " us, chain " << chain_us << " us (" << rows_wave.value << " us a wave, "
        << rows_wave.origin() << ")";
    return archdb::cost_estimate{std::max(stream_us, chain_us), why.str()};
  });
}

namespace {
//! Blocks of `per_block` groups for `items` rows or segments: enough for every one, at most `waves` waves of
//! resident blocks (the per-group kernels loop over the rest).
unsigned group_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t per_block,
                    std::int64_t items, std::int64_t waves = 16) {
  const std::int64_t blocks = std::max<std::int64_t>(1, (items + per_block - 1) / per_block);
  const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{p.occ.blocks_per_sm} * device.sm_count);
  return static_cast<unsigned>(std::min(blocks, waves * resident));
}
}  // namespace

unsigned row_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t rows) {
  const row_policy& pol = row_candidates[static_cast<std::size_t>(p.index)];
  // Staged: one wave, each group walking its rows through its ring.
  return group_grid(device, p, pol.block_threads / pol.group_threads, rows, staged(pol) ? 1 : 16);
}

unsigned segment_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t segments) {
  const segment_policy& pol = segment_candidates[static_cast<std::size_t>(p.index)];
  return group_grid(device, p, pol.block_threads / pol.group_threads, segments);
}

}  // namespace reduction

const char* to_string(reduce_op op) noexcept {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::prod: return "prod";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
    case reduce_op::argmin: return "argmin";
    case reduce_op::argmax: return "argmax";
  }
  return "?";
}

namespace {
using reduction::dtype;

bool is_arg(reduce_op op) { return op == reduce_op::argmin || op == reduce_op::argmax; }

bool valid_dtype(dtype t) { return static_cast<unsigned>(t) <= static_cast<unsigned>(dtype::f8e4m3fnuz); }
bool fp8(dtype t) { return t == dtype::f8e4m3fn || t == dtype::f8e4m3fnuz; }
status fp8_unsupported(const std::string& fn, dtype t) {
  return unsupported(fn + ": type " + to_string(t) + ": FP8 is a KV-cache storage format (attention_decode, kv_cache_append)");
}

status check_op_type(const char* fn, reduce_op op, dtype t) {
  if (!valid_dtype(t)) return invalid_argument(std::string(fn) + ": type: not a pk::reduction::dtype value");
  if (fp8(t)) return fp8_unsupported(fn, t);
  if (static_cast<unsigned>(op) > static_cast<unsigned>(reduce_op::argmax))
    return invalid_argument(std::string(fn) + ": op: not a pk::reduce_op value");
  if ((op == reduce_op::sum || op == reduce_op::prod) && (t == dtype::i8 || t == dtype::u8))
    return unsupported(std::string(fn) + ": type " + reduction::to_string(t) + ": " + to_string(op) +
                       " is supported for f64, f32, f16, bf16, i32, i64 (i8/u8 have min, max, argmin, argmax)");
  return {};
}

status reduce_reproducible(const stream& s, dtype type, const void* in, std::int64_t n, void* out, const char* policy) {
  const int eb = reduction::size_of(type);
  const std::int64_t key[] = {n, eb};
  const auto planned = archdb::cached_plan(s.device(), "reduce_reproducible", key, "", [&] {
    return reduction::plan_reduce_reproducible(s.device(), n, eb);
  });
  int index = 0;
  PK_TRY(archdb::select_policy(*planned, policy, "reduce (reproducible)", index));
  const archdb::plan p = archdb::with_choice(*planned, index);
  using layout = reduction::reproducible_layout;
  const std::int64_t chunk = layout::chunk_elems(eb);
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  const std::int64_t groups = (chunks + layout::group_chunks - 1) / layout::group_chunks;
  if (groups > layout::max_groups)
    return invalid_argument("reduce: n = " + std::to_string(n) + ": the reproducible sum supports at most " +
                            std::to_string(layout::max_groups * layout::group_chunks * chunk) + " elements");
  const int b = reduction::reproducible_candidates[static_cast<std::size_t>(p.index)];
  const std::int64_t teams = b / 32;
  const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{std::max(1, p.occ.blocks_per_sm)} * s.device().sm_count);
  reduction::repro_call c;
  c.s = &s;
  c.policy = p.index;
  c.grid = static_cast<unsigned>(std::clamp<std::int64_t>((chunks + teams - 1) / teams, 1, resident));
  c.in = in;
  c.n = n;
  c.out = out;
  c.type_name = reduction::to_string(type);
  // Workspace: the counters (one per group and the top one, zero between calls). Scratch: the chunk sums,
  // then the group sums (256-byte aligned).
  const auto round256 = [](std::size_t x) { return (x + 255) / 256 * 256; };
  const std::size_t counters = static_cast<std::size_t>(groups + 1) * sizeof(unsigned);
  const std::size_t chunk_bytes = round256(static_cast<std::size_t>(chunks) * eb);
  const std::size_t group_bytes = static_cast<std::size_t>(groups) * eb;
  void* ws = nullptr;
  void* scratch = nullptr;
  PK_TRY(detail::stream_workspace(s, counters, &ws));
  PK_TRY(detail::stream_scratch(s, chunk_bytes + group_bytes, &scratch));
  c.top_ticket = static_cast<unsigned*>(ws);
  c.group_tickets = static_cast<unsigned*>(ws) + 1;
  c.chunk_sums = static_cast<char*>(scratch);
  c.group_sums = static_cast<char*>(scratch) + chunk_bytes;
  return instances::repro::dispatch(s.code_target(), type, c);
}

// ---- Limits: element counts, offsets and byte extents in checked int64 arithmetic. ----
// Byte offsets into a view are pointer differences: they must fit std::ptrdiff_t (int64 on every
// supported target), which also bounds them below the 64-bit address space.
constexpr std::int64_t max_byte_offset = PTRDIFF_MAX;

//! "n = <n>: <n> elements of <eb> bytes exceed the largest byte offset" unless n * eb fits.
status check_count_bytes(const std::string& what, std::int64_t n, int eb) {
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(n, std::int64_t{eb}, &bytes) || bytes > max_byte_offset)
    return invalid_argument(what + " = " + std::to_string(n) + ": " + std::to_string(n) + " elements of " +
                            std::to_string(eb) + " bytes exceed the largest byte offset (2^63 - 1 bytes)");
  return {};
}

//! The element count of a view (the product of its extents), overflow-checked.
status checked_elements(const char* fn, const char* name, const tensor_view& v, std::int64_t& n) {
  n = 1;
  for (int d = 0; d < v.rank; ++d)
    if (__builtin_mul_overflow(n, v.shape[d], &n)) {
      std::string shape;
      for (int k = 0; k < v.rank; ++k) shape += (k ? ", " : "") + std::to_string(v.shape[k]);
      return invalid_argument(std::string(fn) + ": " + name + ".shape = [" + shape +
                              "]: the element count overflows int64");
    }
  return {};
}

//! The largest byte offset a non-empty view reaches, sum((shape[d] - 1) * stride[d]) + 1 elements of
//! eb bytes, fits max_byte_offset; the message names the stride whose term does not.
status check_view_extent(const char* fn, const char* name, const tensor_view& v, int eb) {
  std::int64_t last = 0;
  for (int d = 0; d < v.rank; ++d) {
    std::int64_t term = 0, bytes = 0;
    if (__builtin_mul_overflow(v.shape[d] - 1, v.stride[d], &term) || __builtin_add_overflow(last, term, &last) ||
        __builtin_mul_overflow(last + 1, std::int64_t{eb}, &bytes) || bytes > max_byte_offset)
      return invalid_argument(std::string(fn) + ": " + name + ".stride[" + std::to_string(d) + "] = " +
                              std::to_string(v.stride[d]) + ": the view's largest offset ((shape - 1) * stride over " +
                              "the dimensions, in elements of " + std::to_string(eb) +
                              " bytes) exceeds the largest byte offset (2^63 - 1 bytes)");
  }
  return {};
}

//! The single-pass device-wide kernels (reduce, reduce_mean_var): plan, workspace, dispatch.
status device_wide(const stream& s, reduction::call_kind kind, reduction::op_code op, dtype type, const void* in,
                   std::int64_t n, void* out, void* out2, int correction, const char* policy, const char* fn) {
  const int eb = reduction::size_of(type);
  const std::int64_t key[] = {n, eb};
  const auto planned =
      archdb::cached_plan(s.device(), "reduce", key, "", [&] { return reduction::plan_reduce(s.device(), n, eb); });
  int index = 0;
  PK_TRY(archdb::select_policy(*planned, policy, fn, index));
  const archdb::plan p = archdb::with_choice(*planned, index);
  reduction::reduce_call c;
  c.s = &s;
  c.kind = kind;
  c.op = op;
  c.policy = p.index;
  c.grid = reduction::reduce_grid(s.device(), p, n, eb);
  c.in = in;
  c.n = n;
  c.out = out;
  c.out2 = out2;
  c.correction = correction;
  c.type_name = reduction::to_string(type);
  void* ws = nullptr;
  void* scratch = nullptr;
  PK_TRY(detail::stream_workspace(s, sizeof(unsigned), &ws));
  PK_TRY(detail::stream_scratch(s, c.grid * reduction::max_accum_bytes, &scratch));
  c.ticket = static_cast<unsigned*>(ws);
  c.partials = static_cast<char*>(scratch);
  return instances::reduce::dispatch(s.code_target(), type, c);
}

status common_stream_checks(const char* fn, const stream& s) {
  if (!s.valid()) return invalid_argument(std::string(fn) + ": stream: not initialized (use pk::default_stream)");
  return {};
}

}  // namespace

status reduce(const stream& s, reduce_op op, dtype type, const void* in, std::int64_t n, void* out,
              const reduce_options& opt) {
  PK_TRY(common_stream_checks("reduce", s));
  PK_TRY(check_op_type("reduce", op, type));
  if (n < 0) return invalid_argument("reduce: n = " + std::to_string(n) + ": must be >= 0");
  if (out == nullptr) return invalid_argument("reduce: out: must not be null");
  if (in == nullptr && n > 0) return invalid_argument("reduce: in: must not be null when n > 0");
  PK_TRY(check_count_bytes("reduce: n", n, reduction::size_of(type)));
  PK_TRY(reduction::detail::check_aligned("reduce: in", in, reduction::size_of(type)));
  PK_TRY(reduction::detail::check_aligned("reduce: out", out, is_arg(op) ? 8 : reduction::size_of(type)));
  if (opt.reproducible) {
    if (op != reduce_op::sum || (type != dtype::f32 && type != dtype::f64))
      return unsupported(std::string("reduce: options.reproducible: only the f32 and f64 sums have a reproducible "
                                     "mode (integer sums are exact; this is ") +
                         to_string(op) + " of " + reduction::to_string(type) + ")");
    return reduce_reproducible(s, type, in, n, out, opt.policy);
  }
  return device_wide(s, reduction::call_kind::device, static_cast<reduction::op_code>(op), type, in, n, out, nullptr, 0,
                     opt.policy, "reduce");
}

status reduce_mean_var(const stream& s, dtype type, const void* in, std::int64_t n, void* mean, void* var,
                       int correction) {
  PK_TRY(common_stream_checks("reduce_mean_var", s));
  if (!valid_dtype(type)) return invalid_argument("reduce_mean_var: type: not a pk::reduction::dtype value");
  if (fp8(type)) return fp8_unsupported("reduce_mean_var", type);
  if (type != dtype::f64 && type != dtype::f32 && type != dtype::f16 && type != dtype::bf16)
    return unsupported(std::string("reduce_mean_var: type ") + reduction::to_string(type) +
                       ": supported types are f64, f32, f16, bf16");
  if (n < 0) return invalid_argument("reduce_mean_var: n = " + std::to_string(n) + ": must be >= 0");
  if (in == nullptr && n > 0) return invalid_argument("reduce_mean_var: in: must not be null when n > 0");
  if (mean == nullptr) return invalid_argument("reduce_mean_var: mean: must not be null");
  if (var == nullptr) return invalid_argument("reduce_mean_var: var: must not be null");
  if (correction < 0) return invalid_argument("reduce_mean_var: correction = " + std::to_string(correction) + ": must be >= 0");
  PK_TRY(check_count_bytes("reduce_mean_var: n", n, reduction::size_of(type)));
  PK_TRY(reduction::detail::check_aligned("reduce_mean_var: in", in, reduction::size_of(type)));
  const int acc_bytes = type == dtype::f64 ? 8 : 4;  // the accumulator: f64, or f32 for the others
  PK_TRY(reduction::detail::check_aligned("reduce_mean_var: mean", mean, acc_bytes));
  PK_TRY(reduction::detail::check_aligned("reduce_mean_var: var", var, acc_bytes));
  return device_wide(s, reduction::call_kind::mean_var, reduction::op_code::sum, type, in, n, mean, var, correction,
                     nullptr, "reduce_mean_var");
}

status segmented_reduce(const stream& s, reduce_op op, dtype type, const void* in, std::int64_t segments,
                        const std::int64_t* offsets, void* out, const reduce_options& opt) {
  PK_TRY(common_stream_checks("segmented_reduce", s));
  PK_TRY(check_op_type("segmented_reduce", op, type));
  if (opt.reproducible) return unsupported("segmented_reduce: options.reproducible: only the device-wide sum has it");
  if (segments < 0) return invalid_argument("segmented_reduce: segments = " + std::to_string(segments) + ": must be >= 0");
  if (segments == 0) return {};
  if (offsets == nullptr) return invalid_argument("segmented_reduce: offsets: must not be null (segments + 1 values)");
  if (out == nullptr) return invalid_argument("segmented_reduce: out: must not be null");
  if (in == nullptr) return invalid_argument("segmented_reduce: in: must not be null");
  const int eb = reduction::size_of(type);
  // segments + 1 int64 offsets, segments outputs.
  if (segments == INT64_MAX) return check_count_bytes("segmented_reduce: segments", segments, 8);
  PK_TRY(check_count_bytes("segmented_reduce: segments", segments + 1, static_cast<int>(sizeof(std::int64_t))));
  PK_TRY(check_count_bytes("segmented_reduce: segments", segments, is_arg(op) ? 8 : eb));
  PK_TRY(reduction::detail::check_aligned("segmented_reduce: in", in, eb));
  PK_TRY(reduction::detail::check_aligned("segmented_reduce: offsets", offsets, static_cast<int>(sizeof(std::int64_t))));
  PK_TRY(reduction::detail::check_aligned("segmented_reduce: out", out, is_arg(op) ? 8 : eb));
  // The total length is not known on the host (offsets live on the device): the even split does not
  // depend on it; the per-segment candidates are planned for reduction::segmented_assumed_len.
  const std::int64_t key[] = {segments, eb};
  const auto planned = archdb::cached_plan(s.device(), "segmented_reduce", key, "", [&] {
    return reduction::plan_segmented_reduce(s.device(), segments, reduction::segmented_assumed_len, eb);
  });
  int index = 0;
  PK_TRY(archdb::select_policy(*planned, opt.policy, "segmented_reduce", index));
  const archdb::plan p = archdb::with_choice(*planned, index);
  reduction::reduce_call c;
  c.s = &s;
  c.op = static_cast<reduction::op_code>(op);
  c.in = in;
  c.n = segments;
  c.out = out;
  c.map.offsets = offsets;
  c.type_name = reduction::to_string(type);
  constexpr int splits = static_cast<int>(reduction::split_candidates.size());
  if (p.index < splits) {
    // One block per resident slot; each keeps two accumulators for the pieces of segments that cross
    // its chunk and a ticket, and a count of finished blocks follows the tickets (zero between calls).
    c.kind = reduction::call_kind::split;
    c.policy = p.index;
    c.grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::int64_t{p.occ.blocks_per_sm} * s.device().sm_count));
    void* ws = nullptr;
    void* scratch = nullptr;
    PK_TRY(detail::stream_workspace(s, (c.grid + 1) * sizeof(unsigned), &ws));
    PK_TRY(detail::stream_scratch(s, 2 * c.grid * reduction::max_accum_bytes, &scratch));
    c.ticket = static_cast<unsigned*>(ws);
    c.partials = scratch;
    c.partials2 = static_cast<char*>(scratch) + c.grid * reduction::max_accum_bytes;
  } else {
    c.kind = reduction::call_kind::segments;
    c.policy = p.index - splits;
    const reduction::segment_policy& pol = reduction::segment_candidates[static_cast<std::size_t>(c.policy)];
    c.grid = reduction::group_grid(s.device(), p, pol.block_threads / pol.group_threads, segments);
  }
  return instances::reduce::dispatch(s.code_target(), type, c);
}

status reduce_axis(const stream& s, reduce_op op, const tensor_view& in, int axis, const tensor_view& out,
                   const reduce_options& opt) {
  constexpr const char* fn = "reduce_axis";
  PK_TRY(common_stream_checks(fn, s));
  PK_TRY(check_op_type(fn, op, in.type));
  if (opt.reproducible) return unsupported("reduce_axis: options.reproducible: only the device-wide sum has it");
  if (in.rank < 1 || in.rank > tensor_view::max_rank)
    return invalid_argument("reduce_axis: in.rank = " + std::to_string(in.rank) + ": must be in [1, 4]");
  if (axis < 0 || axis >= in.rank)
    return invalid_argument("reduce_axis: axis = " + std::to_string(axis) + ": must be in [0, in.rank = " +
                            std::to_string(in.rank) + ")");
  for (int d = 0; d < in.rank; ++d) {
    if (in.shape[d] < 0)
      return invalid_argument("reduce_axis: in.shape[" + std::to_string(d) + "] = " + std::to_string(in.shape[d]) +
                              ": must be >= 0");
    if (in.stride[d] < 0)
      return invalid_argument("reduce_axis: in.stride[" + std::to_string(d) + "] = " + std::to_string(in.stride[d]) +
                              ": must be >= 0");
  }
  std::int64_t in_elems = 1;
  PK_TRY(checked_elements(fn, "in", in, in_elems));
  const int out_rank = in.rank - 1;
  if (out.rank != out_rank)
    return invalid_argument("reduce_axis: out.rank = " + std::to_string(out.rank) + ": must be in.rank - 1 = " +
                            std::to_string(out_rank));
  const dtype want = is_arg(op) ? dtype::i64 : in.type;
  if (out.type != want)
    return invalid_argument(std::string("reduce_axis: out.type = ") + reduction::to_string(out.type) + ": must be " +
                            reduction::to_string(want) + (is_arg(op) ? " (argmin/argmax write indices)" : " (in.type)"));
  reduction::seg_map map;
  std::int64_t outputs = 1;
  for (int d = 0, o = 0; d < in.rank; ++d) {
    if (d == axis) continue;
    if (out.shape[o] != in.shape[d])
      return invalid_argument("reduce_axis: out.shape[" + std::to_string(o) + "] = " + std::to_string(out.shape[o]) +
                              ": must equal in.shape[" + std::to_string(d) + "] = " + std::to_string(in.shape[d]));
    if (out.stride[o] < 0)
      return invalid_argument("reduce_axis: out.stride[" + std::to_string(o) + "] = " + std::to_string(out.stride[o]) +
                              ": must be >= 0");
    map.outer_shape[o] = in.shape[d];
    // An empty reduced axis reads nothing, so its input's strides are unchecked (check_view_extent below
    // runs only for a non-empty input) and may be anything: the map carries zero, so that the kernels'
    // offsets of the segments they do not read cannot overflow.
    map.in_stride[o] = in.shape[axis] == 0 ? 0 : in.stride[d];
    map.out_stride[o] = out.stride[o];
    if (__builtin_mul_overflow(outputs, in.shape[d], &outputs))  // only when the reduced extent is 0
      return invalid_argument("reduce_axis: out.shape: the element count overflows int64");
    ++o;
  }
  map.outer_rank = out_rank;
  map.len = in.shape[axis];
  map.axis_stride = in.stride[axis];
  const int out_eb = reduction::size_of(want);
  if (in_elems > 0) PK_TRY(check_view_extent(fn, "in", in, reduction::size_of(in.type)));
  if (outputs > 0) PK_TRY(check_view_extent(fn, "out", out, out_eb));
  if (outputs == 0) return {};
  if (out.data == nullptr) return invalid_argument("reduce_axis: out.data: must not be null");
  if (in.data == nullptr && in_elems > 0) return invalid_argument("reduce_axis: in.data: must not be null");
  PK_TRY(reduction::detail::check_aligned("reduce_axis: in.data", in.data, reduction::size_of(in.type)));
  PK_TRY(reduction::detail::check_aligned("reduce_axis: out.data", out.data, out_eb));
  const int eb = reduction::size_of(in.type);
  reduction::reduce_call c;
  c.s = &s;
  c.op = static_cast<reduction::op_code>(op);
  c.in = in.data;
  c.n = outputs;
  c.out = const_cast<void*>(out.data);
  c.map = map;
  c.type_name = reduction::to_string(in.type);
  if (map.axis_stride == 1 || map.len <= 1) {
    map.axis_stride = 1;
    c.map.axis_stride = 1;
    const std::int64_t key[] = {outputs, map.len, eb};
    const auto planned = archdb::cached_plan(s.device(), "reduce_axis", key, "", [&] {
      return reduction::plan_segmented(s.device(), outputs, outputs * map.len, eb);
    });
    int index = 0;
    PK_TRY(archdb::select_policy(*planned, opt.policy, fn, index));
    const archdb::plan p = archdb::with_choice(*planned, index);
    c.kind = reduction::call_kind::segments;
    c.policy = p.index;
    c.grid = reduction::segment_grid(s.device(), p, outputs);
  } else {
    if (opt.policy != nullptr && *opt.policy != '\0')
      return unsupported(std::string("reduce_axis: options.policy ") + opt.policy +
                         ": a strided axis (in.stride[axis] != 1) runs the one strided kernel, which has no candidates");
    constexpr std::int64_t threads = 256;  // impl::strided_block_threads
    c.kind = reduction::call_kind::strided;
    c.grid = static_cast<unsigned>(std::clamp<std::int64_t>((outputs + threads - 1) / threads, 1,
                                                            std::int64_t{s.device().sm_count} * 64));
  }
  return instances::reduce::dispatch(s.code_target(), in.type, c);
}

}  // namespace pk
