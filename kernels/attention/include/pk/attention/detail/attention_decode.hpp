// Attention over a KV cache (decode), device code: split-KV (FlashDecoding) with the query heads of a KV
// group packed into the rows of the MMA atom, written once against the portable MMA atom of the target
// (mma.sync m16n8k16, MFMA 32x32x8, WMMA 16x16x16) and the forward kernel's pieces (attention_agent.hpp:
// qk, pv; attention_softmax.hpp: the online softmax; attention_mask.hpp: the bottom-right aligned masks).
//
// A block owns BM packed rows of one (sequence b, KV head hk) — row t is query t / group of query head
// hk * group + t % group — and one split of the sequence's key tiles. Its warps split every key tile of BN
// keys (BN / warps keys each, all BM rows each) and keep their own online softmax; at the end they merge
// through shared memory (the same log-sum-exp rule as the split combine). K/V rows are gathered through
// the block table (one page lookup per row, 16-byte asynchronous copies) into a ring of Stages tiles. FP8 caches land
// as bytes and stay bytes: the MMA operand loads turn them into fp16 in registers (pk/portable/mma.hpp, mma_fp8;
// exact, with a power-of-two offset folded into the K and V scales), so the products run on fp16. The queries
// are turned into fp16 once per block, each packed row times its own power of two (so that any bf16 row fits
// fp16's range with fp16's precision; the factor comes back on the row's scores), with their columns in the
// order the K operand loads read the codes.
//
// One split: the block writes the output and LSE. Several: normalised fp32 partial outputs and their LSEs,
// merged by attn_decode_combine_kernel.
//
// Shared memory (bytes, decode_smem_bytes; 16-bit rows padded by smem_row_pad_bytes, FP8 rows swizzled):
//   Q [BM][D] | K[Stages][BN][D], V[Stages][BN][D] (T, or FP8 codes) | P [warps][BM][BN/warps] (staged P only)
//   | the row offsets of Stages tiles [Stages][K,V][BN] int64 | FP8: the queries' largest |q| per 16 columns
//   [BM][D/16] and per row the scores' factor [BM], fp32
//   after the loop, from the end of Q: the merge slices O [decode_merge_slices(warps)][BM][D + decode_merge_pad]
//   fp32, lse of each warp [warps][BM], the merged lse [BM], bad-slot flags [warps].
#pragma once
#include <pk/attention/decode_policy.hpp>
#include <pk/attention/detail/attention_agent.hpp>
#include <pk/attention/detail/decode_call.hpp>
#include <pk/portable/async_copy.hpp>
#include <pk/portable/block.hpp>
#include <pk/portable/fp8.hpp>
#include <pk/portable/grid_dependency.hpp>
#include <pk/portable/math.hpp>
#include <pk/portable/memory.hpp>
#include <pk/portable/launch.hpp>
#include <pk/portable/numeric.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

