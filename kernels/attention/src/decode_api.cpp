// Attention over a KV cache and the cache append: validation, planning (policy and split count) and
// dispatch to the per-target instances. Compiled once.
#include <pk/attention/attention.hpp>
#include <pk/attention/attn_decode_instances.hpp>
#include <pk/attention/decode.hpp>
#include <pk/attention/decode_policy.hpp>
#include <pk/attention/detail/attention_mask.hpp>
#include <pk/attention/detail/decode_call.hpp>
#include <pk/archdb/family_plan.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <vector>

#include "attention_views.hpp"

namespace pk {

namespace attention {

namespace {

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// One block streams its keys a tile at a time. Measured on the H200 with one block per sequence and KV head
// (bench/results/decode-h200-2026-11-30.md, split sweep, s = 1, page 16, head_dim 128, bf16): a 16 KB tile (32
// keys, two stages) every 1.26 us, a 32 KB tile (64 keys, three stages) every 1.36 us: a fixed 1.16 us
// (latency, barriers, the tile's products) plus 160 KB per us. (The third stage measured only 0-7% faster
// than two at 64 keys, so the period does not depend on the stages; the occupancy they allow does.)
constexpr double tile_fixed_us = 1.16;
constexpr double block_stream_bytes_per_us = 160e3;
// The split model below is fitted to a graph-timed split sweep on the H200 (bench/results/decode-h200-2026-12-04b.md:
// 15 shapes, bf16, head_dim 128, page 16, 1 to 512 splits; the shapes whose K/V fit in L2 left out): rms error
// 6% over 190 timings, and its choice the best measured count on each of the 13 DRAM-bound shapes:
// - a wave's bytes at 0.85 of the database's peak bandwidth (pk's best measured, 4.1 TB/s) and its blocks' tile
//   periods combine as a 3-norm: near the crossover, loaded memory stretches every block's period (a max would
//   stop at one block per SM; a 2-norm picked 228 splits for batch 1, 8/1 heads, 128k, 6.6% slower than 256);
constexpr double achievable_bw_share = 0.85;
// - the first wave waits 7 us more: a block's sequence length, then its table entries, then its first K/V tile
//   (three dependent loads) before it streams, and the end-of-block merge of its warps;
constexpr double first_wave_us = 7.0;
// - each later wave 2 us: its blocks' dependent loads, partly hidden by the blocks still streaming;
constexpr double later_wave_us = 2.0;
// - the split combine (a dependent second kernel): 2 us with a stream-ordered launch, 1.3 where it launches to
//   overlap the split kernel's end (archdb has_grid_dependency; measured 0.6-1.1 us faster on every split row),
//   plus 0.1 us per split that one group of a row's threads walks (decode_combine_groups), plus the partials'
//   bytes. (A build whose code predates sm_90 launches it stream-ordered on any device: 0.7 us unmodelled.)
constexpr double combine_launch_us = 2.0;
constexpr double combine_overlapped_launch_us = 1.3;
constexpr double combine_us_per_walked_split = 0.1;
// FP8 caches: the codes are turned into fp16 in the operand loads, which adds little to a block's tile period.
// Measured on the H200 (bench/results/decode-h200-2026-12-02.md, split sweep, 32/8 heads, batch 1, 128k, one
// block per SM): 1.30 us per 64-key FP8 tile, where the model without conversion gives 1.26 us (bf16: 1.39
// measured, 1.37 modelled): 0.04 us for 16384 codes. (The conversion through shared memory it replaced cost
// 1.47 us per tile, 0.09 ns per code.)
constexpr double fp8_convert_ns_per_code = 0.0025;

struct split_choice {
  int splits = 1;
  double us = 0;
  std::int64_t blocks = 0, waves = 0;
  double tile_us = 0;
};

// The modelled time of `pol` at each split count; the fastest (the smallest count within 1% of it: fewer
// partials to merge for the same time).
split_choice best_splits(const archdb::device_desc& d, const decode_problem& pr, const decode_policy& pol,
                         const archdb::occupancy_result& occ) {
  const int group = pr.heads_q / std::max(1, pr.heads_kv);
  const std::int64_t rows = std::int64_t{pr.seqlen_q} * group;
  const std::int64_t m_blocks = ceil_div(rows, pol.block_m);
  const std::int64_t base_blocks = m_blocks * pr.heads_kv * pr.batch;
  const std::int64_t tiles = std::max<std::int64_t>(1, ceil_div(pr.context, pol.block_n));
  const int kvb = size_of(pr.kv_type);
  const double tile_bytes = 2.0 * pol.block_n * pr.head_dim * kvb;
  const double bw = d.mem_bw_gbps * 1e3 * achievable_bw_share;  // bytes per us
  const std::int64_t units = std::max(1, d.occupancy_units());
  const std::int64_t slots = std::int64_t{std::max(1, occ.blocks_per_sm)} * units;
  // One block alone: a tile per period.
  const double period = tile_fixed_us + tile_bytes / block_stream_bytes_per_us;
  const double conv_us = kvb == 1 ? 2.0 * pol.block_n * pr.head_dim * fp8_convert_ns_per_code * 1e-3 : 0.0;
  const double rows_total = double(pr.batch) * pr.heads_q * pr.seqlen_q;
  std::vector<split_choice> all;
  const int max_s = static_cast<int>(std::min<std::int64_t>(pr.num_splits > 0 ? pr.num_splits : max_decode_splits, tiles));
  for (int s = pr.num_splits > 0 ? std::min(pr.num_splits, max_s) : 1; s <= max_s; ++s) {
    split_choice c;
    c.splits = s;
    c.blocks = base_blocks * s;
    c.waves = archdb::waves(d, c.blocks, occ);
    const std::int64_t per_block_tiles = ceil_div(tiles, s);
    const double block_bytes = double(per_block_tiles) * tile_bytes;
    // Wave by wave: the wave's bytes at the achievable bandwidth, and its blocks each streaming (and, for FP8,
    // converting) a tile at a time (a partial last wave is latency-bound); the two bounds combine as a 3-norm.
    // The bandwidth is shared by the SMs, not by the blocks: where a wave's blocks do not spread evenly, the SMs
    // holding one block more than the others stream that much longer, and the wave ends with them. (Measured:
    // counts between powers of two, which leave some SMs a block more, ran slower than both neighbouring powers
    // on the 8/1-head rows: H200 batch 1 x 128k bf16, 228 splits 30.7 us against 28.8 at 256,
    // decode-h200-2026-12-04b.md; H100 FP8 293 splits 34.2 us against 31.3 at 256 and 34.5 at 512,
    // decode-h100-2026-12-07.md. With this term, graph-timed on the H100, every planned count is the best measured,
    // where the old plan ran 1.03-1.11x the best on three of six rows: decode-h100-2026-12-07b.md.)
    c.tile_us = period + conv_us;
    const auto wave_us = [&](std::int64_t in_wave) {
      const std::int64_t busy_units = std::min(in_wave, units), per_unit = ceil_div(in_wave, units);
      const double stream = double(per_unit * busy_units) * block_bytes / bw, periods = double(per_block_tiles) * c.tile_us;
      return std::cbrt(stream * stream * stream + periods * periods * periods);
    };
    // Full waves, then the partial one (closed form: the planner runs on every call).
    const std::int64_t full = c.blocks / slots, rest = c.blocks % slots;
    c.us = (rest > 0 ? wave_us(rest) : 0.0) + (full > 0 ? double(full) * wave_us(slots) : 0.0);
    c.us += first_wave_us + double(c.waves - 1) * later_wave_us;
    if (s > 1)
      c.us += (archdb::traits(d.isa).has_grid_dependency ? combine_overlapped_launch_us : combine_launch_us) +
              combine_us_per_walked_split * s / decode_combine_groups(s, pr.head_dim) + rows_total * pr.head_dim * 4.0 * (s + 1) / bw;
    all.push_back(c);
    if (pr.num_splits > 0) break;
  }
  split_choice best = all.front();
  for (const split_choice& c : all)
    if (c.us < best.us) best = c;
  for (const split_choice& c : all)
    if (c.us <= best.us * 1.01) return c;
  return best;
}

// Registers per thread: the O accumulators (block_m x head_dim over the warp), S, the softmax statistics and
// an allowance, as the forward planner estimates them; the CI resource check compares with the compiler.
int decode_regs(const archdb::device_desc& d, const decode_policy& p, int head_dim) {
  const int lanes = std::max(1, d.warp_size);
  const int warps = std::max(1, p.block_threads / lanes);
  const int acc = p.block_m * head_dim / lanes + p.block_m * (p.block_n / warps) / lanes;
  constexpr int allowance = 48;
  const int cap = d.vendor_id == archdb::vendor::nvidia ? d.max_regs_per_thread : d.max_arch_vgprs;
  return std::min(acc + allowance, cap > 0 ? cap : 255);
}

}  // namespace

decode_plan plan_decode(const archdb::device_desc& device, const decode_problem& pr) {
  decode_plan out;
  const family fam = family_of(device.vendor_id);
  const std::span<const decode_policy> pols = decode_candidates(fam, pr.head_dim);
  const int eb = size_of(pr.type);
  const bool fp8 = size_of(pr.kv_type) == 1;
  std::vector<archdb::candidate> cands;
  for (const decode_policy& p : pols) {
    archdb::candidate c;
    c.name = decode_name_of(p, to_string(pr.type), pr.head_dim);
    c.res.threads_per_block = p.block_threads;
    c.res.dynamic_smem = decode_smem_bytes(p, pr.head_dim, eb, fp8, stages_p(fam));
    c.res.regs_per_thread = decode_regs(device, p, pr.head_dim);
    c.declares_spills = decode_declares_spills(device.isa, p, pr.head_dim);
    cands.push_back(c);
  }
  const int group = pr.heads_q / std::max(1, pr.heads_kv);
  out.rows = pr.seqlen_q * group;
  out.choice = archdb::choose(device, cands, [&](const archdb::candidate& c, const archdb::occupancy_result& occ) {
    const decode_policy& p = pols[static_cast<std::size_t>(&c - cands.data())];
    const split_choice s = best_splits(device, pr, p, occ);
    const std::int64_t m_blocks = ceil_div(out.rows, p.block_m);
    std::ostringstream why;
    why.precision(3);
    why << out.rows << " packed rows (seqlen_q " << pr.seqlen_q << " x " << group << " query heads per KV head) in "
        << m_blocks << " block" << (m_blocks > 1 ? "s" : "") << " of " << p.block_m << " ("
        << int(100.0 * double(out.rows) / double(m_blocks * p.block_m)) << "% of the MMA rows used); " << s.splits
        << " split" << (s.splits > 1 ? "s" : "") << " of " << ceil_div(std::max<std::int64_t>(1, pr.context), p.block_n * std::int64_t{s.splits}) * p.block_n
        << " keys -> " << s.blocks << " blocks in " << s.waves << " wave" << (s.waves > 1 ? "s" : "") << " ("
        << occ.blocks_per_sm << "/SM); per tile " << s.tile_us << " us (one " << p.block_n << "-key K/V tile in flight per block: "
        << tile_fixed_us << " us + its bytes at " << block_stream_bytes_per_us / 1e3 << " GB/s, or the achievable bandwidth shared by the resident blocks"
        << (fp8 ? ", or the FP8 conversion" : "") << ")" << (s.splits > 1 ? " + the split combine" : "");
    return archdb::cost_estimate{s.us, why.str(), s.splits};
  });
  if (out.choice.index >= 0) {
    const decode_policy& p = pols[static_cast<std::size_t>(out.choice.index)];
    out.splits = out.choice.all[static_cast<std::size_t>(out.choice.index)].param;
    out.m_blocks = static_cast<int>(ceil_div(out.rows, p.block_m));
  }
  return out;
}

}  // namespace attention

namespace {

constexpr const char* fn = "attention_decode";
status bad(const std::string& m) { return invalid_argument(std::string(fn) + ": " + m); }
status bad_append(const std::string& m) { return invalid_argument("kv_cache_append: " + m); }

bool is_pow2(std::int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
int log2_of(std::int64_t x) {
  int s = 0;
  while ((std::int64_t{1} << s) < x) ++s;
  return s;
}

// Positions are int in the kernels, with a key tile of slack.
constexpr std::int64_t max_positions = std::numeric_limits<int>::max() - 256;

// The cache's layout as the kernels index it, checked once for decode and append.
struct cache_layout {
  dtype kv_type = dtype::bf16;
  attention::kv_format format = attention::kv_format::same;
  int batch = 0, heads_kv = 0;
  bool paged = false;
  std::int64_t page_size = 0, pages_per_seq = 0, num_pages = 0, capacity = 0, table_row = 0;
};

status check_cache(std::string_view f, const kv_cache& c, dtype q_type, int head_dim, std::int64_t batch, cache_layout& out) {
  using attention::views::check_view;
  const auto err = [&](const std::string& m) { return invalid_argument(std::string(f) + ": " + m); };
  const dtype kt = c.k.type;
  if (kt != q_type && kt != dtype::f8e4m3fn && kt != dtype::f8e4m3fnuz)
    return unsupported(std::string(f) + ": cache.k: dtype " + to_string(kt) + " is not supported (the queries' " +
                       to_string(q_type) + ", f8e4m3fn or f8e4m3fnuz)");
  if (c.v.type != kt) return err(std::string("cache.v: dtype ") + to_string(c.v.type) + " differs from cache.k's " + to_string(kt));
  PK_TRY(check_view(f, "cache.k", c.k, kt, head_dim, max_positions));
  PK_TRY(check_view(f, "cache.v", c.v, kt, head_dim, max_positions));
  for (int i = 0; i < 3; ++i)
    if (c.v.shape[i] != c.k.shape[i]) return err("cache.v: shape must equal cache.k's");
  out.kv_type = kt;
  out.format = kt == dtype::f8e4m3fn ? attention::kv_format::e4m3fn
                                     : (kt == dtype::f8e4m3fnuz ? attention::kv_format::e4m3fnuz : attention::kv_format::same);
  if (out.format == attention::kv_format::same && (c.k_scale != nullptr || c.v_scale != nullptr))
    return err("cache.k_scale/v_scale: only FP8 caches take scales (must be null for " + std::string(to_string(kt)) + ")");
  for (const float* sc : {c.k_scale, c.v_scale})
    if (reinterpret_cast<std::uintptr_t>(sc) % alignof(float) != 0) return err("cache.k_scale/v_scale: must be 4-byte aligned");
  if (c.seqlens == nullptr) return err("cache.seqlens: must not be null (device int32 [batch])");
  if (reinterpret_cast<std::uintptr_t>(c.seqlens) % alignof(std::int32_t) != 0) return err("cache.seqlens: must be 4-byte aligned");
  out.heads_kv = static_cast<int>(std::min<std::int64_t>(c.k.shape[2], std::numeric_limits<int>::max()));
  out.paged = c.block_table.data != nullptr;
  if (out.paged) {
    const tensor_view& t = c.block_table;
    if (t.type != dtype::i32) return err(std::string("cache.block_table: dtype ") + to_string(t.type) + " must be i32");
    if (t.rank != 2) return err("cache.block_table: rank " + std::to_string(t.rank) + " must be 2 ([batch, max_pages_per_seq])");
    if (t.shape[0] != batch)
      return err("cache.block_table: shape[0] = " + std::to_string(t.shape[0]) + " differs from the batch " + std::to_string(batch));
    if (t.shape[1] < 1) return err("cache.block_table: shape[1] (max_pages_per_seq) must be >= 1");
    // Read only: rows may overlap or repeat (stride[0] 0: one table for every sequence).
    if (t.stride[1] != 1 || t.stride[0] < 0)
      return err("cache.block_table: rows must be contiguous (stride[1] == 1) with a non-negative row stride");
    if (reinterpret_cast<std::uintptr_t>(t.data) % alignof(std::int32_t) != 0) return err("cache.block_table: must be 4-byte aligned");
    if (t.shape[0] > 0) {
      const std::int64_t last = attention::views::mul_add(t.shape[0] - 1, t.stride[0], t.shape[1] - 1);
      if (last < 0 || last > attention::views::int64_max / 4 - 1)
        return err("cache.block_table: the offset of the last element ((shape[0] - 1) * stride[0] + shape[1] - 1) in "
                   "bytes exceeds 2^63 - 1");
    }
    out.page_size = c.k.shape[1];
    if (!is_pow2(out.page_size) || out.page_size > max_page_size)
      return unsupported(std::string(f) + ": cache.k: page_size " + std::to_string(out.page_size) +
                         " is not supported (a power of two from 1 to " + std::to_string(max_page_size) + ")");
    out.pages_per_seq = t.shape[1];
    out.num_pages = c.k.shape[0];
    out.table_row = t.shape[0] > 1 ? t.stride[0] : t.shape[1];
    if (out.pages_per_seq > max_positions / out.page_size)
      return unsupported(std::string(f) + ": cache.block_table: max_pages_per_seq x page_size exceeds " +
                         std::to_string(max_positions) + " positions (32-bit positions)");
    out.capacity = out.pages_per_seq * out.page_size;
  } else {
    if (c.k.shape[0] != batch)
      return err("cache.k: contiguous cache (no block_table): shape[0] = " + std::to_string(c.k.shape[0]) +
                 " differs from the batch " + std::to_string(batch));
    out.capacity = c.k.shape[1];
    out.num_pages = batch;
  }
  return {};
}

// The cache as the kernels index it (decode and append alike).
attention::kv_cache_params cache_params_of(const kv_cache& c, const cache_layout& l) {
  attention::kv_cache_params p;
  p.k = const_cast<void*>(c.k.data);
  p.v = const_cast<void*>(c.v.data);
  p.k_page = c.k.stride[0], p.k_row = c.k.stride[1], p.k_head = c.k.stride[2];
  p.v_page = c.v.stride[0], p.v_row = c.v.stride[1], p.v_head = c.v.stride[2];
  p.block_table = static_cast<const std::int32_t*>(c.block_table.data);
  p.table_row = l.table_row;
  p.pages_per_seq = static_cast<int>(l.pages_per_seq);
  p.page_shift = l.paged ? log2_of(l.page_size) : 0;
  p.slot_mask = l.paged ? l.page_size - 1 : -1;
  p.num_pages = l.num_pages;
  p.capacity = l.capacity;
  p.seqlens = c.seqlens;
  p.k_scale = c.k_scale;
  p.v_scale = c.v_scale;
  p.format = l.format;
  return p;
}

// The emulator's device memory is host memory: the lengths and the pages they reach are checked there.
status check_slots_on_host(std::string_view f, const kv_cache& c, const cache_layout& l, int batch, int extra_tokens) {
  for (const auto& [name, sc] : {std::pair{"cache.k_scale", c.k_scale}, std::pair{"cache.v_scale", c.v_scale}})
    for (int h = 0; sc != nullptr && h < l.heads_kv; ++h)
      if (!(sc[h] > 0.0f) || !std::isfinite(sc[h]))
        return invalid_argument(std::string(f) + ": " + name + "[" + std::to_string(h) + "] = " + std::to_string(sc[h]) +
                                " must be finite and positive");
  for (int b = 0; b < batch; ++b) {
    const std::int64_t len = c.seqlens[b];
    const std::int64_t end = len + extra_tokens;
    if (len < 0 || end > l.capacity)
      return invalid_argument(std::string(f) + ": cache.seqlens[" + std::to_string(b) + "] = " + std::to_string(len) +
                              (extra_tokens > 0 ? " plus " + std::to_string(extra_tokens) + " new tokens" : std::string()) +
                              " is outside [0, capacity " + std::to_string(l.capacity) + "]");
    if (!l.paged) continue;
    const auto* table = static_cast<const std::int32_t*>(c.block_table.data);
    const std::int64_t first_page = extra_tokens > 0 ? len / l.page_size : 0;
    for (std::int64_t pg = first_page; pg < (end + l.page_size - 1) / l.page_size; ++pg) {
      const std::int32_t page = table[b * l.table_row + pg];
      if (page < 0 || page >= l.num_pages)
        return invalid_argument(std::string(f) + ": cache.block_table[" + std::to_string(b) + "][" + std::to_string(pg) +
                                "] = " + std::to_string(page) + " is outside [0, num_pages " + std::to_string(l.num_pages) +
                                ") for a position below the sequence's length");
    }
  }
  return {};
}

}  // namespace

status attention_decode(const stream& s, const decode_args& a) {
  using attention::views::check_distinct;
  using attention::views::check_view;
  if (!s.valid()) return bad("stream: not initialized (use pk::default_stream)");
  if (a.q.rank != 4) return bad("q: rank " + std::to_string(a.q.rank) + " must be 4 ([batch, seqlen_q, heads_q, head_dim])");
  const dtype type = a.q.type;
  if (std::find(instances::attn_decode::type_values.begin(), instances::attn_decode::type_values.end(), type) ==
      instances::attn_decode::type_values.end())
    return unsupported(std::string(fn) + ": q: dtype " + to_string(type) + " is not supported (bf16, f16)");
  const std::int64_t d = a.q.shape[3];
  if (d < 0 || d > 1024 || !attention::supported_decode_head_dim(static_cast<int>(d)))
    return unsupported(std::string(fn) + ": q: head_dim " + std::to_string(d) + " is not supported (64, 128, 256)");
  const int hd = static_cast<int>(d);
  const std::int64_t batch = a.q.shape[0], sq = a.q.shape[1], hq = a.q.shape[2];
  if (sq < 0 || sq > max_decode_seqlen_q)
    return unsupported(std::string(fn) + ": q: seqlen_q " + std::to_string(sq) + " is not supported (1.." +
                       std::to_string(max_decode_seqlen_q) + "; longer query chunks: attention_forward)");
  PK_TRY(check_view(fn, "q", a.q, type, hd, max_decode_seqlen_q));
  if (a.out.rank != 4) return bad("out: rank " + std::to_string(a.out.rank) + " must be 4");
  if (a.out.type != type) return bad(std::string("out: dtype ") + to_string(a.out.type) + " differs from q's " + to_string(type));
  PK_TRY(check_view(fn, "out", a.out, type, hd, max_decode_seqlen_q));
  for (int i = 0; i < 3; ++i)
    if (a.out.shape[i] != a.q.shape[i]) return bad("out: shape must equal q's [batch, seqlen_q, heads_q, head_dim]");
  PK_TRY(check_distinct(fn, "out", a.out));
  if (batch > 65535) return bad("q: batch " + std::to_string(batch) + " > 65535 (grid limit)");
  cache_layout l;
  PK_TRY(check_cache(fn, a.cache, type, hd, batch, l));
  const std::int64_t hkv = a.cache.k.shape[2];
  if (hkv == 0 || hq % hkv != 0) return bad("cache.k: heads_kv " + std::to_string(hkv) + " must divide heads_q " + std::to_string(hq));
  if (hq > 65535) return bad("q: heads " + std::to_string(hq) + " > 65535");
  if (a.num_splits < 0 || a.num_splits > max_decode_splits)
    return bad("num_splits: " + std::to_string(a.num_splits) + " must be in [0, " + std::to_string(max_decode_splits) + "] (0: planned)");
  if (a.max_seqlen_k < 0 || a.max_seqlen_k > l.capacity)
    return bad("max_seqlen_k: " + std::to_string(a.max_seqlen_k) + " must be in [0, capacity " + std::to_string(l.capacity) + "] (0: the capacity)");
  const float scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0f / std::sqrt(static_cast<float>(d));
  const float scale_log2 = scale * 1.44269504088896340736f;  // log2(e)
  if (a.softmax_scale < 0 || !std::isfinite(a.softmax_scale) || !std::isfinite(scale_log2))
    return bad("softmax_scale: " + std::to_string(a.softmax_scale) + " must be positive and finite, also times log2(e) (0: 1/sqrt(head_dim))");
  if (a.window_left < -1 || a.window_right < -1) return bad("window_left/window_right: must be >= -1 (-1: unbounded)");
  if (reinterpret_cast<std::uintptr_t>(a.lse) % alignof(float) != 0) return bad("lse: must be 4-byte aligned");
  if (reinterpret_cast<std::uintptr_t>(a.error) % alignof(std::int32_t) != 0) return bad("error: must be 4-byte aligned");
  {
    using attention::views::range_of;
    const std::int64_t lse_bytes = batch * hq * sq * static_cast<std::int64_t>(sizeof(float));
    const std::int64_t scale_bytes = std::int64_t{l.heads_kv} * static_cast<std::int64_t>(sizeof(float));
    PK_TRY(attention::views::check_disjoint(
        fn, {{"out", range_of(a.out), &a.out}, {"lse", range_of(a.lse, lse_bytes)}, {"error", range_of(a.error, sizeof(std::int32_t))}},
        {{"q", range_of(a.q), &a.q}, {"cache.k", range_of(a.cache.k), &a.cache.k}, {"cache.v", range_of(a.cache.v), &a.cache.v},
         {"cache.block_table", range_of(a.cache.block_table)}, {"cache.seqlens", range_of(a.cache.seqlens, batch * 4)},
         {"cache.k_scale", range_of(a.cache.k_scale, scale_bytes)}, {"cache.v_scale", range_of(a.cache.v_scale, scale_bytes)}}));
  }
  if (batch == 0 || sq == 0 || hq == 0) return {};  // nothing to compute
  if (s.backend() == backend_kind::host) PK_TRY(check_slots_on_host(fn, a.cache, l, static_cast<int>(batch), 0));

  attention::decode_problem pr;
  pr.type = type;
  pr.kv_type = l.kv_type;
  pr.batch = static_cast<int>(batch);
  pr.heads_q = static_cast<int>(hq);
  pr.heads_kv = static_cast<int>(hkv);
  pr.head_dim = hd;
  pr.seqlen_q = static_cast<int>(sq);
  pr.context = a.max_seqlen_k > 0 ? a.max_seqlen_k : l.capacity;
  pr.page_size = l.paged ? static_cast<int>(l.page_size) : 0;
  pr.causal = a.causal;
  // A bound that reaches past every key of every row masks nothing: -1 (as attention_forward).
  const int right = a.causal ? 0 : a.window_right;
  pr.window_left = a.window_left >= l.capacity - 1 ? -1 : a.window_left;
  pr.window_right = right >= sq - 1 ? -1 : right;
  pr.num_splits = a.num_splits;
  const std::int64_t key[] = {static_cast<std::int64_t>(type), static_cast<std::int64_t>(l.kv_type), pr.batch, pr.heads_q,
                              pr.heads_kv, pr.head_dim, pr.seqlen_q, pr.context, pr.page_size, pr.causal, pr.window_left,
                              pr.window_right, pr.num_splits};
  const std::shared_ptr<const archdb::plan> pl = archdb::cached_plan(
      s.device(), "attention_decode", key, "decode_d" + std::to_string(hd), [&] { return attention::plan_decode(s.device(), pr).choice; });
  int index = 0;
  PK_TRY(archdb::select_policy(*pl, a.policy, fn, index));
  const attention::family fam = attention::family_of(s.device().vendor_id);
  const attention::decode_policy& pol = attention::decode_candidates(fam, hd)[static_cast<std::size_t>(index)];
  // The split count of the policy that runs (the plan's, a tuned winner's or a forced one's): planned with it
  // and cached with the plan.
  const int splits = pl->all[static_cast<std::size_t>(index)].param;
  if (splits < 1 || splits > max_decode_splits) return {errc::internal, std::string(fn) + ": the plan has no split count"};
  const std::int64_t rows = sq * (hq / hkv);
  const std::int64_t m_blocks = (rows + pol.block_m - 1) / pol.block_m;
  if (m_blocks * hkv > 65535) return bad("q: seqlen_q x heads_q = " + std::to_string(sq * hq) + " needs more than 65535 blocks per sequence");

  attention::decode_call c;
  c.s = &s;
  c.policy = index;
  c.grid_x = static_cast<unsigned>(splits);
  c.grid_y = static_cast<unsigned>(m_blocks * hkv);
  c.grid_z = static_cast<unsigned>(batch);
  c.batch = static_cast<int>(batch);
  attention::decode_params& p = c.p;
  p.q = a.q.data;
  p.o = const_cast<void*>(a.out.data);
  p.lse = a.lse;
  p.q_batch = a.q.stride[0], p.q_row = a.q.stride[1], p.q_head = a.q.stride[2];
  p.o_batch = a.out.stride[0], p.o_row = a.out.stride[1], p.o_head = a.out.stride[2];
  p.cache = cache_params_of(a.cache, l);
  p.heads_q = static_cast<int>(hq);
  p.heads_kv = static_cast<int>(hkv);
  p.group = static_cast<int>(hq / hkv);
  p.seqlen_q = static_cast<int>(sq);
  p.rows = static_cast<int>(rows);
  p.splits = splits;
  p.window_left = pr.window_left;
  p.window_right = pr.window_right;
  p.scale_log2 = scale_log2;
  p.error = a.error;
  if (splits > 1) {
    const std::size_t n_rows = static_cast<std::size_t>(splits) * static_cast<std::size_t>(batch * hq * sq);
    const std::size_t o_bytes = (n_rows * static_cast<std::size_t>(hd) * sizeof(float) + 255) / 256 * 256;
    void* scratch = nullptr;
    PK_TRY(detail::stream_scratch(s, o_bytes + n_rows * sizeof(float), &scratch));
    p.o_part = static_cast<float*>(scratch);
    p.lse_part = reinterpret_cast<float*>(static_cast<char*>(scratch) + o_bytes);
  }
  return instances::attn_decode::dispatch(s.code_target(), type, hd, c);
}

status kv_cache_append(const stream& s, const kv_append_args& a) {
  using attention::views::check_view;
  constexpr const char* af = "kv_cache_append";
  if (!s.valid()) return bad_append("stream: not initialized (use pk::default_stream)");
  if (a.k_new.rank != 4) return bad_append("k_new: rank " + std::to_string(a.k_new.rank) + " must be 4 ([batch, new_tokens, heads_kv, head_dim])");
  const dtype type = a.k_new.type;
  if (std::find(instances::attn_decode::type_values.begin(), instances::attn_decode::type_values.end(), type) ==
      instances::attn_decode::type_values.end())
    return unsupported(std::string(af) + ": k_new: dtype " + to_string(type) + " is not supported (bf16, f16)");
  const std::int64_t d = a.k_new.shape[3];
  if (d < 0 || d > 1024 || !attention::supported_decode_head_dim(static_cast<int>(d)))
    return unsupported(std::string(af) + ": k_new: head_dim " + std::to_string(d) + " is not supported (64, 128, 256)");
  const int hd = static_cast<int>(d);
  PK_TRY(check_view(af, "k_new", a.k_new, type, hd, max_positions));
  if (a.v_new.rank != 4) return bad_append("v_new: rank must be 4");
  PK_TRY(check_view(af, "v_new", a.v_new, type, hd, max_positions));
  for (int i = 0; i < 4; ++i)
    if (a.v_new.shape[i] != a.k_new.shape[i]) return bad_append("v_new: shape must equal k_new's");
  const std::int64_t batch = a.k_new.shape[0], nt = a.k_new.shape[1];
  if (batch > 65535) return bad_append("k_new: batch " + std::to_string(batch) + " > 65535 (grid limit)");
  cache_layout l;
  if (a.cache.k.type == dtype::bf16 || a.cache.k.type == dtype::f16) {
    if (a.cache.k.type != type)
      return bad_append(std::string("cache.k: dtype ") + to_string(a.cache.k.type) + " differs from k_new's " + to_string(type));
  }
  PK_TRY(check_cache(af, a.cache, type, hd, batch, l));
  if (a.k_new.shape[2] != a.cache.k.shape[2])
    return bad_append("k_new: heads " + std::to_string(a.k_new.shape[2]) + " differ from the cache's " + std::to_string(a.cache.k.shape[2]));
  if (nt > l.capacity) return bad_append("k_new: new_tokens " + std::to_string(nt) + " exceeds the capacity " + std::to_string(l.capacity));
  if (reinterpret_cast<std::uintptr_t>(a.error) % alignof(std::int32_t) != 0) return bad_append("error: must be 4-byte aligned");
  {
    using attention::views::range_of;
    const std::int64_t scale_bytes = std::int64_t{l.heads_kv} * static_cast<std::int64_t>(sizeof(float));
    PK_TRY(attention::views::check_disjoint(
        af, {{"cache.k", range_of(a.cache.k), &a.cache.k}, {"cache.v", range_of(a.cache.v), &a.cache.v},
             {"error", range_of(a.error, sizeof(std::int32_t))}},
        {{"k_new", range_of(a.k_new), &a.k_new}, {"v_new", range_of(a.v_new), &a.v_new},
         {"cache.block_table", range_of(a.cache.block_table)}, {"cache.seqlens", range_of(a.cache.seqlens, batch * 4)},
         {"cache.k_scale", range_of(a.cache.k_scale, scale_bytes)}, {"cache.v_scale", range_of(a.cache.v_scale, scale_bytes)}}));
  }
  if (batch == 0 || nt == 0 || l.heads_kv == 0) return {};
  if (s.backend() == backend_kind::host) PK_TRY(check_slots_on_host(af, a.cache, l, static_cast<int>(batch), static_cast<int>(nt)));

  attention::decode_call c;
  c.s = &s;
  c.append = true;
  attention::append_params& p = c.ap;
  p.k_new = a.k_new.data;
  p.v_new = a.v_new.data;
  p.kn_batch = a.k_new.stride[0], p.kn_row = a.k_new.stride[1], p.kn_head = a.k_new.stride[2];
  p.vn_batch = a.v_new.stride[0], p.vn_row = a.v_new.stride[1], p.vn_head = a.v_new.stride[2];
  p.cache = cache_params_of(a.cache, l);
  p.batch = static_cast<int>(batch);
  p.new_tokens = static_cast<int>(nt);
  p.heads_kv = l.heads_kv;
  p.error = a.error;
  void* ws = nullptr;
  PK_TRY(detail::stream_workspace(s, sizeof(std::int32_t), &ws));
  p.bad = static_cast<std::int32_t*>(ws);
  return instances::attn_decode::dispatch(s.code_target(), type, hd, c);
}

}  // namespace pk
