// Attention forward, device code: FlashAttention-2 style tiled online softmax, written once against
// the portable MMA atom of the target (pk::arch_mma_atom: mma.sync m16n8k16, MFMA 32x32x8, WMMA 16x16x16)
// over shared-memory and register tiles (pk/portable/tile.hpp).
//
// A block owns BM queries of one (batch, head); its warps split the BM rows evenly (WM rows each, as
// MA atoms of M rows). It walks the key tiles of its range (attention_mask.hpp: causal/window/varlen
// bounds, all runtime) from the last to the first: K and V tiles of BN keys go through shared memory
// (16-byte async copies where the arch has them; Stages 1: FA2's overlap, V(j) loads while
// S = Q K(j)^T computes and K(j-1) while O += P V(j); Stages 2: K/V(j-1) load into the other buffer
// during all of tile j). Per tile: S = Q K^T in fp32 accumulators (qk); mask (apply_mask); online
// softmax (attention_softmax.hpp), which turns S into P; O += P V (pv). P feeds the next product
// straight from the accumulator registers when the atom's C layout is its A layout (mma.sync), else
// through a per-warp shared-memory tile (MFMA, WMMA). Epilogue: O / rowsum through the Q tile to
// 16-byte stores; LSE.
//
// Shared memory, in elements of T (every tile row padded by smem_row_pad_bytes):
//   Q [BM][D+pad] | K [Stages][BN][D+pad] | V [Stages][BN][D+pad] | P [warps][WM][BN+pad] (staged P only)
#pragma once
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/detail/attention_call.hpp>
#include <pk/attention/detail/attention_mask.hpp>
#include <pk/attention/detail/attention_softmax.hpp>
#include <pk/portable/async_copy.hpp>
#include <pk/portable/block.hpp>
#include <pk/portable/math.hpp>
#include <pk/portable/mma.hpp>
#include <pk/portable/tile.hpp>

#include <cstdint>
#include <type_traits>

PK_DETAIL_TARGET_BEGIN
namespace impl {

namespace attn {

//! Where one block's rows live: its sequence lengths (varlen: from the cumulative offsets), the
//! first query of the block, and the Q/K/V/O rows and the LSE of its (batch, head).
template <class T, int BM>
struct block_rows {
  int sq, sk, m0;
  const T* q;  //!< row m0 of the block's head
  const T* k;  //!< key 0 of the head's KV head
  const T* v;
  T* o;                  //!< row m0 of the block's head
  std::int64_t lse_base; //!< lse[lse_base + m] for query m of the head (null p.lse: unused)