PK_DETAIL_TARGET_BEGIN
namespace impl {
namespace attn_dec {

//! The page of cache position t of sequence b: -1 when the table's entry is outside the cache (contiguous
//! caches: page b).
PK_DEVICE PK_FORCEINLINE std::int64_t page_of(const attention::kv_cache_params& c, int b, std::int64_t t) {
  if (c.block_table == nullptr) return b;
  const std::int64_t page = c.block_table[b * c.table_row + (t >> c.page_shift)];
  return page >= 0 && page < c.num_pages ? page : -1;
}

//! Where row r of the key tile at n0 lives: byte offsets of its K and V rows (KV head hk) from the caches'
//! bases, looked up by the row's own thread a tile ahead (the table read's latency hides behind a tile of
//! work) and shared through shared memory, so the copying threads only add their column. -1: past the
//! sequence (zero-filled); bad: the table's entry is outside the cache (zero-filled too).
struct row_offsets {
  std::int64_t k = -1, v = -1;
  bool bad = false;
};
PK_DEVICE PK_FORCEINLINE row_offsets row_offsets_of(const attention::decode_params& p, int b, int hk, int n0, int r, int sk,
                                                    int kv_bytes) {
  row_offsets o;
  const int t = n0 + r;
  if (t >= sk) return o;
  const std::int64_t page = page_of(p.cache, b, t);
  if (page < 0) {
    o.bad = true;
    return o;
  }
  const std::int64_t slot = t & p.cache.slot_mask;
  o.k = (page * p.cache.k_page + slot * p.cache.k_row + hk * p.cache.k_head) * kv_bytes;
  o.v = (page * p.cache.v_page + slot * p.cache.v_row + hk * p.cache.v_head) * kv_bytes;
  return o;
}

//! Byte offset of the 16-byte chunk at byte cb of row r of a landing tile (padded 16-bit rows, or swizzled codes).
template <class Tile>
PK_DEVICE PK_FORCEINLINE int chunk_offset(int r, int cb) {
  if constexpr (sizeof(typename Tile::element) == 1)
    return Tile::offset(r, cb);
  else
    return r * Tile::ld * static_cast<int>(sizeof(typename Tile::element)) + cb;
}

//! Starts the copies of the tile's rows (offsets from k_off/v_off, one per row) into the K and V landing
//! tiles by all Threads threads.
template <int Threads, class Tile>
PK_DEVICE PK_FORCEINLINE void load_kv(const attention::decode_params& p, const std::int64_t* k_off, const std::int64_t* v_off,
                                      const Tile& k_dst, const Tile& v_dst, int tid) {
  constexpr int chunks = Tile::cols * static_cast<int>(sizeof(typename Tile::element)) / tile_copy_bytes;
  static_assert(Threads % chunks == 0 && Tile::rows % (Threads / chunks) == 0, "decode: whole rows per pass");
  constexpr int step = Threads / chunks;
  const int c = tid % chunks;
  const auto* kb = static_cast<const std::uint8_t*>(p.cache.k) + c * tile_copy_bytes;
  const auto* vb = static_cast<const std::uint8_t*>(p.cache.v) + c * tile_copy_bytes;
  auto* kd = reinterpret_cast<std::uint8_t*>(k_dst.data);
  auto* vd = reinterpret_cast<std::uint8_t*>(v_dst.data);
#pragma unroll
  for (int r = tid / chunks; r < Tile::rows; r += step) {
    const std::int64_t ko = k_off[r], vo = v_off[r];
    const int d = chunk_offset<Tile>(r, c * tile_copy_bytes);
    async_copy_16(kd + d, ko >= 0 ? kb + ko : kb, ko >= 0);
    async_copy_16(vd + d, vo >= 0 ? vb + vo : vb, vo >= 0);
  }
}

//! The power of two e that brings a row whose largest magnitude is m into [2^14, 2^15): the binade below fp16's
//! largest, so that no value of the row rounds past 65504. 0 for rows of zeros, infinities or NaNs (nothing to
//! gain), within [-126, 126] so that 2^e and 2^-e are normal floats.
PK_DEVICE PK_FORCEINLINE int fp16_row_exponent(float m) {
  const int biased = static_cast<int>((::pk::detail::bit_cast<std::uint32_t>(m) >> 23) & 0xffu);
  if (m == 0.0f || biased == 0xff) return 0;
  const int e = 14 - (biased - 127);
  return e < -126 ? -126 : (e > 126 ? 126 : e);
}
PK_DEVICE PK_FORCEINLINE float pow2(int e) { return ::pk::detail::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23); }

//! The queries of an FP8 block, landed as T in the tile q (row pitch ld elements), turned into fp16 in place:
//! row r times 2^e_r (fp16_row_exponent of the row's largest |q|; row_factor[r] = 2^-e_r, which the row's
//! scores take back), stored column p holding column mma_fp8::k_source<Atom>(p) (the K operand's order).
//! chunk_max: [BM][D/16] floats of scratch. Syncs the block before and after.
template <class T, class Atom, int BM, int D, int Threads>
PK_DEVICE PK_FORCEINLINE void prepare_q_fp8(fp16* q, int ld, float* chunk_max, float* row_factor, int tid) {
  // A thread's unit: 16 columns (two 16-byte vectors of 16-bit values; whole K blocks of every atom, so that
  // the column order stays inside it). decode_smem_bytes counts chunk_max at head_dim / 16 per row.
  constexpr int chunk = 16, chunks = D / chunk;
  static_assert(D % chunk == 0 && chunk % Atom::K == 0, "decode: whole chunks of whole K blocks");
  block::sync();
  for (int i = tid; i < BM * chunks; i += Threads) {
    const T* x = reinterpret_cast<const T*>(q + (i / chunks) * ld + (i % chunks) * chunk);
    const vec<T, 8> a = load_vec<8>(x), b = load_vec<8>(x + 8);
    float m = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) m = fmaxf(m, fmaxf(fabsf(static_cast<float>(a[e])), fabsf(static_cast<float>(b[e]))));
    chunk_max[i] = m;
  }
  block::sync();
  for (int i = tid; i < BM * chunks; i += Threads) {
    const int r = i / chunks;
    float m = 0.0f;
    for (int c = 0; c < chunks; ++c) m = fmaxf(m, chunk_max[r * chunks + c]);
    const int e = fp16_row_exponent(m);
    if (i % chunks == 0) row_factor[r] = pow2(-e);
    const float up = pow2(e);
    fp16* x = q + r * ld + (i % chunks) * chunk;
    const vec<T, 8> a = load_vec<8>(reinterpret_cast<const T*>(x)), b = load_vec<8>(reinterpret_cast<const T*>(x) + 8);
    float v[chunk];
#pragma unroll
    for (int e2 = 0; e2 < 8; ++e2) {
      v[e2] = static_cast<float>(a[e2]) * up;
      v[e2 + 8] = static_cast<float>(b[e2]) * up;
    }
    vec<std::uint32_t, 4> lo, hi;
#pragma unroll
    for (int p = 0; p < 8; p += 2) {
      lo[p / 2] = pack2<fp16>(v[mma_fp8::k_source<Atom>(p)], v[mma_fp8::k_source<Atom>(p + 1)]);
      hi[p / 2] = pack2<fp16>(v[mma_fp8::k_source<Atom>(p + 8)], v[mma_fp8::k_source<Atom>(p + 9)]);
    }
    store_vec(reinterpret_cast<std::uint32_t*>(x), lo);
    store_vec(reinterpret_cast<std::uint32_t*>(x) + 4, hi);
  }
  block::sync();
}

