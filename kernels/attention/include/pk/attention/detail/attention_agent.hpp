// Attention forward, device code: FlashAttention-2 style tiled online softmax, written once against
// the portable MMA atom of the target (pk::arch_mma_atom: mma.sync m16n8k16, MFMA 32x32x8, WMMA 16x16x16).
//
// A block owns BM queries of one (batch, head); its warps split the BM rows evenly (WM rows each, as
// MA atoms of M rows). It walks the key tiles of its range (causal/window/varlen bounds, all runtime)
// from the last to the first: K and V tiles of BN keys go through shared memory (16-byte async copies
// where the arch has them; Stages 1: FA2's overlap, V(j) loads while S = Q K(j)^T computes and K(j-1)
// while O += P V(j); Stages 2: K/V(j-1) load into the other buffer during all of tile j).
// Per tile: S = Q K^T in fp32 accumulators; mask; online softmax with exp2 (the scale folded into log2(e));
// P = exp2(S - rowmax) rounded to the input type; O += P V. P feeds the next product straight from the
// accumulator registers when the atom's C layout is its A layout (mma.sync), else through a per-warp
// shared-memory tile (MFMA, WMMA). Epilogue: O / rowsum through shared memory to 16-byte stores; LSE.
#pragma once
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/detail/attention_call.hpp>
#include <pk/portable/async_copy.hpp>
#include <pk/portable/block.hpp>
#include <pk/portable/math.hpp>
#include <pk/portable/mma.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>

