// Attention forward: validation, planning and dispatch to the per-target instances. Compiled once.
#include <pk/attention/attention.hpp>
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/detail/attention_call.hpp>
#include <pk/attention/detail/attention_mask.hpp>
#include <pk/attention/detail/attention_schedule.hpp>
#include <pk/archdb/family_plan.hpp>
#include <pk/attention/attn_fwd_instances.hpp>
#include <pk/config.hpp>
#include <pk/timing.hpp>

#include "attention_views.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

namespace pk {

namespace attention {

const char* to_string(strategy s) noexcept {
  switch (s) {
    case strategy::tiled_mma: return "tiled_mma";
    case strategy::ws_wgmma_tma: return "ws_wgmma_tma";
  }
  return "?";
}

namespace {

// Shape of the MMA atom the portable kernel uses on a device's arch (mirrors portable/mma.hpp).
struct atom_shape {
  int m, n, k, c_vals, a_vals, b_vals;
};
atom_shape atom_of(const archdb::device_desc& d) {
  switch (archdb::traits(d.isa).mma) {
    case archdb::mma_family::mfma_cdna2:
    case archdb::mma_family::mfma_cdna3:
    case archdb::mma_family::mfma_cdna4: return {32, 32, 8, 16, 4, 4};
    case archdb::mma_family::wmma_rdna3: return {16, 16, 16, 8, 16, 16};
    case archdb::mma_family::wmma_rdna4: return {16, 16, 16, 8, 8, 8};
    default: return {16, 8, 16, 4, 8, 4};
  }
}

// Registers per thread, estimated from the accumulators the policy keeps live (O, S, row statistics,
// one A fragment per M atom and one B fragment, 16-bit values packed two per register) plus a fixed
// allowance for addresses, loop state and masking. The host plans for devices it does not run on, so
// the compiler's report is not at hand; the CI resource check compares it with the real counts.
constexpr int regs_allowance = 40;
int estimated_regs(const archdb::device_desc& d, const policy& p, int head_dim) {
  const atom_shape a = atom_of(d);
  const int warps = p.block_threads / d.warp_size;
  const int ma = std::max(1, p.block_m / warps / a.m);
  const int acc = ma * (head_dim / a.n + p.block_n / a.n) * a.c_vals + 2 * ma * a.c_vals;
  const int frags = (ma * a.a_vals + a.b_vals) / 2;
  const int cap = d.vendor_id == archdb::vendor::nvidia ? d.max_regs_per_thread : d.max_arch_vgprs;
  return std::min(acc + frags + regs_allowance, cap > 0 ? cap : 255);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Key tiles the kernel visits for query block mb: the kernel's own range (attention_mask.hpp), in 64-bit
// arithmetic, so unclamped windows up to INT_MAX (a caller of plan()) count right.
std::int64_t tiles_of_block(const attention_problem& pr, int bm, int bn, std::int64_t mb) {
  return key_tiles_of_block(mb * bm, bm, bn, pr.seqlen_q, pr.seqlen_k, pr.window_left, pr.causal ? 0 : pr.window_right)
      .count();
}

// The busiest block of a persistent grid of `grid` blocks walking the items in the kernel's rounds
// (attention_schedule.hpp): the time of its key tiles and items, `tile_us` a key tile and `item_us` an item.
// Items are counted at the longest sequence (varlen: shorter ones are skipped, so this is an upper bound).
struct persistent_load {
  double us = 0;
  std::int64_t items = 0, tiles = 0;
};
persistent_load busiest_block(const attention_problem& pr, const policy& p, std::int64_t grid, int l2_group, double tile_us,
                              double item_us) {
  const std::int64_t m_blocks = ceil_div(pr.seqlen_q, p.block_m);
  const std::int64_t items = m_blocks * pr.heads_q * pr.batch;
  std::vector<std::int64_t> tiles_of(static_cast<std::size_t>(m_blocks));
  for (std::int64_t mb = 0; mb < m_blocks; ++mb) tiles_of[static_cast<std::size_t>(mb)] = tiles_of_block(pr, p.block_m, p.block_n, mb);
  std::vector<persistent_load> load(static_cast<std::size_t>(grid));
  for (std::int64_t k = 0; k * grid < items; ++k)
    for (std::int64_t j = 0; j < grid; ++j) {
      const std::int64_t lin = item_of_round(k, j, grid);
      if (lin >= items) continue;
      const work_item w = work_item_of(lin, static_cast<int>(m_blocks), pr.heads_q, pr.batch, l2_group);
      persistent_load& l = load[static_cast<std::size_t>(j)];
      ++l.items;
      l.tiles += tiles_of[static_cast<std::size_t>(w.mb)];
    }
  persistent_load worst;
  for (persistent_load& l : load) {
    l.us = double(l.tiles) * tile_us + double(l.items) * item_us;
    if (l.us > worst.us) worst = l;
  }
  return worst;
}
// Items beyond which the planner does not deal the persistent grid's rounds out one by one (a few ms of
// planning, once per problem: the plan cache keeps it) and takes the mean load of a block instead.
constexpr std::int64_t max_dealt_items = std::int64_t{1} << 22;

// Mean shared-memory clock assumed for the bandwidth term: archdb has no clock field, and the boost
// clocks of the supported devices span 1.4-2.1 GHz; the term only ranks policies against each other.
constexpr double assumed_clock_ghz = 1.7;
// The mma.sync path on an arch with wgmma reaches about a third of the dense peak (ANCHORS.md puts an
// Ampere-style kernel at 350-370 of the H100/H200's 989 TFLOP/s; cuBLAS with wgmma reaches 760): the a-priori
// share where archdb holds no measurement of the arch ("attention.tiled_matrix_share"; on an arch without wgmma
// the tiled strategy is the native one and is modelled at the full peak). With it, a fixed time per wave of
// blocks ("attention.tiled_wave_us": launch, the Q load and the pipeline's fill, the epilogue), 0 a priori.
// The measured values and how they were fitted are in the archdb entry (archdb/devices/h200-sxm.json).
constexpr double tiled_matrix_share_on_wgmma_arch = 0.36;
// Warps per SM sub-partition (SIMD) that keep the matrix pipe busy: FA2's argument, one warp's softmax
// runs while another's MMAs issue.
constexpr int warps_per_subpartition = 2;
// Latency of a K/V tile load from device memory under load (microbenchmarks of A100/H100 report about
// 0.6-1 us at high occupancy); the part a tile's compute does not cover is exposed.
constexpr double load_latency_us = 1.0;

// The warp-specialized strategy's model. Its MMAs run at the tensor cores' rate less what feeding them
// costs: a dense bf16 GEMM with wgmma reaches 760-790 of the H200's 989 TFLOP/s (cuBLAS, ANCHORS.md), so
// 0.78 of the peak is the most one tile's products can take. The softmax's exponentials run on the
// special-function unit, 16 per clock per SM (CUDA C++ Programming Guide, arithmetic instruction
// throughput table, compute capability 9.0: 16 results per clock per SM for exp2). The kernel issues them
// to overlap the products (ping-pong of the two consumer warpgroups; S_{j+1} beside P_j V_j); measured, a
// tile takes a part of the sum ("attention.ws_sum_share") plus a fixed cost ("attention.ws_tile_us": barrier
// hand-offs, issue latency, the epilogue spread over the tiles), which is what makes the larger tile win at
// head_dim 64, plus a fixed cost per wave of blocks ("attention.ws_wave_us": one block per SM, its prologue,
// TMA descriptor fetch, Q load and the ring's fill, and its epilogue overlap no other block's tiles), which is
// what makes short and causal rows slower than their tiles. A priori (no measurement of the arch in archdb):
// the whole sum exposed and no fixed costs. The H200's fit: archdb/devices/h200-sxm.json.
constexpr double wgmma_share = 0.78;
constexpr double exp_per_clock_per_sm = 16;
// Registers the launch gives each thread before the roles re-balance them (setmaxnreg needs the cap that
// __launch_bounds__(threads, 1) sets): the SM's 64 K registers over the block, in units of 8.
int ws_launch_regs(const archdb::device_desc& d, int threads) {
  const int per = d.regs_per_sm > 0 ? static_cast<int>(d.regs_per_sm / threads) : 65536 / threads;
  return std::min(per / 8 * 8, d.max_regs_per_thread > 0 ? d.max_regs_per_thread : 255);
}
bool device_has_ws(const archdb::device_desc& d) {
  const archdb::arch_traits& t = archdb::traits(d.isa);
  return t.has_wgmma && t.has_tma;
}

}  // namespace

attention_plan plan(const archdb::device_desc& device, const attention_problem& pr) {
  attention_plan out;
  const family fam = family_of(device.vendor_id);
  const std::span<const policy> pols = candidates(fam, pr.ws_compiled, pr.head_dim);
  const int eb = pr.type == dtype::f32 ? 4 : 2;
  const bool ws_device = device_has_ws(device);
  std::vector<archdb::candidate> cands;
  for (const policy& p : pols) {
    archdb::candidate c;
    c.name = name_of(p, to_string(pr.type), pr.head_dim);
    c.res.threads_per_block = p.block_threads;
    c.res.dynamic_smem = smem_bytes(p, pr.head_dim, eb, stages_p(fam));
    c.declares_spills = declares_spills(device.isa, p, pr.head_dim);
    if (p.strat == strategy::ws_wgmma_tma) {
      c.res.regs_per_thread = ws_launch_regs(device, p.block_threads);
      if (!ws_device) c.unavailable = "needs warpgroup MMA and tensor copies (sm_90a)";
    } else {
      c.res.regs_per_thread = estimated_regs(device, p, pr.head_dim);
    }
    cands.push_back(c);
  }
  const atom_shape at = atom_of(device);
  const bool wgmma_arch = archdb::traits(device.isa).has_wgmma;
  const archdb::calibrated_value tiled_share =
      archdb::calibrated(device, "attention.tiled_matrix_share", wgmma_arch ? tiled_matrix_share_on_wgmma_arch : 1.0);
  const archdb::calibrated_value tiled_wave = archdb::calibrated(device, "attention.tiled_wave_us", 0.0);
  const archdb::calibrated_value ws_sum = archdb::calibrated(device, "attention.ws_sum_share", 1.0);
  // Three consumer warpgroups do not take turns (no ping-pong): their exposed share is measured apart, a
  // priori that of two.
  const archdb::calibrated_value ws_sum_3wg = archdb::calibrated(device, "attention.ws_sum_share_3wg", ws_sum.value);
  const archdb::calibrated_value ws_tile = archdb::calibrated(device, "attention.ws_tile_us", 0.0);
  const archdb::calibrated_value ws_wave = archdb::calibrated(device, "attention.ws_wave_us", 0.0);
  // A persistent block's fixed cost per item; a priori that of a wave (nothing hidden).
  const archdb::calibrated_value ws_item = archdb::calibrated(device, "attention.ws_persistent_item_us", ws_wave.value);
  const double peak = (pr.type == dtype::f16 ? device.peak_fp16_tflops : device.peak_bf16_tflops) * tiled_share.value;
  const int units = std::max(1, device.occupancy_units());
  const int subparts = device.vendor_id == archdb::vendor::nvidia ? std::max(1, device.smsp_per_sm)
                                                                  : std::max(1, device.simds_per_cu * std::max(1, device.cus_per_wgp));
  const double smem_bytes_per_s = double(archdb::traits(device.isa).smem_banks) * archdb::traits(device.isa).smem_bank_bytes *
                                  assumed_clock_ghz * 1e9;
  const double unique_bytes =
      double(pr.batch) * eb * pr.head_dim * (2.0 * pr.heads_q * pr.seqlen_q + 2.0 * pr.heads_kv * pr.seqlen_k);

  out.choice = archdb::choose(device, cands, [&](const archdb::candidate& c, const archdb::occupancy_result& occ) {
    const policy& p = pols[static_cast<std::size_t>(&c - cands.data())];
    // The grid and the key tiles its blocks walk, as the kernels of either strategy do.
    const std::int64_t m_blocks = ceil_div(pr.seqlen_q, p.block_m);
    std::int64_t tiles = 0;
    for (std::int64_t mb = 0; mb < m_blocks; ++mb) tiles += tiles_of_block(pr, p.block_m, p.block_n, mb);
    const std::int64_t blocks = m_blocks * pr.heads_q * pr.batch;
    const double tiles_per_block = double(tiles) / double(m_blocks);
    if (p.strat == strategy::ws_wgmma_tma) {
      const double dense = (pr.type == dtype::f16 ? device.peak_fp16_tflops : device.peak_bf16_tflops) * 1e12;
      const double sm_flops = dense * wgmma_share / units;
      const double t_mma = 4.0 * p.block_m * p.block_n * pr.head_dim / sm_flops;
      const double t_exp = double(p.block_m) * p.block_n / (exp_per_clock_per_sm * assumed_clock_ghz * 1e9);
      const std::int64_t waves = archdb::waves(device, blocks, occ);
      const archdb::calibrated_value& share = p.block_m / 64 == 3 ? ws_sum_3wg : ws_sum;
      const double per_tile_us = share.value * (t_mma + t_exp) * 1e6 + ws_tile.value;
      const double t_mem = archdb::roofline_us(device, unique_bytes, 0, 0);
      std::ostringstream why;
      why.precision(3);
      why << p.block_m / 64 << " consumer warpgroups x 64 rows, " << p.stages << "-stage K/V ring; per tile " << t_mma * 1e6
          << " us of warpgroup MMA + " << t_exp * 1e6 << " us of exp2, " << share.value << " of the sum exposed + "
          << ws_tile.value << " us hand-offs, " << ws_wave.value << " us a wave (" << share.origin() << "); ";
      if (p.persistent) {
        // One block per SM deals the items out in rounds: the busiest block sets the time, and an item's
        // fixed cost is its pipeline fill and drain (the first S with no P V beside it, the last P V, the
        // epilogue); the next item's Q loads under them.
        const std::int64_t grid = std::min<std::int64_t>(blocks, std::max(1, device.sm_count));
        const int l2_group = l2_group_of(device.l2_bytes, pr.seqlen_k, pr.head_dim, eb, std::max(1, pr.heads_q / std::max(1, pr.heads_kv)),
                                         std::int64_t{pr.heads_q} * pr.batch);
        persistent_load busiest;
        if (blocks <= max_dealt_items) {
          busiest = busiest_block(pr, p, grid, l2_group, per_tile_us, ws_item.value);
        } else {
          busiest.items = ceil_div(blocks, grid);
          busiest.tiles = static_cast<std::int64_t>(std::ceil(double(busiest.items) * tiles_per_block));
          busiest.us = double(busiest.tiles) * per_tile_us + double(busiest.items) * ws_item.value;
        }
        why << "persistent: " << grid << " blocks walk " << blocks << " items, the busiest " << busiest.items
            << " items of " << busiest.tiles << " key tiles, " << ws_item.value << " us an item (" << ws_item.origin() << ")";
        return archdb::cost_estimate{std::max(busiest.us, t_mem), why.str()};
      }
      const double t_us = double(waves) * tiles_per_block * per_tile_us + double(waves) * ws_wave.value;
      why << blocks << " blocks in " << waves << " waves ("
          << static_cast<int>(archdb::wave_efficiency(device, blocks, occ) * 100) << "% of the last busy)";
      return archdb::cost_estimate{std::max(t_us, t_mem), why.str()};
    }
    const int warps = p.block_threads / device.warp_size;
    const int wm = p.block_m / warps;
    // Per tile and block: matrix work, and shared-memory bytes read (each warp reads all of K and V,
    // its own Q rows; a staged P is written and read once).
    const double flops_tile = 4.0 * p.block_m * p.block_n * pr.head_dim;
    const double smem_tile = double(warps) * 2.0 * p.block_n * pr.head_dim * eb + double(p.block_m) * pr.head_dim * eb +
                             (stages_p(fam) ? 2.0 * p.block_m * p.block_n * eb : 0.0);
    const double latency_util = std::min(1.0, double(occ.active_warps) / (warps_per_subpartition * subparts));
    const double unit_flops = peak * 1e12 / units * latency_util;
    const double bps = std::max(1, occ.blocks_per_sm);
    const double t_mma = bps * flops_tile / unit_flops;
    const double t_smem = bps * smem_tile / smem_bytes_per_s;
    const std::int64_t waves = archdb::waves(device, blocks, occ);
    // The next tile's copy overlaps half a tile (stages 1: K(j-1) during P V(j), V(j) during Q K(j)^T)
    // or a whole tile (stages 2); the other resident blocks' work hides the rest.
    const double t_tile = std::max(t_mma, t_smem) * 1e6;
    const double exposed = std::max(0.0, load_latency_us - (p.stages == 2 ? 1.0 : 0.5) * t_tile) / bps;
    const double wave_us = tiled_wave.value;
    const double t_us = double(waves) * tiles_per_block * (t_tile + exposed) + double(waves) * wave_us;
    const double t_mem = archdb::roofline_us(device, unique_bytes, 0, 0);
    std::ostringstream why;
    why.precision(3);
    why << wm << " rows/warp (" << wm / at.m << " atoms), " << p.stages << " K/V stage" << (p.stages > 1 ? "s" : "")
        << " (" << exposed << " us load latency exposed per tile), " << occ.active_warps << " warps/SM -> matrix pipe "
        << static_cast<int>(latency_util * 100) << "% fed; per tile " << (t_mma > t_smem ? "MMA" : "shared-memory")
        << "-bound (" << t_mma * 1e6 << " vs " << t_smem * 1e6 << " us per SM)";
    why << "; " << tiled_share.value << " of the matrix peak (" << tiled_share.origin() << ")";
    if (wave_us > 0) why << ", " << wave_us << " us a wave (" << tiled_wave.origin() << ")";
    why << "; " << blocks << " blocks in " << waves
        << " waves (" << static_cast<int>(archdb::wave_efficiency(device, blocks, occ) * 100) << "% of the last busy)";
    return archdb::cost_estimate{std::max(t_us, t_mem), why.str()};
  });
  out.strat = strategy::tiled_mma;
  if (out.choice.index >= 0) {
    const policy& p = pols[static_cast<std::size_t>(out.choice.index)];
    out.strat = p.strat;
    // Why this strategy: the warp-specialized one wins where it exists and is modelled faster; otherwise say
    // what keeps it out.
    std::string strat_why;
    if (p.strat == strategy::tiled_mma) {
      if (!ws_device)
        strat_why = " (" + device.name + " has no warpgroup MMA / tensor copies: ws_wgmma_tma needs sm_90a)";
      else if (ws_candidates(pr.head_dim).empty())
        strat_why = " (ws_wgmma_tma has no instance at head_dim " + std::to_string(pr.head_dim) + ": 64, 128, 256)";
      else if (!pr.ws_compiled)
        strat_why = " (ws_wgmma_tma is not available here: no sm_90a code in this build, or views the tensor copy "
                    "engine cannot describe)";
      else {
        // Both strategies were ranked: name the warp-specialized candidate that came closest.
        const archdb::plan::considered* ws_best = nullptr;
        for (std::size_t i = 0; i < pols.size(); ++i) {
          const archdb::plan::considered& c = out.choice.all[i];
          if (pols[i].strat == strategy::ws_wgmma_tma && c.fits && (!ws_best || c.predicted_us < ws_best->predicted_us))
            ws_best = &c;
        }
        if (ws_best) {
          std::ostringstream w;
          w.precision(4);
          w << " (ws_wgmma_tma's best, " << ws_best->name << ", is modelled slower: " << ws_best->predicted_us
            << " us)";
          strat_why = w.str();
        }
      }
    }
    out.grid_x = static_cast<unsigned>(ceil_div(pr.seqlen_q, p.block_m));
    out.grid_y = static_cast<unsigned>(pr.heads_q);
    out.grid_z = static_cast<unsigned>(pr.batch);
    out.block_threads = p.block_threads;
    out.smem_bytes = cands[static_cast<std::size_t>(out.choice.index)].res.dynamic_smem;
    out.choice.why = std::string("strategy ") + to_string(out.strat) + strat_why + ": " + out.choice.why;
  }
  return out;
}

}  // namespace attention

archdb::plan plan_attention(const archdb::device_desc& device, const attention::attention_problem& problem) {
  return attention::plan(device, problem).choice;
}

namespace attention {
namespace {
//! floor(log2(v)) for v >= 1, else 0: problems within a factor of two share a tuning bucket.
int log2_floor(std::int64_t v) {
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}
}  // namespace

std::string tuning_bucket(const attention_problem& p) {
  const bool window = p.window_left >= 0 || (!p.causal && p.window_right >= 0);
  return "d" + std::to_string(p.head_dim) + (p.causal ? "_causal" : window ? "_window" : "_full") + "_q" +
         std::to_string(log2_floor(p.seqlen_q)) + "_k" + std::to_string(log2_floor(p.seqlen_k)) + "_bh" +
         std::to_string(log2_floor(std::int64_t{p.batch} * p.heads_q));
}
}  // namespace attention

namespace {

status bad(const std::string& m) { return invalid_argument("attention_forward: " + m); }

constexpr std::int64_t int_max = std::numeric_limits<int>::max();

// The largest query or key tile of any candidate policy. The kernel forms positions up to a sequence
// length plus one tile (the rows and keys of a partial last tile) in 32 bits.
constexpr std::int64_t largest_tile = [] {
  int m = 0;
  for (const attention::family f : {attention::family::nvidia, attention::family::amd})
    for (const int hd : attention::head_dims)
      for (const attention::policy& p : attention::candidates(f, true, hd)) m = std::max({m, p.block_m, p.block_n});
  return m;
}();
// Longest sequence (or packed token count) accepted.
constexpr std::int64_t max_seqlen = int_max - largest_tile;

// q/k/v/out as the rank-4 view the kernel takes: rank 3 [tokens, heads, head_dim] is rank 4 with batch 1.
// The stride of a dimension of extent 1 is never used: it is set to 0 (so any value is accepted).
status to_rank4(const char* name, const tensor_view& t, tensor_view& out) {
  if (t.rank != 4 && t.rank != 3)
    return bad(std::string(name) + ": rank " + std::to_string(t.rank) +
               " must be 4 ([batch, seqlen, heads, head_dim]) or 3 ([tokens, heads, head_dim], batch 1)");
  out = t;
  if (t.rank == 3) {
    out.rank = 4;
    for (int i = 3; i > 0; --i) {
      out.shape[i] = t.shape[i - 1];
      out.stride[i] = t.stride[i - 1];
    }
    out.shape[0] = 1;
  }
  for (int i = 0; i < 3; ++i)
    if (out.shape[i] == 1) out.stride[i] = 0;
  return {};
}

status check_view(const char* name, const tensor_view& t, dtype type, int head_dim) {
  if (t.type != type)
    return bad(std::string(name) + ": dtype " + to_string(t.type) + " differs from q's " + to_string(type));
  return attention::views::check_view("attention_forward", name, t, type, head_dim, max_seqlen);
}

// The offsets of one varlen operand: cu[0] >= 0, non-decreasing, cu[batch] <= the packed token count,
// every length <= the declared maximum. Read where device memory is host memory (the emulator): on a
// GPU the check would cost a copy and a synchronization, so there it is the caller's precondition.
status check_cu_seqlens(const char* name, const std::int32_t* cu, int batch, std::int64_t tokens, int max_len,
                        const char* max_name) {
  if (cu[0] < 0) return bad(std::string(name) + "[0] = " + std::to_string(cu[0]) + " must be >= 0");
  for (int b = 0; b < batch; ++b) {
    const std::int64_t len = std::int64_t{cu[b + 1]} - cu[b];
    if (len < 0)
      return bad(std::string(name) + ": must be non-decreasing (" + name + "[" + std::to_string(b + 1) + "] = " +
                 std::to_string(cu[b + 1]) + " < " + name + "[" + std::to_string(b) + "] = " + std::to_string(cu[b]) + ")");
    if (len > max_len)
      return bad(std::string(name) + ": sequence " + std::to_string(b) + " has " + std::to_string(len) + " tokens, more than " +
                 max_name + " = " + std::to_string(max_len));
  }
  if (cu[batch] > tokens)
    return bad(std::string(name) + "[" + std::to_string(batch) + "] = " + std::to_string(cu[batch]) +
               " exceeds the packed token count " + std::to_string(tokens));
  return {};
}

// Whether the tensor copy engine can describe view t (rank 4): every dimension of extent > 1 but the
// contiguous one has a byte stride that is a non-zero multiple of 16 below 2^40 [CUDA driver API,
// cuTensorMapEncodeTiled: globalStrides].
bool tma_views(const tensor_view& t) {
  constexpr std::int64_t max_stride_bytes = std::int64_t{1} << 40;
  for (int i = 0; i < 3; ++i) {
    if (t.shape[i] <= 1) continue;
    const std::int64_t bytes = t.stride[i] * size_of(t.type);
    if (t.stride[i] <= 0 || bytes % 16 != 0 || t.stride[i] >= max_stride_bytes / size_of(t.type)) return false;
  }
  return true;
}

// A window bound that reaches past every key of every row masks nothing: -1 (see attention.hpp). With
// seqlen_q/seqlen_k the longest possible sequence (fixed length: the lengths; varlen: the packed token
// counts, which bound every sequence), no row's keys change. The kernel and the planner form window sums
// in 64 bits as well; the clamp keeps INT_MAX-sized bounds out of the parameter block altogether.
struct windows {
  int left, right;
};
windows effective_windows(bool causal, int window_left, int window_right, std::int64_t seqlen_q, std::int64_t seqlen_k) {
  const int right = causal ? 0 : window_right;
  return {window_left >= seqlen_k - 1 ? -1 : window_left, right >= seqlen_q - 1 ? -1 : right};
}

}  // namespace

status attention_forward(const stream& s, const attention_args& args) {
  if (!s.valid()) return bad("stream: not initialized (use pk::default_stream)");
  attention_args a = args;
  PK_TRY(to_rank4("q", args.q, a.q));
  PK_TRY(to_rank4("k", args.k, a.k));
  PK_TRY(to_rank4("v", args.v, a.v));
  PK_TRY(to_rank4("out", args.out, a.out));
  // The dtypes and head dims with compiled instances: the instance table (kernels/attention/CMakeLists.txt).
  const auto listed = [](const auto& values, auto name) {
    std::string out;
    for (const auto& v : values) out += (out.empty() ? "" : ", ") + std::string(name(v));
    return out;
  };
  const dtype type = a.q.type;
  if (std::find(instances::attn_fwd::type_values.begin(), instances::attn_fwd::type_values.end(), type) ==
      instances::attn_fwd::type_values.end())
    return unsupported(std::string("attention_forward: q: dtype ") + to_string(type) + " is not supported (" +
                       listed(instances::attn_fwd::type_values, [](dtype t) { return to_string(t); }) + ")");
  const std::int64_t d = a.q.shape[3];
  if (d < 0 || d > attention::head_dims.back() || !attention::supported_head_dim(static_cast<int>(d)))
    return unsupported("attention_forward: q: head_dim " + std::to_string(d) + " is not supported (" +
                       listed(attention::head_dims, [](int h) { return std::to_string(h); }) + ")");
  PK_TRY(check_view("q", a.q, type, static_cast<int>(d)));
  PK_TRY(check_view("k", a.k, type, static_cast<int>(d)));
  PK_TRY(check_view("v", a.v, type, static_cast<int>(d)));
  PK_TRY(check_view("out", a.out, type, static_cast<int>(d)));
  const std::int64_t hq = a.q.shape[2], hkv = a.k.shape[2];
  if (a.v.shape[2] != hkv) return bad("v: heads " + std::to_string(a.v.shape[2]) + " differ from k's " + std::to_string(hkv));
  if (a.out.shape[2] != hq) return bad("out: heads " + std::to_string(a.out.shape[2]) + " differ from q's " + std::to_string(hq));
  if (hkv == 0 || hq % hkv != 0)
    return bad("k: heads_kv " + std::to_string(hkv) + " must divide heads_q " + std::to_string(hq));
  if (hq > 65535) return bad("q: heads " + std::to_string(hq) + " > 65535 (grid limit)");
  if (a.k.shape[1] != a.v.shape[1]) return bad("v: seqlen " + std::to_string(a.v.shape[1]) + " differs from k's " + std::to_string(a.k.shape[1]));
  if (a.out.shape[1] != a.q.shape[1] || a.out.shape[0] != a.q.shape[0])
    return bad("out: shape must equal q's [batch, seqlen_q, heads_q, head_dim]");
  PK_TRY(attention::views::check_distinct("attention_forward", "out", a.out));
  const float scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0f / std::sqrt(static_cast<float>(d));
  const float scale_log2 = scale * 1.44269504088896340736f;  // log2(e)
  if (a.softmax_scale < 0 || !std::isfinite(a.softmax_scale) || !std::isfinite(scale_log2))
    return bad("softmax_scale: " + std::to_string(a.softmax_scale) +
               " must be positive and finite, also times log2(e) (0: 1/sqrt(head_dim))");
  if (a.window_left < -1 || a.window_right < -1) return bad("window_left/window_right: must be >= -1 (-1: unbounded)");
  if (reinterpret_cast<std::uintptr_t>(a.lse) % alignof(float) != 0) return bad("lse: must be 4-byte aligned");
  const bool varlen = a.cu_seqlens_q != nullptr || a.cu_seqlens_k != nullptr;
  if (varlen && (a.cu_seqlens_q == nullptr || a.cu_seqlens_k == nullptr))
    return bad("cu_seqlens_q/cu_seqlens_k: give both or neither");
  // The LSE's offsets fit 64 bits: out's distinct elements (checked above) bound its row count, and an
  // LSE row (4 bytes) is smaller than an output row (head_dim 16-bit values).

  attention::attention_problem pr;
  pr.type = type;
  pr.heads_q = static_cast<int>(hq);
  pr.heads_kv = static_cast<int>(hkv);
  pr.head_dim = static_cast<int>(d);
  pr.causal = a.causal;
  const windows win = effective_windows(a.causal, a.window_left, a.window_right, a.q.shape[1], a.k.shape[1]);
  pr.window_left = win.left;
  pr.window_right = win.right;
  // ws_wgmma_tma loads Q, K and V with the tensor copy engine, whose maps take strides that are non-zero
  // multiples of 16 bytes below 2^40 (cuTensorMapEncodeTiled): other views (a broadcast dimension of
  // stride 0, say) run the tiled strategy.
  pr.ws_compiled = attention::ws_compiled(s.code_target()) && tma_views(a.q) && tma_views(a.k) && tma_views(a.v);
  attention::fwd_params p;
  if (varlen) {
    for (const auto& [name, t] : {std::pair{"q", &a.q}, std::pair{"k", &a.k}, std::pair{"v", &a.v}, std::pair{"out", &a.out}})
      if (t->shape[0] != 1)
        return bad(std::string("varlen: ") + name + ": batch " + std::to_string(t->shape[0]) +
                   " must be 1: packed tokens [1, total_tokens, heads, head_dim] or rank 3 [total_tokens, heads, head_dim]");
    if (a.varlen_batch < 1 || a.varlen_batch > 65535) return bad("varlen_batch: " + std::to_string(a.varlen_batch) + " must be in [1, 65535]");
    if (a.max_seqlen_q < 0 || a.max_seqlen_k < 0) return bad("max_seqlen_q/max_seqlen_k: must be >= 0");
    if (a.max_seqlen_q > a.q.shape[1] || a.max_seqlen_k > a.k.shape[1])
      return bad("max_seqlen_q/max_seqlen_k: larger than the packed token counts");
    if (s.backend() == backend_kind::host) {
      PK_TRY(check_cu_seqlens("cu_seqlens_q", a.cu_seqlens_q, a.varlen_batch, a.q.shape[1], a.max_seqlen_q, "max_seqlen_q"));
      PK_TRY(check_cu_seqlens("cu_seqlens_k", a.cu_seqlens_k, a.varlen_batch, a.k.shape[1], a.max_seqlen_k, "max_seqlen_k"));
    }
    pr.batch = a.varlen_batch;
    pr.seqlen_q = a.max_seqlen_q;
    pr.seqlen_k = a.max_seqlen_k;
  } else {
    if (a.k.shape[0] != a.q.shape[0] || a.v.shape[0] != a.q.shape[0])
      return bad("k/v: batch " + std::to_string(a.k.shape[0]) + " differs from q's " + std::to_string(a.q.shape[0]));
    if (a.q.shape[0] > 65535) return bad("q: batch " + std::to_string(a.q.shape[0]) + " > 65535 (grid limit)");
    pr.batch = static_cast<int>(a.q.shape[0]);
    pr.seqlen_q = a.q.shape[1];
    pr.seqlen_k = a.k.shape[1];
  }
  // After the other checks (a call with several faults names those first), before the early return for
  // problems with nothing to compute: an overlapping non-empty output is refused either way.
  {
    using attention::views::range_of;
    const std::int64_t lse_bytes = a.q.shape[0] * hq * a.q.shape[1] * static_cast<std::int64_t>(sizeof(float));
    const std::int64_t cu_bytes = varlen ? (std::int64_t{a.varlen_batch} + 1) * 4 : 0;
    PK_TRY(attention::views::check_disjoint(
        "attention_forward", {{"out", range_of(a.out), &a.out}, {"lse", range_of(a.lse, lse_bytes)}},
        {{"q", range_of(a.q), &a.q}, {"k", range_of(a.k), &a.k}, {"v", range_of(a.v), &a.v},
         {"cu_seqlens_q", range_of(a.cu_seqlens_q, cu_bytes)}, {"cu_seqlens_k", range_of(a.cu_seqlens_k, cu_bytes)}}));
  }
  if (pr.batch == 0 || pr.seqlen_q == 0 || hq == 0) return {};  // nothing to compute
  // One plan per device and exact problem (archdb::cached_plan), with the tuning cache's winner for the
  // problem's bucket when `pk tune attention` or PK_TUNING=tune stored one; a forced policy by the one rule
  // (select_policy).
  const std::int64_t key[] = {static_cast<std::int64_t>(type), pr.batch, pr.heads_q, pr.heads_kv, pr.head_dim,
                              pr.seqlen_q, pr.seqlen_k, pr.causal, pr.window_left, pr.window_right, pr.ws_compiled};
  const std::string bucket = attention::tuning_bucket(pr);
  const std::shared_ptr<const archdb::plan> pl = archdb::cached_plan(
      s.device(), "attention", key, bucket, [&] { return attention::plan(s.device(), pr).choice; });
  int index = 0;
  PK_TRY(archdb::select_policy(*pl, a.policy, "attention_forward", index));
  attention::fwd_call c;
  c.grid_y = static_cast<unsigned>(pr.heads_q);
  c.grid_z = static_cast<unsigned>(pr.batch);
  c.batch_q = a.q.shape[0];
  c.q_tokens = a.q.shape[1];
  c.k_tokens = a.k.shape[1];
  c.heads_q = hq;
  c.heads_kv = hkv;
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.o = const_cast<void*>(a.out.data);
  p.lse = a.lse;
  p.q_batch = a.q.stride[0], p.q_row = a.q.stride[1], p.q_head = a.q.stride[2];
  p.k_batch = a.k.stride[0], p.k_row = a.k.stride[1], p.k_head = a.k.stride[2];
  p.v_batch = a.v.stride[0], p.v_row = a.v.stride[1], p.v_head = a.v.stride[2];
  p.o_batch = a.out.stride[0], p.o_row = a.out.stride[1], p.o_head = a.out.stride[2];
  // No key of an empty K/V is ever read, so its data may be null and its strides are unchecked (check_view
  // bounds the offsets of non-empty views only): zero strides keep every offset the kernel forms from it at
  // data + 0, which is defined (an offset from null is undefined in C++, and a stride times a batch index can
  // overflow int64; UBSan found both, through fuzz_attention and EmptyKeysWithStridesWhoseOffsetsOverflow).
  // A branch in the kernel instead cost registers (gfx1100 d256 spilled).
  if (p.k == nullptr || attention::views::is_empty(a.k)) p.k_batch = p.k_row = p.k_head = 0;
  if (p.v == nullptr || attention::views::is_empty(a.v)) p.v_batch = p.v_row = p.v_head = 0;
  p.cu_q = a.cu_seqlens_q;
  p.cu_k = a.cu_seqlens_k;
  p.seqlen_q = static_cast<int>(pr.seqlen_q);
  p.seqlen_k = static_cast<int>(pr.seqlen_k);
  p.group = static_cast<int>(hq / hkv);
  p.window_left = pr.window_left;
  p.window_right = pr.window_right;
  p.scale_log2 = scale_log2;
  // Block order of ws_wgmma_tma (attention_schedule.hpp).
  p.l2_group = attention::l2_group_of(s.device().l2_bytes, pr.seqlen_k, pr.head_dim, size_of(type), p.group,
                                      std::int64_t{pr.heads_q} * pr.batch);
  // One LSE layout: [batch, heads_q, seqlen_q] of q's rank-4 view. Varlen q is packed with batch 1, so
  // it is [heads_q, total_q] (total_q: q's token count), indexed by the token's packed position.
  p.lse_head = a.q.shape[1];
  p.lse_batch = varlen ? 0 : hq * a.q.shape[1];
  c.s = &s;
  c.p = p;

  const auto& family = attention::candidates(attention::family_of(s.device().vendor_id), pr.ws_compiled, pr.head_dim);
  const auto launch = [&](int i) {
    const attention::policy& pol = family[static_cast<std::size_t>(i)];
    c.policy = i;
    c.grid_x = static_cast<unsigned>((pr.seqlen_q + pol.block_m - 1) / pol.block_m);
    return instances::attn_fwd::dispatch(s.code_target(), type, static_cast<int>(d), c);
  };
  if (a.policy == nullptr || *a.policy == '\0') PK_TRY(detail::tune_on_miss(s, *pl, "attention", bucket, launch, index));
  return launch(index);
}

}  // namespace pk