//! Masked scores to -inf for packed rows: row r of the block is query (t0 + r) / group; the mask's query
//! index is relative to the block's first query i0, its key index to the tile's first key (the warp's
//! slice starts key0 keys in).
template <class S>
PK_DEVICE PK_FORCEINLINE void apply_mask_packed(S& s, const attention::tile_mask& m, int t0, int group, int i0, int key0,
                                                int lane) {
#pragma unroll
  for (int mt = 0; mt < S::mt; ++mt)
#pragma unroll
    for (int j = 0; j < S::nt; ++j)
#pragma unroll
      for (int e = 0; e < S::vals; ++e)
        if (!m.visible((t0 + S::row(mt, lane, e)) / group - i0, key0 + S::col(j, lane, e))) s.f[mt][j].v[e] = attn::neg_inf;
}

}  // namespace attn_dec

//! F: the cache's format (an instance per format: FP8 caches run their products on fp16).
template <class T, int D, int BM, int BN, int Threads, int Stages, attention::kv_format F>
PK_KERNEL PK_LAUNCH_BOUNDS(Threads) void attn_decode_kernel(attention::decode_params p) {
  static_assert(Stages >= 1 && Stages <= 4, "decode: 1 to 4 K/V stages");
  constexpr bool fp8 = F != attention::kv_format::same;
  using TC = std::conditional_t<fp8, fp16, T>;  // the products' inputs
  using KV = std::conditional_t<!fp8, T, std::conditional_t<F == attention::kv_format::e4m3fnuz, f8e4m3fnuz, f8e4m3fn>>;
  static_assert(sizeof(TC) == sizeof(T), "FP8 blocks turn the landed queries into fp16 in place");
  using atom = arch_mma_atom<TC>;
  constexpr int warps = Threads / warp_size;
  constexpr int WN = BN / warps;  // keys per warp and tile
  static_assert(Threads % warp_size == 0 && BN % warps == 0 && BM % atom::M == 0, "decode policy: whole atoms");
  static_assert(D % atom::K == 0 && D % (atom::N * atom::b_group) == 0 && WN % (atom::N * atom::b_group) == 0 &&
                    WN % atom::K == 0,
                "decode: head dim and each warp's keys must be whole MMA atoms (and whole B load groups)");
  static_assert(attention::smem_pad_bytes == smem_row_pad_bytes, "the planner's tile footprint is smem_tile's");
  using q_tile = smem_tile<TC, BM, D>;
  // K/V landing tiles: padded 16-bit rows, or swizzled FP8 codes (no padding: a fourth block per SM).
  using kv_tile = std::conditional_t<fp8, swizzled_byte_tile<KV, BN, D>, smem_tile<KV, BN, D>>;
  using kv_slice = std::conditional_t<fp8, swizzled_byte_tile<KV, WN, D>, smem_tile<KV, WN, D>>;  // a warp's keys
  static_assert(WN % 8 == 0, "a warp's slice starts where the swizzle's 8-row period does");
  using p_tile = smem_tile<TC, BM, WN>;
  using s_regs = reg_tile<atom, BM / atom::M, WN / atom::N>;
  using o_regs = reg_tile<atom, BM / atom::M, D / atom::N>;
  static_assert(kv_slice::ld == kv_tile::ld, "a warp's slice is rows of the tile");
  static_assert(!is_device_pass || s_regs::feeds_a != attention::stages_p(attention::family_of(archdb::traits(device_arch).vendor_id)),
                "decode_smem_bytes assumes this P path");

  const int split = static_cast<int>(block_idx().x);
  const int hk = static_cast<int>(block_idx().y) % p.heads_kv;
  const int mb = static_cast<int>(block_idx().y) / p.heads_kv;
  const int b = static_cast<int>(block_idx().z);
  const int t0 = mb * BM;
  const int n_rows = p.rows - t0 < BM ? p.rows - t0 : BM;
  const int tid = thread_rank();
  const int lane = lane_id();
  const int w = warp_id();

  // The sequence's keys; a length outside [0, capacity] is a bad slot (no key is read).
  const std::int64_t len = p.cache.seqlens[b];
  const bool bad_len = len < 0 || len > p.cache.capacity;
  const int sk = bad_len ? 0 : static_cast<int>(len);
  const int i0 = t0 / p.group, i_last = (t0 + n_rows - 1) / p.group;
  const attention::key_tiles all = attention::key_tiles_of_block(i0, i_last - i0 + 1, BN, p.seqlen_q, sk, p.window_left, p.window_right);
  const int n_all = static_cast<int>(all.count());
  const int per_split = (n_all + p.splits - 1) / p.splits;
  const int n_first = static_cast<int>(all.first) + split * per_split;
  const int n_end = n_first + per_split < static_cast<int>(all.first) + n_all ? n_first + per_split : static_cast<int>(all.first) + n_all;
  const int n_last = n_end - 1;

  // Shared memory.
  std::uint8_t* smem = dynamic_shared<std::uint8_t>();
  const q_tile sQ{reinterpret_cast<TC*>(smem)};
  std::uint8_t* kv_base = smem + q_tile::elements * sizeof(TC);
  constexpr int tile_bytes = kv_tile::elements * static_cast<int>(sizeof(KV));
  const kv_tile sK{reinterpret_cast<KV*>(kv_base)}, sV{reinterpret_cast<KV*>(kv_base + Stages * tile_bytes)};
  std::uint8_t* after_kv = kv_base + 2 * Stages * tile_bytes;
  const p_tile sP{reinterpret_cast<TC*>(after_kv) + w * p_tile::elements};

  // Q: the block's packed rows (row t: query t / group, head hk * group + t % group); rows past n_rows zero.
  {
    constexpr int chunks = q_tile::chunks;
    for (int i = tid; i < BM * chunks; i += Threads) {
      const int r = i / chunks, c = i % chunks;
      const int t = t0 + r;
      const bool ok = r < n_rows;
      const T* src = static_cast<const T*>(p.q) + b * p.q_batch +
                     (ok ? (t / p.group) * p.q_row + (hk * p.group + t % p.group) * p.q_head : 0) + c * q_tile::per_copy;
      async_copy_16(reinterpret_cast<T*>(sQ.at(r, c * q_tile::per_copy)), src, ok);
    }
    if constexpr (fp8) async_copy_commit();  // a group of its own: the queries are turned into fp16 before the loop
  }
  // A ring of Stages tiles: tile nb (the it-th walked, it = n_last - nb) lands in slot it % Stages, Stages - 1
  // tiles in flight while one is computed. Row offsets of Stages tiles, K then V: [Stages][2][BN] int64 after
  // the P tiles (16-byte aligned), slot as the tile's.
  constexpr int p_bytes = s_regs::feeds_a ? 0 : (warps * p_tile::elements * static_cast<int>(sizeof(TC)) + 15) / 16 * 16;
  auto* offs = reinterpret_cast<std::int64_t*>(after_kv + p_bytes);
  static_assert(BN <= Threads, "decode: one thread per row looks up the tile's rows");
  constexpr int kv_bytes = static_cast<int>(sizeof(KV));
  const auto put = [&](int slot, const attn_dec::row_offsets& o) {
    offs[slot * 2 * BN + tid] = o.k;
    offs[slot * 2 * BN + BN + tid] = o.v;
  };
  const auto issue = [&](int slot) {
    const std::int64_t* ko = offs + slot * 2 * BN;
    attn_dec::load_kv<Threads>(p, ko, ko + BN, sK.next(slot), sV.next(slot), tid);
  };
  bool bad = false;
  if (tid < BN) {
    for (int i = 0; i < Stages && n_last - i >= n_first; ++i) {
      const attn_dec::row_offsets o = attn_dec::row_offsets_of(p, b, hk, (n_last - i) * BN, tid, sk, kv_bytes);
      bad |= o.bad;
      put(i, o);
    }
  }
  block::sync();
  // Stages - 1 groups in flight before the loop (one per tile; empty groups past the split keep the count).
#pragma unroll
  for (int i = 0; i < Stages - 1; ++i) {
    if (n_last - i >= n_first) issue(i);
    async_copy_commit();
  }

  // FP8: the queries into fp16 (their own copy group landed first), and each of this lane's score rows' factor.
  using rows = c_rows<atom>;
  float s_factor[s_regs::mt][rows::slots];
  if constexpr (fp8) {
    float* chunk_max = reinterpret_cast<float*>(offs + Stages * 2 * BN);
    float* row_factor = chunk_max + BM * (D / 16);
    if constexpr (Stages > 1)
      async_copy_wait_pending<Stages - 1>();
    else
      async_copy_wait_all();
    attn_dec::prepare_q_fp8<T, atom, BM, D, Threads>(sQ.data, q_tile::ld, chunk_max, row_factor, tid);
#pragma unroll
    for (int mt = 0; mt < s_regs::mt; ++mt)
#pragma unroll
      for (int e = 0; e < s_regs::vals; ++e)
        if (rows::is_leader(e)) s_factor[mt][rows::slot(e)] = row_factor[s_regs::row(mt, lane, e)];
  }

  // Scale: K's dequantization scale (and the FP8 conversion's 2^shift) folds into the softmax's exponent
  // scale, V's into the output.
  constexpr float shift = fp8 ? static_cast<float>(1 << fp8_convert_shift<F == attention::kv_format::e4m3fnuz>) : 1.0f;
  const float k_scale = (p.cache.k_scale != nullptr ? p.cache.k_scale[hk] : 1.0f) * shift;
  const float v_scale = (p.cache.v_scale != nullptr ? p.cache.v_scale[hk] : 1.0f) * shift;
  const float scale_log2 = p.scale_log2 * k_scale;

  o_regs acc_o;
  acc_o.fill(0.0f);
  using softmax_t = attn::online_softmax<atom, o_regs::mt>;
  typename softmax_t::stats row_max, row_sum;
  softmax_t softmax{row_max, row_sum};
  softmax.init();

  for (int nb = n_last, it = 0; nb >= n_first; --nb, ++it) {
    const int buf = it % Stages;
    if constexpr (Stages == 1) {
      // One buffer (targets without asynchronous copies, whose loads complete as they are issued): load the
      // tile once every warp is done with the last one, then compute it.
      block::sync();
      issue(0);
      async_copy_commit();
      async_copy_wait_all();
      block::sync();
    } else {
      async_copy_wait_pending<Stages - 2>();
      block::sync();  // tile nb (and Q) landed; every warp is done with tile nb + 1's slot, written next
      // Tile nb - (Stages - 1) into the slot tile nb + 1 leaves (its offsets are there, looked up a tile ago).
      const int ahead = nb - (Stages - 1), ahead_slot = (it + Stages - 1) % Stages;
      if (ahead >= n_first) issue(ahead_slot);
      async_copy_commit();
    }
    // Tile nb - Stages's rows: looked up now, stored after this tile's work into this tile's slot (the next
    // iteration issues that tile from it).
    attn_dec::row_offsets next;
    const bool lookup = tid < BN && nb - Stages >= n_first;
    if (lookup) {
      next = attn_dec::row_offsets_of(p, b, hk, (nb - Stages) * BN, tid, sk, kv_bytes);
      bad |= next.bad;
    }
    const kv_slice wK{sK.next(buf).at(w * WN, 0)}, wV{sV.next(buf).at(w * WN, 0)};

    s_regs acc_s;
    acc_s.fill(0.0f);
    attn::qk(acc_s, sQ, 0, wK, lane);
    if constexpr (fp8) {
#pragma unroll
      for (int mt = 0; mt < s_regs::mt; ++mt)
#pragma unroll
        for (int j = 0; j < s_regs::nt; ++j)
#pragma unroll
          for (int e = 0; e < s_regs::vals; ++e) acc_s.f[mt][j].v[e] *= s_factor[mt][rows::slot(e)];
    }
    const attention::tile_mask mask =
        attention::tile_mask_of(i0, std::int64_t{nb} * BN, p.seqlen_q, sk, p.window_left, p.window_right);
    if (mask.needs_mask<BM, BN>()) attn_dec::apply_mask_packed(acc_s, mask, t0, p.group, i0, w * WN, lane);
    float corr[o_regs::mt][rows::slots];
    softmax.scores(acc_s.f, scale_log2, corr);
    softmax.rescale_if_moved(acc_o.f, corr);
    if constexpr (!s_regs::feeds_a) {
#pragma unroll
      for (int mt = 0; mt < s_regs::mt; ++mt) acc_s.store_rows(mt, sP.at(mt * atom::M, 0), p_tile::ld, lane);
      warp<>::sync();
    }
    attn::pv(acc_o, acc_s, sP, wV, lane);
    if (lookup) put(buf, next);
  }

  // The split combine (launched to overlap this kernel's end) may be scheduled once every block is past its loop.
  grid_release_dependents();

  // Merge the warps: each warp's rows have (lse_w, O_w / l_w); the block's lse = log sum_w exp(lse_w) and
  // O = sum_w exp(lse_w - lse) O_w / l_w (a warp that saw no key has lse_w = -inf and weight 0).
  async_copy_wait_all();
  block::sync();  // every warp is past its last tile: the K/V region is free
  static_assert((warps & (warps - 1)) == 0, "decode: the merge pairs the warps (a power of two of them)");
  constexpr int slices = attention::decode_merge_slices(warps);
  constexpr int mld = D + attention::decode_merge_pad;  // a merge row's pitch, floats
  float* merge_o = reinterpret_cast<float*>(kv_base);  // [slices][BM][mld]
  float* lse_w = merge_o + slices * BM * mld;          // [warps][BM]
  float* lse_m = lse_w + warps * BM;                   // [BM]
  int* bad_w = reinterpret_cast<int*>(lse_m + BM);     // [warps]
  float inv[o_regs::mt][rows::slots];
#pragma unroll
  for (int mt = 0; mt < o_regs::mt; ++mt) {
    float lse[rows::slots];
    softmax.finish(mt, inv[mt], lse);
#pragma unroll
    for (int e = 0; e < o_regs::vals; ++e)
      if (rows::is_leader(e) && lane % atom::c_row_lanes == 0) lse_w[w * BM + o_regs::row(mt, lane, e)] = lse[rows::slot(e)];
  }
  const bool warp_bad = warp<>::any(bad);
  if (lane == 0) bad_w[w] = warp_bad ? 1 : 0;
  block::sync();
  for (int r = tid; r < BM; r += Threads) {
    float m = attn::neg_inf;
    for (int v = 0; v < warps; ++v) m = fmaxf(m, lse_w[v * BM + r]);
    float sum = 0.0f;
    if (m != attn::neg_inf)
      for (int v = 0; v < warps; ++v) sum += exp2_fast((lse_w[v * BM + r] - m) * attn::log2e);
    lse_m[r] = m == attn::neg_inf ? m : m + logf(sum);
  }
  block::sync();
  // The upper half of the warps (the one warp, alone) store their weighted rows into a slice each; after a
  // barrier the lower half add theirs into the same slices.
  const auto add_weighted = [&](bool first) {
    float* slice = merge_o + (w % slices) * BM * mld;
#pragma unroll
    for (int mt = 0; mt < o_regs::mt; ++mt)
#pragma unroll
      for (int e = 0; e < o_regs::vals; ++e) {
        const int r = o_regs::row(mt, lane, e);
        const float lw = lse_w[w * BM + r], lm = lse_m[r];
        const float weight = lw == attn::neg_inf ? 0.0f : exp2_fast((lw - lm) * attn::log2e) * inv[mt][rows::slot(e)];
#pragma unroll
        for (int j = 0; j < o_regs::nt; ++j) {
          // FP8: output column c holds the values of V's column mma_fp8::n_col(c).
          const int c = o_regs::col(j, lane, e);
          float* dst = slice + r * mld + (fp8 ? mma_fp8::n_col<atom>(c) : c);
          *dst = (first ? 0.0f : *dst) + acc_o.f[mt][j].v[e] * weight;
        }
      }
  };
  const bool upper = warps == 1 || w >= slices;
  if (upper) add_weighted(true);
  block::sync();
  if (!upper) add_weighted(false);
  block::sync();
  // Element (r, c) of the merged output: the sum of the slices.
  const auto merged = [&](int r, int c) {
    float x = 0.0f;
#pragma unroll
    for (int k = 0; k < slices; ++k) x += merge_o[(k * BM + r) * mld + c];
    return x;
  };

  // Store: rows of the block's packed queries, one 16-byte vector of T (or 4 fp32 partials) per step.
  bool any_bad = bad_len;
  for (int v = 0; v < warps; ++v) any_bad |= bad_w[v] != 0;
  if (any_bad && tid == 0 && p.error != nullptr) *p.error = 1;
  const float nan = __builtin_nanf("");
  if (p.splits == 1) {
    constexpr int per = q_tile::per_copy, chunks = D / per;
    for (int i = tid; i < BM * chunks; i += Threads) {
      const int r = i / chunks, c = i % chunks;
      if (r >= n_rows) continue;
      const int t = t0 + r, qi = t / p.group, h = hk * p.group + t % p.group;
      vec<T, per> o;
#pragma unroll
      for (int e = 0; e < per; ++e) o[e] = T(any_bad ? nan : merged(r, c * per + e) * v_scale);
      store_vec(static_cast<T*>(p.o) + b * p.o_batch + qi * p.o_row + h * p.o_head + c * per, o);
    }
    if (p.lse != nullptr)
      for (int r = tid; r < n_rows; r += Threads) {
        const int t = t0 + r, qi = t / p.group, h = hk * p.group + t % p.group;
        p.lse[(std::int64_t{b} * p.heads_q + h) * p.seqlen_q + qi] = any_bad ? nan : lse_m[r];
      }
  } else {
    constexpr int chunks = D / 4;
    const std::int64_t batch = grid_dim().z;
    for (int i = tid; i < BM * chunks; i += Threads) {
      const int r = i / chunks, c = i % chunks;
      if (r >= n_rows) continue;
      const int t = t0 + r, qi = t / p.group, h = hk * p.group + t % p.group;
      const std::int64_t row = ((split * batch + b) * p.heads_q + h) * p.seqlen_q + qi;
      vec<float, 4> o;
#pragma unroll
      for (int e = 0; e < 4; ++e) o[e] = any_bad ? nan : merged(r, c * 4 + e) * v_scale;
      store_vec(p.o_part + row * D + c * 4, o);
    }
    for (int r = tid; r < n_rows; r += Threads) {
      const int t = t0 + r, qi = t / p.group, h = hk * p.group + t % p.group;
      p.lse_part[((split * batch + b) * p.heads_q + h) * p.seqlen_q + qi] = any_bad ? nan : lse_m[r];
    }
  }
}