  PK_DEVICE PK_FORCEINLINE static block_rows locate(const attention::fwd_params& p) {
    // Query blocks in reverse launch order: under causal masking the last blocks see the most keys, and
    // starting them first shortens the tail of the grid.
    return locate(p, static_cast<int>(grid_dim().x - 1 - block_idx().x), static_cast<int>(block_idx().y),
                  static_cast<int>(block_idx().z));
  }
  //! The rows of query block mb of head h of batch entry b.
  PK_DEVICE PK_FORCEINLINE static block_rows locate(const attention::fwd_params& p, int mb, int h, int b) {
    block_rows br;
    br.m0 = mb * BM;
    br.sq = p.seqlen_q;
    br.sk = p.seqlen_k;
    std::int64_t q_base, k_base, v_base, o_base;
    const int hk = h / p.group;
    if (p.cu_q != nullptr) {
      const std::int64_t q0 = p.cu_q[b], k0 = p.cu_k[b];
      br.sq = static_cast<int>(p.cu_q[b + 1] - q0);
      br.sk = static_cast<int>(p.cu_k[b + 1] - k0);
      q_base = q0 * p.q_row;
      k_base = k0 * p.k_row;
      v_base = k0 * p.v_row;
      o_base = q0 * p.o_row;
      br.lse_base = q0;
    } else {
      q_base = b * p.q_batch;
      k_base = b * p.k_batch;
      v_base = b * p.v_batch;
      o_base = b * p.o_batch;
      br.lse_base = b * p.lse_batch;
    }
    br.lse_base += h * p.lse_head;
    // An empty K/V may come with null data: attention_forward then passes zero strides, so these stay
    // null + 0 (defined) without a branch here.
    br.q = static_cast<const T*>(p.q) + q_base + h * p.q_head + std::int64_t{br.m0} * p.q_row;
    br.k = static_cast<const T*>(p.k) + k_base + hk * p.k_head;
    br.v = static_cast<const T*>(p.v) + v_base + hk * p.v_head;
    br.o = static_cast<T*>(p.o) + o_base + h * p.o_head + std::int64_t{br.m0} * p.o_row;
    return br;
  }
};

//! B operands of a product: the block at (r0, c0) of a shared-memory tile. 16-bit tiles through the atom's loads,
//! FP8 code tiles (swizzled_byte_tile of f8e4m3fn / f8e4m3fnuz) through its FP8 loads (pk/portable/mma.hpp,
//! mma_fp8).
template <class Atom, class Tile>
PK_DEVICE PK_FORCEINLINE void load_b_nk(typename Atom::b_frag (&f)[Atom::b_group], const Tile& t, int r0, int c0, int lane) {
  using E = typename Tile::element;
  if constexpr (sizeof(E) == 1)
    Atom::template load_b_nk_fp8<std::is_same_v<E, f8e4m3fnuz>>(f, t, r0, c0, lane);
  else
    Atom::load_b_nk(f, t.at(r0, c0), Tile::ld, lane);
}
template <class Atom, class Tile>
PK_DEVICE PK_FORCEINLINE void load_b_kn(typename Atom::b_frag (&f)[Atom::b_group], const Tile& t, int r0, int c0, int lane) {
  using E = typename Tile::element;
  if constexpr (sizeof(E) == 1)
    Atom::template load_b_kn_fp8<std::is_same_v<E, f8e4m3fnuz>>(f, t, r0, c0, lane);
  else
    Atom::load_b_kn(f, t.at(r0, c0), Tile::ld, lane);
}

//! S += Q K^T for one warp: rows [row0, row0 + S::rows) of the Q tile against every key of the K tile
//! ([key][head dim]), KQ = D / K steps of the atom. An FP8 K tile needs Q's columns in the order of
//! mma_fp8::k_source.
template <class S, class QTile, class KTile>
PK_DEVICE PK_FORCEINLINE void qk(S& s, const QTile& sq, int row0, const KTile& sk, int lane) {
  using atom = typename S::atom;
  constexpr int KQ = QTile::cols / atom::K;
#pragma unroll
  for (int kk = 0; kk < KQ; ++kk) {
    typename atom::a_frag fa[S::mt];
#pragma unroll
    for (int mt = 0; mt < S::mt; ++mt) atom::load_a(fa[mt], sq.at(row0 + mt * atom::M, kk * atom::K), QTile::ld, lane);
#pragma unroll
    for (int j = 0; j < S::nt; j += atom::b_group) {
      typename atom::b_frag fb[atom::b_group];
      load_b_nk<atom>(fb, sk, j * atom::N, kk * atom::K, lane);
#pragma unroll
      for (int g = 0; g < atom::b_group; ++g)
#pragma unroll
        for (int mt = 0; mt < S::mt; ++mt) atom::mma(s.f[mt][j + g], fa[mt], fb[g], s.f[mt][j + g]);
    }
  }
}

//! Masked scores of one tile pair to -inf (row0: the warp's first row in the block).
template <class S>
PK_DEVICE PK_FORCEINLINE void apply_mask(S& s, const attention::tile_mask& m, int row0, int lane) {
#pragma unroll
  for (int mt = 0; mt < S::mt; ++mt)
#pragma unroll
    for (int j = 0; j < S::nt; ++j)
#pragma unroll
      for (int e = 0; e < S::vals; ++e)
        if (!m.visible(row0 + S::row(mt, lane, e), S::col(j, lane, e))) s.f[mt][j].v[e] = neg_inf;
}

//! O += P V for one warp. P comes from the score registers (s, when S::feeds_a) or from the warp's
//! staged P tile (sp: [WM][BN], K contiguous); V is [key][head dim] (load_b_kn).
template <class O, class S, class PTile, class VTile>
PK_DEVICE PK_FORCEINLINE void pv(O& o, const S& s, const PTile& sp, const VTile& sv, int lane) {
  using atom = typename O::atom;
  constexpr int KP = S::cols / atom::K;
#pragma unroll
  for (int kk = 0; kk < KP; ++kk) {
    typename atom::a_frag fa[O::mt];
#pragma unroll
    for (int mt = 0; mt < O::mt; ++mt) {
      if constexpr (S::feeds_a)
        s.to_a(fa[mt], mt, kk);
      else
        atom::load_a(fa[mt], sp.at(mt * atom::M, kk * atom::K), PTile::ld, lane);
    }
#pragma unroll
    for (int j = 0; j < O::nt; j += atom::b_group) {
      typename atom::b_frag fb[atom::b_group];
      load_b_kn<atom>(fb, sv, kk * atom::K, j * atom::N, lane);
#pragma unroll
      for (int g = 0; g < atom::b_group; ++g)
#pragma unroll
        for (int mt = 0; mt < O::mt; ++mt) atom::mma(o.f[mt][j + g], fa[mt], fb[g], o.f[mt][j + g]);
    }
  }
}

//! Epilogue of one warp: O / rowsum, rounded to T, into the warp's rows of the Q tile (free once every
//! warp is past its last Q K^T: the caller syncs), and the LSE of the rows this lane leads. The caller
//! syncs again and stores the Q tile's rows (smem_tile::store_rows).
template <class O, class Softmax, class QTile, class T, int BM>
PK_DEVICE PK_FORCEINLINE void epilogue_warp(O& o, const Softmax& sm, const QTile& sq, int row0, int lane,
                                            const attention::fwd_params& p, const block_rows<T, BM>& br) {
  using atom = typename O::atom;
  using rows = c_rows<atom>;
#pragma unroll
  for (int mt = 0; mt < O::mt; ++mt) {
    float inv[rows::slots], lse[rows::slots];
    sm.finish(mt, inv, lse);
    // Normalize: one factor per row (the C layout's rows are the same for every O tile).
    typename atom::c_frag scale;
#pragma unroll
    for (int e = 0; e < O::vals; ++e) scale.v[e] = inv[rows::slot(e)];
#pragma unroll
    for (int j = 0; j < O::nt; ++j) {
#pragma unroll
      for (int e = 0; e < O::vals; ++e) o.f[mt][j].v[e] *= scale.v[e];
      O::store_frag(sq.at(row0 + mt * atom::M, j * atom::N), QTile::ld, o.f[mt][j], lane);
    }
#pragma unroll
    for (int e = 0; e < O::vals; ++e) {
      const int r = row0 + O::row(mt, lane, e);
      if (p.lse != nullptr && rows::is_leader(e) && lane % atom::c_row_lanes == 0 && br.m0 + r < br.sq)
        p.lse[br.lse_base + br.m0 + r] = lse[rows::slot(e)];
    }
  }
}

}  // namespace attn

template <class T, int D, int BM, int BN, int Threads, int Stages>
PK_KERNEL PK_LAUNCH_BOUNDS(Threads) void attn_fwd_kernel(attention::fwd_params p) {
  static_assert(Stages == 1 || Stages == 2, "K/V stages: 1 or 2");
  using atom = arch_mma_atom<T>;
  constexpr int warps = Threads / warp_size;
  constexpr int WM = BM / warps;  // rows per warp
  static_assert(Threads % warp_size == 0 && BM % warps == 0 && WM % atom::M == 0,
                "policy: the query tile must split into whole MMA atoms per warp");
  static_assert(D % atom::K == 0 && D % (atom::N * atom::b_group) == 0 && BN % (atom::N * atom::b_group) == 0 &&
                    BN % atom::K == 0,
                "head dim and key tile must be whole MMA atoms (and whole B load groups)");
  static_assert(mma_layout::a_runs_contiguous<atom>() && mma_layout::b_runs_contiguous<atom>() &&
                    mma_layout::c_rows_in_low_lane_bits<atom>() && c_rows<atom>::lane_independent(),
                "MMA atom layout assumptions");
  static_assert(attention::smem_pad_bytes == smem_row_pad_bytes, "the planner's tile footprint is smem_tile's");
  using q_tile = smem_tile<T, BM, D>;
  using kv_tile = smem_tile<T, BN, D>;
  using p_tile = smem_tile<T, WM, BN>;     // one warp's staged P
  using s_regs = reg_tile<atom, WM / atom::M, BN / atom::N>;  // (WM,BN) scores, then P
  using o_regs = reg_tile<atom, WM / atom::M, D / atom::N>;   // (WM,D) output accumulators
  static_assert(!is_device_pass || s_regs::feeds_a != attention::stages_p(archdb::traits(device_arch).vendor_id ==
                                                                                  archdb::vendor::amd
                                                                              ? attention::family::amd
                                                                              : attention::family::nvidia),
                "the planner's shared-memory size assumes this P path");

  const auto br = attn::block_rows<T, BM>::locate(p);
  if (br.m0 >= br.sq) return;  // the whole block: varlen sequences shorter than the longest

  const q_tile sQ{dynamic_shared<T>()};
  const kv_tile sK{sQ.data + q_tile::elements};      // [Stages]
  const kv_tile sV{sK.data + Stages * kv_tile::elements};  // [Stages]
  const int tid = thread_rank();
  const int lane = lane_id();
  const int w = warp_id();
  const int row0 = w * WM;  // first row of this warp in the tile
  const p_tile sP{sV.data + Stages * kv_tile::elements + w * p_tile::elements};

  const attention::key_tiles range =
      attention::key_tiles_of_block(br.m0, BM, BN, br.sq, br.sk, p.window_left, p.window_right);
  const int n_first = static_cast<int>(range.first), n_last = static_cast<int>(range.last);

  sQ.template load_async<Threads>(br.q, p.q_row, br.sq - br.m0, tid);
  if (n_last >= n_first) {
    sK.template load_async<Threads>(br.k + std::int64_t{n_last} * BN * p.k_row, p.k_row, br.sk - n_last * BN, tid);
    if constexpr (Stages == 2)
      sV.template load_async<Threads>(br.v + std::int64_t{n_last} * BN * p.v_row, p.v_row, br.sk - n_last * BN, tid);
  }
  async_copy_commit();

  o_regs acc_o;
  acc_o.fill(0.0f);
  using softmax_t = attn::online_softmax<atom, o_regs::mt>;
  typename softmax_t::stats row_max, row_sum;
  softmax_t softmax{row_max, row_sum};
  softmax.init();

  for (int nb = n_last; nb >= n_first; --nb) {
    const int n0 = nb * BN;
    const int buf = Stages == 2 ? (n_last - nb) & 1 : 0;
    const kv_tile cK = sK.next(buf), cV = sV.next(buf);
    async_copy_wait_all();
    block::sync();  // K(nb) (and Q) landed; every warp is done with the buffers it reads next
    if constexpr (Stages == 1) {
      sV.template load_async<Threads>(br.v + std::int64_t{n0} * p.v_row, p.v_row, br.sk - n0, tid);
      async_copy_commit();
    } else if (nb > n_first) {
      sK.next(buf ^ 1).template load_async<Threads>(br.k + std::int64_t{n0 - BN} * p.k_row, p.k_row, br.sk - (n0 - BN), tid);
      sV.next(buf ^ 1).template load_async<Threads>(br.v + std::int64_t{n0 - BN} * p.v_row, p.v_row, br.sk - (n0 - BN), tid);
      async_copy_commit();
    }

    s_regs acc_s;
    acc_s.fill(0.0f);
    attn::qk(acc_s, sQ, row0, cK, lane);
    // Only tiles that cross a boundary pay for the element test. S stays unscaled (softmax.step).
    const attention::tile_mask mask = attention::tile_mask_of(br.m0, n0, br.sq, br.sk, p.window_left, p.window_right);
    if (mask.needs_mask<BM, BN>()) attn::apply_mask(acc_s, mask, row0, lane);
    softmax.step(acc_s.f, acc_o.f, p.scale_log2);

    if constexpr (!s_regs::feeds_a) {
#pragma unroll
      for (int mt = 0; mt < s_regs::mt; ++mt) acc_s.store_rows(mt, sP.at(mt * atom::M, 0), p_tile::ld, lane);
      warp<>::sync();
    }

    if constexpr (Stages == 1) {
      async_copy_wait_all();
      block::sync();  // V(nb) landed; every warp is done with K(nb)
      if (nb > n_first) {
        sK.template load_async<Threads>(br.k + std::int64_t{n0 - BN} * p.k_row, p.k_row, br.sk - (n0 - BN), tid);
        async_copy_commit();
      }
    }

    attn::pv(acc_o, acc_s, sP, cV, lane);
  }

  async_copy_wait_all();  // Q may still be in flight (copied by other threads) when the block had no key tile
  block::sync();
  attn::epilogue_warp(acc_o, softmax, sQ, row0, lane, p, br);
  block::sync();
  sQ.template store_rows<Threads>(br.o, p.o_row, br.sq - br.m0, tid);
}

}  // namespace impl
PK_DETAIL_TARGET_END