PK_DETAIL_TARGET_BEGIN
namespace impl {

namespace attn {

inline constexpr float neg_inf = -__builtin_huge_valf();
inline constexpr float ln2 = 0.693147180559945309f;

//! Whether values v and w of a C fragment lie on the same row (lane-independent for every atom).
template <class Atom>
constexpr bool same_row(int v, int w) { return Atom::c_m(0, v) == Atom::c_m(0, w); }
//! The first value of v's row: row statistics are computed once per row, at its leader.
template <class Atom>
constexpr int row_leader(int v) {
  for (int w = 0; w < Atom::c_vals; ++w)
    if (same_row<Atom>(v, w)) return w;
  return v;
}
//! Distinct rows of C per lane, and the slot of value v's row among them.
template <class Atom>
constexpr int row_slots() {
  int n = 0;
  for (int v = 0; v < Atom::c_vals; ++v) n += row_leader<Atom>(v) == v ? 1 : 0;
  return n;
}
template <class Atom>
constexpr int slot_of(int v) {
  int n = 0;
  for (int w = 0; w < row_leader<Atom>(v); ++w) n += row_leader<Atom>(w) == w ? 1 : 0;
  return n;
}
template <class Atom>
constexpr bool rows_lane_independent() {
  for (int l = 0; l < Atom::lanes; ++l)
    for (int v = 0; v < Atom::c_vals; ++v)
      for (int w = 0; w < Atom::c_vals; ++w)
        if ((Atom::c_m(l, v) == Atom::c_m(l, w)) != same_row<Atom>(v, w)) return false;
  return true;
}

//! Copies `Rows` rows of D elements (row i at src + i*stride) into a [Rows][LD] shared tile, 16 bytes
//! per copy; rows >= valid are zero-filled (their keys are masked, and 0 * V stays finite).
template <int Rows, int D, int LD, int Threads, class T>
PK_DEVICE PK_FORCEINLINE void load_rows(T* dst, const T* src, std::int64_t stride, int valid, int tid) {
  constexpr int per = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte copy
  constexpr int chunks = D / per;                         // copies per row
  if constexpr (Threads % chunks == 0) {
    // Each thread keeps one column of copies and walks rows Threads/chunks apart: one pointer each.
    constexpr int step = Threads / chunks;
    const int r0 = tid / chunks, c = tid % chunks;
    const T* s = src + r0 * stride + c * per;
    T* d = dst + r0 * LD + c * per;
#pragma unroll
    for (int r = r0, i = 0; i < (Rows + step - 1) / step; ++i, r += step, s += step * stride, d += step * LD)
      if (Rows % step == 0 || r < Rows) async_copy_16(d, r < valid ? s : src, r < valid);
  } else {
    constexpr int total = Rows * chunks;
#pragma unroll
    for (int i0 = 0; i0 < total; i0 += Threads) {
      const int i = i0 + tid;
      if (total % Threads == 0 || i < total) {
        const int r = i / chunks, c = i % chunks;
        const bool ok = r < valid;
        async_copy_16(dst + r * LD + c * per, ok ? src + r * stride + c * per : src, ok);
      }
    }
  }
}

//! True when C values (2i, 2i+1) of every lane are adjacent columns of one row: stores go as pairs.
template <class Atom>
constexpr bool c_pairs() {
  for (int l = 0; l < Atom::lanes; ++l)
    for (int v = 0; v + 1 < Atom::c_vals; v += 2)
      if (Atom::c_m(l, v + 1) != Atom::c_m(l, v) || Atom::c_n(l, v + 1) != Atom::c_n(l, v) + 1) return false;
  return Atom::c_vals % 2 == 0;
}

//! Stores a C fragment, rounded to T, at tile[row*ld + col] through the C layout.
template <class Atom, class T>
PK_DEVICE PK_FORCEINLINE void store_c(T* tile, int ld, const fragment<float, Atom::c_vals>& c, int lane) {
  if constexpr (c_pairs<Atom>()) {
#pragma unroll
    for (int e = 0; e < Atom::c_vals; e += 2) {
      const std::uint32_t two = pack2<T>(c.v[e], c.v[e + 1]);
      std::memcpy(tile + Atom::c_m(lane, e) * ld + Atom::c_n(lane, e), &two, sizeof two);
    }
  } else {
#pragma unroll
    for (int e = 0; e < Atom::c_vals; ++e) tile[Atom::c_m(lane, e) * ld + Atom::c_n(lane, e)] = T(c.v[e]);
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
                    mma_layout::c_rows_in_low_lane_bits<atom>() && attn::rows_lane_independent<atom>(),
                "MMA atom layout assumptions");
  constexpr int MA = WM / atom::M;  // atoms per warp along M
  constexpr int NS = BN / atom::N;  // S tiles along the keys
  constexpr int KQ = D / atom::K;   // k steps of Q K^T
  constexpr int NO = D / atom::N;   // O tiles along the head dim
  constexpr int KP = BN / atom::K;  // k steps of P V
  constexpr int CV = atom::c_vals;
  constexpr int RS = attn::row_slots<atom>();  // rows of C per lane
  constexpr int pad = attention::smem_pad_bytes / static_cast<int>(sizeof(T));
  constexpr int LD = D + pad;
  constexpr int LDP = BN + pad;
  constexpr bool p_in_regs = mma_layout::c_feeds_a<atom>();
  static_assert(!is_device_pass || p_in_regs != attention::stages_p(archdb::traits(device_arch).vendor_id ==
                                                                            archdb::vendor::amd
                                                                        ? attention::family::amd
                                                                        : attention::family::nvidia),
                "the planner's shared-memory size assumes this P path");

  const int b = static_cast<int>(block_idx().z);
  const int h = static_cast<int>(block_idx().y);
  // Query blocks in reverse launch order: under causal masking the last blocks see the most keys, and
  // starting them first shortens the tail of the grid.
  const int m0 = static_cast<int>(grid_dim().x - 1 - block_idx().x) * BM;
  int sq = p.seqlen_q, sk = p.seqlen_k;
  std::int64_t q_base, k_base, v_base, o_base, lse_base;
  const int hk = h / p.group;
  if (p.cu_q != nullptr) {
    const std::int64_t q0 = p.cu_q[b], k0 = p.cu_k[b];
    sq = static_cast<int>(p.cu_q[b + 1] - q0);
    sk = static_cast<int>(p.cu_k[b + 1] - k0);
    q_base = q0 * p.q_row;
    k_base = k0 * p.k_row;
    v_base = k0 * p.v_row;
    o_base = q0 * p.o_row;
    lse_base = q0;
  } else {
    q_base = b * p.q_batch;
    k_base = b * p.k_batch;
    v_base = b * p.v_batch;
    o_base = b * p.o_batch;
    lse_base = b * p.lse_batch;
  }
  if (m0 >= sq) return;  // the whole block: varlen sequences shorter than the longest
  const T* q = static_cast<const T*>(p.q) + q_base + h * p.q_head + std::int64_t{m0} * p.q_row;
  const T* k = static_cast<const T*>(p.k) + k_base + hk * p.k_head;
  const T* v = static_cast<const T*>(p.v) + v_base + hk * p.v_head;
  T* o = static_cast<T*>(p.o) + o_base + h * p.o_head + std::int64_t{m0} * p.o_row;

  T* sQ = dynamic_shared<T>();
  T* sK = sQ + BM * LD;             // [Stages][BN][LD]
  T* sV = sK + Stages * BN * LD;     // [Stages][BN][LD]
  T* sP = sV + Stages * BN * LD;     // [warps][WM][LDP] when P is staged

  const int tid = thread_rank();
  const int lane = lane_id();
  const int w = warp_id();
  const int row0 = w * WM;  // first row of this warp in the tile

  // Key range of the block (bottom-right aligned diagonal).
  const int diag = sk - sq;
  const int m_last = (m0 + BM < sq ? m0 + BM : sq) - 1;
  int hi = sk, lo = 0;
  if (p.window_right >= 0) hi = hi < m_last + diag + p.window_right + 1 ? hi : m_last + diag + p.window_right + 1;
  if (p.window_left >= 0) lo = m0 + diag - p.window_left > 0 ? m0 + diag - p.window_left : 0;
  const int n_first = lo / BN;
  const int n_last = hi > lo ? (hi - 1) / BN : n_first - 1;

  attn::load_rows<BM, D, LD, Threads>(sQ, q, p.q_row, sq - m0, tid);
  if (n_last >= n_first) {
    attn::load_rows<BN, D, LD, Threads>(sK, k + std::int64_t{n_last} * BN * p.k_row, p.k_row, sk - n_last * BN, tid);
    if constexpr (Stages == 2)
      attn::load_rows<BN, D, LD, Threads>(sV, v + std::int64_t{n_last} * BN * p.v_row, p.v_row, sk - n_last * BN, tid);
  }
  async_copy_commit();

  fragment<float, CV> acc_o[MA][NO];
  float row_max[MA][RS], row_sum[MA][RS];  // running max (log2 units) and this lane's partial sum
#pragma unroll
  for (int mt = 0; mt < MA; ++mt) {
#pragma unroll
    for (int j = 0; j < NO; ++j)
#pragma unroll
      for (int e = 0; e < CV; ++e) acc_o[mt][j].v[e] = 0.0f;
#pragma unroll
    for (int r = 0; r < RS; ++r) {
      row_max[mt][r] = attn::neg_inf;
      row_sum[mt][r] = 0.0f;
    }
  }

  for (int nb = n_last; nb >= n_first; --nb) {
    const int n0 = nb * BN;
    const int buf = Stages == 2 ? (n_last - nb) & 1 : 0;
    const T* cK = sK + buf * BN * LD;
    const T* cV = sV + buf * BN * LD;
    async_copy_wait_all();
    block::sync();  // K(nb) (and Q) landed; every warp is done with the buffers it reads next
    if constexpr (Stages == 1) {
      attn::load_rows<BN, D, LD, Threads>(sV, v + std::int64_t{n0} * p.v_row, p.v_row, sk - n0, tid);
      async_copy_commit();
    } else if (nb > n_first) {
      T* nK = sK + (buf ^ 1) * BN * LD;
      T* nV = sV + (buf ^ 1) * BN * LD;
      attn::load_rows<BN, D, LD, Threads>(nK, k + std::int64_t{n0 - BN} * p.k_row, p.k_row, sk - (n0 - BN), tid);
      attn::load_rows<BN, D, LD, Threads>(nV, v + std::int64_t{n0 - BN} * p.v_row, p.v_row, sk - (n0 - BN), tid);
      async_copy_commit();
    }

    // S = Q K^T
    fragment<float, CV> acc_s[MA][NS];
#pragma unroll
    for (int mt = 0; mt < MA; ++mt)
#pragma unroll
      for (int j = 0; j < NS; ++j)
#pragma unroll
        for (int e = 0; e < CV; ++e) acc_s[mt][j].v[e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KQ; ++kk) {
      typename atom::a_frag fa[MA];
#pragma unroll
      for (int mt = 0; mt < MA; ++mt) atom::load_a(fa[mt], sQ + (row0 + mt * atom::M) * LD + kk * atom::K, LD, lane);
#pragma unroll
      for (int j = 0; j < NS; j += atom::b_group) {
        typename atom::b_frag fb[atom::b_group];
        atom::load_b_nk(fb, cK + j * atom::N * LD + kk * atom::K, LD, lane);
#pragma unroll
        for (int g = 0; g < atom::b_group; ++g)
#pragma unroll
          for (int mt = 0; mt < MA; ++mt) atom::mma(acc_s[mt][j + g], fa[mt], fb[g], acc_s[mt][j + g]);
      }
    }

    // Mask (only tiles that cross a boundary pay for the test). S stays unscaled: the scale is folded
    // into the exponent below (one FFMA per element), which needs scale > 0 (validated by the API).
    const bool need_mask = n0 + BN > sk || (p.window_right >= 0 && n0 + BN - 1 > m0 + diag + p.window_right) ||
                           (p.window_left >= 0 && n0 < m0 + BM - 1 + diag - p.window_left);
    if (need_mask) {
#pragma unroll
      for (int mt = 0; mt < MA; ++mt)
#pragma unroll
        for (int j = 0; j < NS; ++j)
#pragma unroll
          for (int e = 0; e < CV; ++e) {
            const int row = m0 + row0 + mt * atom::M + atom::c_m(lane, e);
            const int col = n0 + j * atom::N + atom::c_n(lane, e);
            const bool masked = col >= sk || (p.window_right >= 0 && col > row + diag + p.window_right) ||
                                (p.window_left >= 0 && col < row + diag - p.window_left);
            if (masked) acc_s[mt][j].v[e] = attn::neg_inf;
          }
    }

    // Online softmax: new row maxima (over this lane's values of the row, then the row's lanes).
#pragma unroll
    for (int mt = 0; mt < MA; ++mt) {
      float base[RS], corr[RS], sum[RS];
#pragma unroll
      for (int e = 0; e < CV; ++e) {
        if (attn::row_leader<atom>(e) != e) continue;
        float m = attn::neg_inf;
#pragma unroll
        for (int j = 0; j < NS; ++j)
#pragma unroll
          for (int f = 0; f < CV; ++f)
            if (attn::same_row<atom>(e, f)) m = fmaxf(m, acc_s[mt][j].v[f]);
#pragma unroll
        for (int x = 1; x < atom::c_row_lanes; x *= 2) m = fmaxf(m, warp<>::shfl_xor(m, x));
        const int r = attn::slot_of<atom>(e);
        const float m_new = fmaxf(row_max[mt][r], m * p.scale_log2);  // log2 units
        base[r] = m_new == attn::neg_inf ? 0.0f : m_new;  // a row fully masked so far stays 0, not NaN
        corr[r] = exp2_fast(row_max[mt][r] - base[r]);
        row_max[mt][r] = m_new;
        sum[r] = 0.0f;
      }
#pragma unroll
      for (int j = 0; j < NS; ++j)
#pragma unroll
        for (int e = 0; e < CV; ++e) {
          const int r = attn::slot_of<atom>(e);
          const float pv = exp2_fast(fmaf(acc_s[mt][j].v[e], p.scale_log2, -base[r]));
          acc_s[mt][j].v[e] = pv;
          sum[r] += pv;
        }
#pragma unroll
      for (int r = 0; r < RS; ++r) row_sum[mt][r] = row_sum[mt][r] * corr[r] + sum[r];
#pragma unroll
      for (int j = 0; j < NO; ++j)
#pragma unroll
        for (int e = 0; e < CV; ++e) acc_o[mt][j].v[e] *= corr[attn::slot_of<atom>(e)];
    }

    T* myP = sP + w * WM * LDP;
    if constexpr (!p_in_regs) {
#pragma unroll
      for (int mt = 0; mt < MA; ++mt)
#pragma unroll
        for (int j = 0; j < NS; ++j) attn::store_c<atom>(myP + mt * atom::M * LDP + j * atom::N, LDP, acc_s[mt][j], lane);
      warp<>::sync();
    }

    if constexpr (Stages == 1) {
      async_copy_wait_all();
      block::sync();  // V(nb) landed; every warp is done with K(nb)
      if (nb > n_first) {
        attn::load_rows<BN, D, LD, Threads>(sK, k + std::int64_t{n0 - BN} * p.k_row, p.k_row, sk - (n0 - BN), tid);
        async_copy_commit();
      }
    }

    // O += P V
#pragma unroll
    for (int kk = 0; kk < KP; ++kk) {
      typename atom::a_frag fa[MA];
#pragma unroll
      for (int mt = 0; mt < MA; ++mt) {
        if constexpr (p_in_regs) {
#pragma unroll
          for (int e = 0; e < atom::a_vals; e += 2) {
            const auto& c0 = acc_s[mt][kk * (atom::K / atom::N) + mma_layout::c_to_a_tile<atom>(e)];
            const auto& c1 = acc_s[mt][kk * (atom::K / atom::N) + mma_layout::c_to_a_tile<atom>(e + 1)];
            const std::uint32_t two =
                pack2<T>(c0.v[mma_layout::c_to_a_val<atom>(e)], c1.v[mma_layout::c_to_a_val<atom>(e + 1)]);
            std::memcpy(&fa[mt].v[e], &two, sizeof two);
          }
        } else {
          atom::load_a(fa[mt], myP + mt * atom::M * LDP + kk * atom::K, LDP, lane);
        }
      }
#pragma unroll
      for (int j = 0; j < NO; j += atom::b_group) {
        typename atom::b_frag fb[atom::b_group];
        atom::load_b_kn(fb, cV + kk * atom::K * LD + j * atom::N, LD, lane);
#pragma unroll
        for (int g = 0; g < atom::b_group; ++g)
#pragma unroll
          for (int mt = 0; mt < MA; ++mt) atom::mma(acc_o[mt][j + g], fa[mt], fb[g], acc_o[mt][j + g]);
      }
    }
  }

  // Epilogue: row sums over the row's lanes; O / l into this warp's rows of the Q tile.
  async_copy_wait_all();  // Q may still be in flight (copied by other threads) when the block had no key tile
  block::sync();
#pragma unroll
  for (int mt = 0; mt < MA; ++mt) {
    float inv[RS], lse[RS];
#pragma unroll
    for (int r = 0; r < RS; ++r) {
      float l = row_sum[mt][r];
#pragma unroll
      for (int x = 1; x < atom::c_row_lanes; x *= 2) l += warp<>::shfl_xor(l, x);
      inv[r] = l > 0.0f ? 1.0f / l : 0.0f;
      lse[r] = l > 0.0f ? (row_max[mt][r] + log2f(l)) * attn::ln2 : attn::neg_inf;
    }
    // Normalize: one factor per row (the C layout's rows are the same for every O tile).
    fragment<float, CV> scale;
#pragma unroll
    for (int e = 0; e < CV; ++e) scale.v[e] = inv[attn::slot_of<atom>(e)];
#pragma unroll
    for (int j = 0; j < NO; ++j) {
#pragma unroll
      for (int e = 0; e < CV; ++e) acc_o[mt][j].v[e] *= scale.v[e];
      attn::store_c<atom>(sQ + (row0 + mt * atom::M) * LD + j * atom::N, LD, acc_o[mt][j], lane);
    }
#pragma unroll
    for (int e = 0; e < CV; ++e) {
      const int r = row0 + mt * atom::M + atom::c_m(lane, e);
      if (p.lse != nullptr && attn::row_leader<atom>(e) == e && lane % atom::c_row_lanes == 0 && m0 + r < sq)
        p.lse[lse_base + h * p.lse_head + m0 + r] = lse[attn::slot_of<atom>(e)];
    }
  }
  block::sync();
  constexpr int per = 16 / static_cast<int>(sizeof(T));
  constexpr int chunks = D / per;
  if constexpr (Threads % chunks == 0) {
    constexpr int step = Threads / chunks;  // whole rows per pass: one column of 16-byte stores per thread
    const int c = tid % chunks;
#pragma unroll
    for (int r = tid / chunks; r < BM; r += step)
      if (m0 + r < sq) store_vec(o + std::int64_t{r} * p.o_row + c * per, load_vec<per>(sQ + r * LD + c * per));
  } else {
    for (int i = tid; i < BM * chunks; i += Threads) {
      const int r = i / chunks, c = i % chunks;
      if (m0 + r < sq) store_vec(o + std::int64_t{r} * p.o_row + c * per, load_vec<per>(sQ + r * LD + c * per));
    }
  }
}

}  // namespace impl
PK_DETAIL_TARGET_END