//! Merges the splits' partial results: out = sum_s exp(lse_s - lse) O_s, lse = log sum_s exp(lse_s) (splits
//! without keys have lse_s = -inf and weight 0; all of them: output 0, LSE -inf). A row is Groups groups of D / 4
//! threads, 4 values each; group g walks the splits g, g + Groups, ... in one pass (an online maximum: each
//! split's LSE and outputs are loaded together, and the unrolled loads of several splits are in flight at once),
//! and the groups merge through shared memory. Threads / (Groups * D / 4) rows per block.
template <class T, int D, int Threads, int Groups>
PK_KERNEL PK_LAUNCH_BOUNDS(Threads) void attn_decode_combine_kernel(attention::decode_params p, int batch) {
  constexpr int lanes_per_row = D / 4;
  constexpr int row_threads = lanes_per_row * Groups;
  constexpr int rows_per_block = Threads / row_threads;
  static_assert(Threads % row_threads == 0, "combine: whole rows per block");
  // Per row and group: its 4-value slices of the output sum, then its maximum, weight sum and poison flag.
  constexpr int stride = D + 3;
  constexpr int part_floats = Groups > 1 ? rows_per_block * Groups * stride : 1;
  PK_SHARED(float[part_floats], part);
  const int t = thread_rank();
  const int rb = t / row_threads, g = (t % row_threads) / lanes_per_row, c = t % lanes_per_row;
  const std::int64_t rows = std::int64_t{batch} * p.heads_q * p.seqlen_q;
  const std::int64_t row = std::int64_t{block_idx().x} * rows_per_block + rb;
  const bool live = row < rows;
  if (Groups == 1 && !live) return;  // with groups, every thread reaches the block's barriers
  grid_wait_previous();  // the split kernel's partials
  // A NaN partial (a bad slot) poisons the row; the comparisons below would skip it.
  float m = attn::neg_inf, sum = 0.0f;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  bool poisoned = false;
  if (live) {
#pragma unroll 8
    for (int s = g; s < p.splits; s += Groups) {
      const float l = p.lse_part[s * rows + row];
      const vec<float, 4> o = load_vec<4>(p.o_part + (s * rows + row) * D + c * 4);
      poisoned |= l != l;
      // Without branches: what was summed so far scales by exp(m - m') (1 while both are -inf), the split
      // weighs exp(l - m') (0 for a split without keys, and for NaN, which fmaxf skips and the flag keeps).
      const float mn = fmaxf(m, l);
      const float r = mn == attn::neg_inf ? 1.0f : exp2_fast((m - mn) * attn::log2e);
      const float wgt = l > attn::neg_inf ? exp2_fast((l - mn) * attn::log2e) : 0.0f;
      sum = sum * r + wgt;
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[e] = acc[e] * r + wgt * o[e];
      m = mn;
    }
  }
  if constexpr (Groups > 1) {
    float* mine = part + (rb * Groups + g) * stride;
#pragma unroll
    for (int e = 0; e < 4; ++e) mine[c * 4 + e] = acc[e];
    if (c == 0) {
      mine[D] = m;
      mine[D + 1] = sum;
      mine[D + 2] = poisoned ? 1.0f : 0.0f;
    }
    block::sync();
    if (g != 0 || !live) return;
    const float* first = part + rb * Groups * stride;
    float mm = attn::neg_inf;
#pragma unroll
    for (int k = 0; k < Groups; ++k) {
      mm = fmaxf(mm, first[k * stride + D]);
      poisoned |= first[k * stride + D + 2] != 0.0f;
    }
    sum = 0.0f;
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] = 0.0f;
    if (mm != attn::neg_inf) {
#pragma unroll
      for (int k = 0; k < Groups; ++k) {
        const float mk = first[k * stride + D];
        if (mk == attn::neg_inf) continue;
        const float r = exp2_fast((mk - mm) * attn::log2e);
        sum += r * first[k * stride + D + 1];
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[e] += r * first[k * stride + c * 4 + e];
      }
    }
    m = mm;
  }
  const float nan = __builtin_nanf("");
  const float inv = poisoned ? nan : (sum > 0.0f ? 1.0f / sum : 0.0f);
  // row = (b * heads_q + h) * seqlen_q + i
  const std::int64_t i = row % p.seqlen_q, bh = row / p.seqlen_q, h = bh % p.heads_q, b = bh / p.heads_q;
  vec<T, 4> o;
#pragma unroll
  for (int e = 0; e < 4; ++e) o[e] = T(acc[e] * inv);
  store_vec(static_cast<T*>(p.o) + b * p.o_batch + i * p.o_row + h * p.o_head + c * 4, o);
  if (p.lse != nullptr && c == 0) p.lse[row] = poisoned ? nan : (sum > 0.0f ? m + logf(sum) : attn::neg_inf);
}

//! kv_cache_append, step 1: any slot outside the cache sets *bad (one thread per new token). Templates (on
//! the instance's type) so that every instance TU may hold them.
template <class T>
PK_KERNEL void kv_append_check_kernel(attention::append_params p) {
  const int b = static_cast<int>(block_idx().y);
  const int t = static_cast<int>(block_idx().x) * static_cast<int>(block_dim().x) + thread_rank();
  if (t >= p.new_tokens) return;
  const std::int64_t len = p.cache.seqlens[b];
  const std::int64_t pos = len + t;
  if (len < 0 || pos >= p.cache.capacity || attn_dec::page_of(p.cache, b, pos) < 0) *p.bad = 1;
}

//! Step 2: unless *bad, writes token (blockIdx.x, blockIdx.y) of every KV head: 8 values per thread.
template <class T, int D>
PK_KERNEL void kv_append_write_kernel(attention::append_params p) {
  if (*p.bad != 0) return;
  const int t = static_cast<int>(block_idx().x), b = static_cast<int>(block_idx().y);
  const std::int64_t pos = p.cache.seqlens[b] + t;
  const std::int64_t page = attn_dec::page_of(p.cache, b, pos);
  const std::int64_t slot = pos & p.cache.slot_mask;
  constexpr int per = 8, chunks = D / per;
  for (int i = thread_rank(); i < p.heads_kv * chunks; i += static_cast<int>(block_dim().x)) {
    const int h = i / chunks, c = i % chunks;
    for (int kv = 0; kv < 2; ++kv) {
      const T* src = static_cast<const T*>(kv == 0 ? p.k_new : p.v_new) + b * (kv == 0 ? p.kn_batch : p.vn_batch) +
                     t * (kv == 0 ? p.kn_row : p.vn_row) + h * (kv == 0 ? p.kn_head : p.vn_head) + c * per;
      const std::int64_t off = page * (kv == 0 ? p.cache.k_page : p.cache.v_page) + slot * (kv == 0 ? p.cache.k_row : p.cache.v_row) +
                               h * (kv == 0 ? p.cache.k_head : p.cache.v_head) + c * per;
      const vec<T, per> x = load_vec<per>(src);
      if (p.cache.format == attention::kv_format::same) {
        store_vec(static_cast<T*>(kv == 0 ? p.cache.k : p.cache.v) + off, x);
      } else {
        const float* sc = kv == 0 ? p.cache.k_scale : p.cache.v_scale;
        const float inv = sc != nullptr ? 1.0f / sc[h] : 1.0f;
        vec<std::uint8_t, per> q;
#pragma unroll
        for (int e = 0; e < per; ++e)
          q[e] = p.cache.format == attention::kv_format::e4m3fnuz ? ::pk::detail::float_to_e4m3_bits<true>(static_cast<float>(x[e]) * inv)
                                                            : ::pk::detail::float_to_e4m3_bits<false>(static_cast<float>(x[e]) * inv);
        store_vec(static_cast<std::uint8_t*>(kv == 0 ? p.cache.k : p.cache.v) + off, q);
      }
    }
  }
}

//! Step 3: reports *bad through the caller's flag and leaves the workspace counter zero.
template <class T>
PK_KERNEL void kv_append_finish_kernel(attention::append_params p) {
  if (*p.bad != 0 && p.error != nullptr) *p.error = 1;
  *p.bad = 0;
}


//! The decode candidate list this target compiles (one per vendor, as the forward's).
template <class T, int D, std::size_t I>
status attn_decode_launch_policy(const attention::decode_call& c) {
  constexpr attention::decode_policy pol = attention::decode_candidates(attention::family_of(vendor_of(this_target)), D)[I];
  constexpr bool staged_p = attention::stages_p(attention::family_of(vendor_of(this_target)));
  static const std::string name = attention::decode_name_of(pol, std::is_same_v<T, bf16> ? "bf16" : "f16", D);
  launch_shape shape;
  shape.grid_x = c.grid_x;
  shape.grid_y = c.grid_y;
  shape.grid_z = c.grid_z;
  shape.block_x = static_cast<unsigned>(pol.block_threads);
  shape.dynamic_smem = static_cast<std::size_t>(
      attention::decode_smem_bytes(pol, D, sizeof(T), c.p.cache.format != attention::kv_format::same, staged_p));
  shape.name = name.c_str();
  using attention::kv_format;
  constexpr int bm = pol.block_m, bn = pol.block_n, threads = pol.block_threads, stages = pol.stages;
  switch (c.p.cache.format) {
    case kv_format::e4m3fn:
      PK_TRY(launch(*c.s, &attn_decode_kernel<T, D, bm, bn, threads, stages, kv_format::e4m3fn>, shape, c.p));
      break;
    case kv_format::e4m3fnuz:
      PK_TRY(launch(*c.s, &attn_decode_kernel<T, D, bm, bn, threads, stages, kv_format::e4m3fnuz>, shape, c.p));
      break;
    case kv_format::same:
      PK_TRY(launch(*c.s, &attn_decode_kernel<T, D, bm, bn, threads, stages, kv_format::same>, shape, c.p));
      break;
  }
  if (c.p.splits == 1) return {};
  // The merge: groups of D / 4 threads per row (attention::decode_combine_groups), one instance per block size.
  const std::int64_t rows = std::int64_t{c.batch} * c.p.heads_q * c.p.seqlen_q;
  const auto merge = [&](auto kernel, int threads, int groups) {
    const int rows_per_block = threads / (D / 4 * groups);
    launch_shape cs;
    cs.grid_x = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
    cs.block_x = static_cast<unsigned>(threads);
    cs.name = "attn_decode_combine";
    cs.overlaps_previous = true;  // its launch overlaps the split kernel's last blocks
    return launch(*c.s, kernel, cs, c.p, c.batch);
  };
  using attention::decode_combine_groups, attention::decode_combine_threads;
  constexpr int many = attention::decode_combine_many_splits, some = attention::decode_combine_group_splits;
  constexpr int t_many = decode_combine_threads(many), g_many = decode_combine_groups(many, D);
  constexpr int t_some = decode_combine_threads(some), g_some = decode_combine_groups(some, D);
  constexpr int t_one = decode_combine_threads(1);
  if (c.p.splits >= many) return merge(&attn_decode_combine_kernel<T, D, t_many, g_many>, t_many, g_many);
  if (c.p.splits >= some) return merge(&attn_decode_combine_kernel<T, D, t_some, g_some>, t_some, g_some);
  return merge(&attn_decode_combine_kernel<T, D, t_one, 1>, t_one, 1);
}

template <class T, int D>
status kv_append_launch(const attention::decode_call& c) {
  constexpr int threads = 128;
  const attention::append_params& a = c.ap;
  launch_shape check;
  check.grid_x = static_cast<unsigned>((a.new_tokens + threads - 1) / threads);
  check.grid_y = static_cast<unsigned>(a.batch);
  check.block_x = threads;
  check.name = "kv_append_check";
  PK_TRY(launch(*c.s, &kv_append_check_kernel<T>, check, a));
  launch_shape write;
  write.grid_x = static_cast<unsigned>(a.new_tokens);
  write.grid_y = static_cast<unsigned>(a.batch);
  write.block_x = threads;
  write.name = "kv_append_write";
  const status written = launch(*c.s, &kv_append_write_kernel<T, D>, write, a);
  // The finish kernel leaves the workspace flag zero (the counters' rule) even when the write did not launch.
  launch_shape finish;
  finish.name = "kv_append_finish";
  const status finished = launch(*c.s, &kv_append_finish_kernel<T>, finish, a);
  return !written ? written : finished;
}

template <class T, int D, std::size_t... I>
status attn_decode_launch_indexed(const attention::decode_call& c, std::index_sequence<I...>) {
  status s = unsupported("attention_decode: policy index " + std::to_string(c.policy) + " is not compiled");
  ((c.policy == static_cast<int>(I) ? (void)(s = attn_decode_launch_policy<T, D, I>(c)) : (void)0), ...);
  return s;
}

template <class T, int D>
status attn_decode_launch(const attention::decode_call& c) {
  if (c.append) return kv_append_launch<T, D>(c);
  return attn_decode_launch_indexed<T, D>(
      c, std::make_index_sequence<attention::decode_candidate_count(attention::family_of(vendor_of(this_target)), D)>{});
}

}  // namespace impl
PK_DETAIL_TARGET_END

//! Defines the decode instance entry point `fn` (attn_decode_<type>_d<D>) of this target: one per instance
//! TU, generated from the instance table in kernels/attention/CMakeLists.txt.
#define PK_ATTENTION_DECODE_INSTANCE(fn, type, T, D)                              \
  PK_DETAIL_TARGET_BEGIN                                                          \
  namespace impl {                                                                \
  status fn(const attention::decode_call& c) { return attn_decode_launch<T, D>(c); } \
  }                                                                               \
  PK_DETAIL_TARGET_END
