// Attention forward, device code of the warp-specialized strategy (strategy::ws_wgmma_tma, sm_90a):
// FlashAttention-3's structure written on pk/portable's warpgroup MMA, tensor copies and mbarriers.
//
// A block owns BM = 64 * Consumers queries of one (batch, head) and has 1 + Consumers warpgroups:
//  - warpgroup 0, the producer, gives registers back (setmaxnreg) and one of its threads issues every
//    tensor copy: Q once, then for each key tile K and V into a ring of Stages buffers. Each buffer has a
//    "full" mbarrier (the copy's bytes, expect-tx) and an "empty" one (one arrival per consumer warp).
//  - consumer warpgroup c takes registers and owns query rows [64 c, 64 c + 64): per key tile (walked from
//    the last to the first, as the tiled strategy: the tile that needs the most masking comes first)
//      S = Q K^T          warpgroup MMA, both operands in shared memory (K-major), BN columns
//      mask, online softmax (attention_softmax.hpp over the warpgroup accumulator layout), P in registers
//      O += P V           warpgroup MMA, A = P from registers, B = V in shared memory (MN-major)
//    releasing K and V to the producer as soon as their products completed. Two overlaps (FlashAttention-3):
//    inside a warpgroup, S_i = Q K_i^T is issued together with O += P_{i-1} V_{i-1}, and the softmax of S_i
//    runs while the latter is still accumulating (O is rescaled after it completes); between two consumer
//    warpgroups, named barriers make them take turns issuing products (ping-pong), so that one's softmax
//    runs under the other's products.
//  - epilogue: O / rowsum rounded to T, through the warpgroup's rows of the Q tile to 16-byte stores; the LSE.
//
// Shared memory (dynamic, aligned to the 1024-byte swizzle pattern), tiles in pk::swizzled_tile layout
// (128-byte swizzle, the tensor maps' and the MMA descriptors' one description):
//   Q [BM][D] | K [Stages][BN][D] | V [Stages][BN][D] | O [BM][D] (persistent grid only) | barriers
// The persistent grid stages O in a tile of its own and hands the Q tile back to the producer (q_empty) as
// soon as the item's last S = Q K^T has completed: the next item's Q loads under this item's last softmax,
// P V and epilogue. One block per item stages O in the Q tile, which is free by then.
#pragma once
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/detail/attention_agent.hpp>
#include <pk/attention/detail/attention_call.hpp>
#include <pk/attention/detail/attention_mask.hpp>
#include <pk/attention/detail/attention_schedule.hpp>
#include <pk/attention/detail/attention_softmax.hpp>
#include <pk/portable/mma.hpp>
#include <pk/portable/pipeline.hpp>
#include <pk/portable/block.hpp>
#include <pk/portable/swizzle.hpp>
#include <pk/portable/warpgroup.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN
namespace impl {

//! The kernel's parameter block: the common parameters and the tensor maps of Q, K and V (rank 4:
//! head_dim, token, head, batch; varlen: batch 1 and tokens packed).
struct ws_params {
  attention::fwd_params p;
  tma_map q, k, v;
  //! The work items: m_blocks query blocks x heads x batch entries (attention_schedule.hpp: their order, and
  //! which a block of a persistent grid takes in each round). One item per block when the grid has one block
  //! per item.
  int m_blocks = 1, heads = 1, batch = 1;
  int items = 1;  //!< m_blocks x heads x batch, at most 2^31 - 1
};

namespace attn_ws {

//! Register budgets per role (setmaxnreg): the producer keeps what address arithmetic needs, the
//! consumers share the rest of the SM's 64 K registers (FlashAttention-3's flash_fwd_kernel_sm90.h: 24/240
//! with 2 consumer warpgroups, 32/160 with 3; 24*128 + 240*256 = 64512 and 32*128 + 160*384 = 65536).
template <int Consumers>
inline constexpr int producer_regs = Consumers == 2 ? 24 : 32;
template <int Consumers>
inline constexpr int consumer_regs = Consumers == 2 ? 240 : 160;

//! The online softmax's slack (log2 units, attn::online_softmax::scores) at head dimension D: with slack 8 a
//! row's subtrahend moves only when a tile's maximum passes it by more than a factor 256 in P, so that after
//! the first tiles O is rarely rescaled, and the rescale goes behind a warp vote (rescale_if_moved). Measured
//! on an H100 (bench/results/attention-h100-2026-12-06b.md, slack on every head dimension against none, one
//! call): at head_dim 256 (O's 128 values a thread against 40 scores of a 64 x 80 tile) 5-11% faster at 16k;
//! at 64 and 128 (O has half or as many values as the scores, and its multiplications hide under the tensor
//! work) up to 3.4% slower (the vote and branch sit on the critical path), so they keep the exact maximum.
template <int D>
inline constexpr int rescale_slack = D >= 256 ? 8 : 0;

//! Named barriers (id 0 is the block barrier; 16 per block): where the consumer warpgroups meet, and the
//! turn of consumer warpgroup c in the ping-pong (ids 2-3: only 2 consumer warpgroups ping-pong).
inline constexpr int consumers_barrier = 1;
PK_DEVICE PK_FORCEINLINE constexpr int turn_bar(int c) { return 2 + c; }
//! The barrier of consumer warpgroup c's epilogue (its 128 threads): ids 4-6.
PK_DEVICE PK_FORCEINLINE constexpr int epilogue_bar(int c) { return 4 + c; }

//! Shared-memory layout of one instance.
template <class T, int D, int BM, int BN, int Stages, bool Persistent>
struct smem_layout {
  using q_tile = swizzled_tile<T, BM, D>;
  using kv_tile = swizzled_tile<T, BN, D>;
  static constexpr int q_off = 0;
  static constexpr int k_off = q_tile::bytes;
  static constexpr int v_off = k_off + Stages * kv_tile::bytes;
  //! Where the epilogue stages O (a q_tile): its own tile in the persistent grid, else the Q tile.
  static constexpr int o_off = Persistent ? v_off + Stages * kv_tile::bytes : q_off;
  static constexpr int bar_off = v_off + Stages * kv_tile::bytes + (Persistent ? q_tile::bytes : 0);
  // q_full, q_empty, k_full[S], k_empty[S], v_full[S], v_empty[S]
  static constexpr int barriers = 2 + 4 * Stages;
  static constexpr int bytes = bar_off + barriers * static_cast<int>(sizeof(mbarrier));
  static_assert(kv_tile::bytes % q_tile::alignment == 0 && q_tile::bytes % q_tile::alignment == 0,
                "tiles keep the swizzle alignment");
  static_assert(barriers * sizeof(mbarrier) <= attention::ws_barrier_bytes, "the planner's barrier allowance");
  static_assert(bytes + attention::ws_align_slack <= static_cast<int>(q_tile::max_window_bytes),
                "descriptors advance by adding to their address field (swizzled_tile::k_major_step)");
  static_assert(bytes + attention::ws_align_slack ==
                    attention::ws_smem_bytes(Persistent ? attention::wsp(BM, BN) : attention::ws(BM, BN), D, sizeof(T)) -
                        attention::ws_barrier_bytes +
                        barriers * static_cast<int>(sizeof(mbarrier)),
                "the planner's shared-memory size is this layout's");
};

//! Masked scores of one tile pair to -inf (row0: the warpgroup's first row in the block).
template <int N>
PK_DEVICE PK_FORCEINLINE void apply_mask(wg_accum<N>& s, const attention::tile_mask& m, int row0, int t) {
  using L = wg_layout<N>;
#pragma unroll
  for (int e = 0; e < L::c_vals; ++e)
    if (!m.visible(row0 + L::c_m(t, e), L::c_n(t, e))) s.v[e] = impl::attn::neg_inf;
}

}  // namespace attn_ws

//! Persistent: the block walks items blockIdx.x, ... in rounds (a grid of one block per SM); otherwise it
//! computes item blockIdx.x alone and the compiler sees no loop (nothing kept live across items).
template <class T, int D, int BM, int BN, int Stages, bool Persistent>
PK_KERNEL PK_LAUNCH_BOUNDS_MIN(128 * (1 + BM / 64), 1) void attn_fwd_ws_kernel(const PK_GRID_CONSTANT ws_params wp) {
  constexpr int Consumers = BM / 64;
  static_assert(BM % 64 == 0 && (Consumers == 2 || Consumers == 3), "ws policy: 2 or 3 consumer warpgroups of 64 rows");
  static_assert(BN % 16 == 0 && BN <= 256 && D % 64 == 0 && D <= 256, "ws policy: whole k16 steps, N <= 256");
  if constexpr (!arch_has_wgmma || !arch_has_tma) {
    // Instantiated for every pass of a fat binary; only the sm_90a pass has code. The planner never
    // launches it elsewhere (its candidates are unavailable there): a launch that does is an error, not an
    // output left unwritten.
    trap("attn_fwd_ws_kernel: launched on an arch without warpgroup MMA and tensor copies");
  } else {
    using L = attn_ws::smem_layout<T, D, BM, BN, Stages, Persistent>;
    using q_tile = typename L::q_tile;
    using kv_tile = typename L::kv_tile;
    const attention::fwd_params& p = wp.p;

    auto* base = dynamic_shared<unsigned char>();
    const std::uint32_t base_addr = shared_address(base);
    unsigned char* smem = base + ((q_tile::alignment - base_addr % q_tile::alignment) % q_tile::alignment);
    const std::uint32_t smem_addr = shared_address(smem);
    mbarrier* bars = reinterpret_cast<mbarrier*>(smem + L::bar_off);
    mbarrier* q_full = bars;
    mbarrier* q_empty = bars + 1;
    mbarrier* k_full = bars + 2;
    mbarrier* k_empty = bars + 2 + Stages;
    mbarrier* v_full = bars + 2 + 2 * Stages;
    mbarrier* v_empty = bars + 2 + 3 * Stages;

    const int tid = thread_rank();
    const int wg = tid / warpgroup_threads;
    const int t = tid % warpgroup_threads;
    if (tid == 0) {
      mbarrier_init(q_full, 1);
      // Persistent grid: one arrival per consumer thread once the item's last S = Q K^T has completed.
      mbarrier_init(q_empty, Consumers * warpgroup_threads);
      for (int s = 0; s < Stages; ++s) {
        mbarrier_init(&k_full[s], 1);
        mbarrier_init(&v_full[s], 1);
        // One arrival per consumer warp: each warp releases a buffer after its own wgmma.wait_group.
        mbarrier_init(&k_empty[s], 4 * Consumers);
        mbarrier_init(&v_empty[s], 4 * Consumers);
      }
      mbarrier_init_fence();
    }
    block::sync();

    // The block's work items, in the same order in every role: each role walks them with its own count of
    // items (the Q barriers' phase) and of key tiles (the K/V ring's stage and phase), which carry over
    // from one item to the next.
    const int items = wp.items;  // at most 2^31 - 1 (the launch checks)
    struct item {
      attn::block_rows<T, BM> br;
      int h, b, n_first, n_last;
    };
    const auto item_of = [&](int lin) {
      const attention::work_item w = attention::work_item_of(lin, wp.m_blocks, wp.heads, wp.batch, p.l2_group);
      item it;
      it.h = w.h;
      it.b = w.b;
      it.br = attn::block_rows<T, BM>::locate(p, w.mb, w.h, w.b);
      const attention::key_tiles range =
          attention::key_tiles_of_block(it.br.m0, BM, BN, it.br.sq, it.br.sk, p.window_left, p.window_right);
      it.n_first = static_cast<int>(range.first);
      it.n_last = static_cast<int>(range.last);
      return it;
    };

    if (wg == 0) {
      // ---- producer ----
      wg_set_registers<attn_ws::producer_regs<Consumers>, false>();
      if (t == 0) {
        int n_items = 0, kv = 0;  // items and key tiles loaded so far
        for (int k = 0; (Persistent || k == 0) && k * static_cast<int>(grid_dim().x) < items; ++k) {
          const int lin = static_cast<int>(attention::item_of_round(k, block_idx().x, grid_dim().x));
          if (lin >= items) continue;
          const item it = item_of(lin);
          if (it.br.m0 >= it.br.sq) continue;  // varlen: a sequence shorter than the longest
          const int hk = it.h / p.group;
          // Token coordinates of the item's first query and key 0 in the tensor maps (varlen: packed).
          const int q_tok0 = (p.cu_q != nullptr ? p.cu_q[it.b] : 0) + it.br.m0;
          const int k_tok0 = p.cu_k != nullptr ? p.cu_k[it.b] : 0;
          const int bz = p.cu_q != nullptr ? 0 : it.b;
          mbarrier_wait(q_empty, (n_items & 1) ^ 1);  // the last item's products are done with the Q tile
          mbarrier_arrive_expect_tx(q_full, q_tile::bytes);
#pragma unroll
          for (int pn = 0; pn < q_tile::panels; ++pn)
            tma_load<4>(&wp.q, smem + L::q_off + pn * q_tile::panel_bytes, q_full, {pn * q_tile::span_elems, q_tok0, it.h, bz});
          ++n_items;
          for (int nb = it.n_last; nb >= it.n_first; --nb, ++kv) {
            const int s = kv % Stages, phase = (kv / Stages) & 1;
            const int tok = k_tok0 + nb * BN;
            mbarrier_wait(&k_empty[s], phase ^ 1);
            mbarrier_arrive_expect_tx(&k_full[s], kv_tile::bytes);
#pragma unroll
            for (int pn = 0; pn < kv_tile::panels; ++pn)
              tma_load<4>(&wp.k, smem + L::k_off + s * kv_tile::bytes + pn * kv_tile::panel_bytes, &k_full[s],
                          {pn * kv_tile::span_elems, tok, hk, bz});
            mbarrier_wait(&v_empty[s], phase ^ 1);
            mbarrier_arrive_expect_tx(&v_full[s], kv_tile::bytes);
#pragma unroll
            for (int pn = 0; pn < kv_tile::panels; ++pn)
              tma_load<4>(&wp.v, smem + L::v_off + s * kv_tile::bytes + pn * kv_tile::panel_bytes, &v_full[s],
                          {pn * kv_tile::span_elems, tok, hk, bz});
          }
        }
      }
    } else {
      // ---- consumer warpgroup c: rows [64 c, 64 c + 64) of the block ----
      wg_set_registers<attn_ws::consumer_regs<Consumers>, true>();
      using s_layout = wg_layout<BN>;
      using o_layout = wg_layout<D>;
      using rows_t = c_rows<s_layout>;
      using softmax_t = attn::online_softmax<s_layout, 1>;
      int n_items = 0, kv = 0;  // items and key tiles consumed so far
      for (int k = 0; (Persistent || k == 0) && k * static_cast<int>(grid_dim().x) < items; ++k) {
        const int lin = static_cast<int>(attention::item_of_round(k, block_idx().x, grid_dim().x));
        if (lin >= items) continue;
        const item it = item_of(lin);
        if (it.br.m0 >= it.br.sq) continue;  // varlen: a sequence shorter than the longest (as the producer)
        // The thread's rank and warpgroup, fresh for each item: what the item's body derives from them (the
        // accumulator layouts' shared-memory offsets, the Q tile's MMA descriptors) is not kept live across
        // the loop (pk::opaque).
        const int rank = opaque(thread_rank());
        const int t = rank % warpgroup_threads;
        const int c = rank / warpgroup_threads - 1;
        const int row0 = 64 * c;
        const std::uint32_t tiles_addr = static_cast<std::uint32_t>(opaque(static_cast<int>(smem_addr)));
        const std::uint32_t q_addr = tiles_addr + L::q_off;
        const auto& br = it.br;
        const int n_first = it.n_first, n_last = it.n_last;
        wg_accum<D> acc_o[1][1];
        acc_o[0][0].fill(0.0f);
        typename softmax_t::stats row_max, row_sum;
        softmax_t softmax{row_max, row_sum};
        softmax.init();

        mbarrier_wait(q_full, n_items & 1);
        const int n_tiles = n_last - n_first + 1;
        // Persistent grid: the Q tile goes back to the producer once this thread's last read of it (the
        // item's last S = Q K^T, an async-proxy read like the tensor copy that overwrites it) has completed.
        const auto release_q = [&] {
          if constexpr (Persistent) mbarrier_arrive(q_empty);
        };
        if (n_tiles <= 0) release_q();
        // Tile i of this item is the ring's (kv + i)-th.
        const auto stage_of = [kv0 = kv](int i) { return (kv0 + i) % Stages; };
        const auto phase_of = [kv0 = kv](int i) { return ((kv0 + i) / Stages) & 1; };
        const auto k_addr = [&](int i) { return tiles_addr + L::k_off + stage_of(i) * kv_tile::bytes; };
        const auto v_addr = [&](int i) { return tiles_addr + L::v_off + stage_of(i) * kv_tile::bytes; };
        // Ping-pong (2 consumer warpgroups): the warpgroups take turns issuing their products, so that one
        // runs its softmax while the other's products keep the tensor cores busy. Warpgroup c waits at
        // barrier turn_bar(c) for its turn and, once its products are issued, arrives at the other's. The
        // turns are counted so that every wait has exactly one arrival: warpgroup 1 opens the first turn of
        // warpgroup 0 and leaves out its arrival after its own last turn.
        constexpr bool pingpong = Consumers == 2;
        const int turns = n_tiles > 0 ? n_tiles + 1 : 0;  // S_0, then (S_i, P_{i-1} V_{i-1}), then P_last V_last
        int turn = 0;
        const auto turn_begin = [&] {
          if constexpr (pingpong) named_barrier::sync(attn_ws::turn_bar(c), 2 * warpgroup_threads);
        };
        const auto turn_end = [&] {
          if constexpr (pingpong)
            if (c == 0 || turn + 1 < turns) named_barrier::arrive(attn_ws::turn_bar(1 - c), 2 * warpgroup_threads);
          ++turn;
        };
        if (pingpong && c == 1 && turns > 0) named_barrier::arrive(attn_ws::turn_bar(0), 2 * warpgroup_threads);

        // Operand descriptors: one per tile, advanced by a constant per K step (swizzled_tile::*_step).
        const std::uint64_t q_desc = q_tile::k_major_desc(q_addr, row0, 0);
        const auto issue_qk = [&](wg_accum<BN>& acc, int i) {
          mbarrier_wait(&k_full[stage_of(i)], phase_of(i));
          const std::uint64_t k_desc = kv_tile::k_major_desc(k_addr(i), 0, 0);
          wg_fence();
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk)
            wg_mma_ss<T, BN>(acc, q_desc + q_tile::k_major_step(kk), k_desc + kv_tile::k_major_step(kk), kk > 0);
          wg_commit();
        };
        std::uint32_t pa[BN / 16][4];  // P of the previous tile: the A operand of its P V
        const auto issue_pv = [&](int i) {
          mbarrier_wait(&v_full[stage_of(i)], phase_of(i));
          const std::uint64_t v_desc = kv_tile::mn_major_desc(v_addr(i), 0);
          wg_fence_operand(acc_o[0][0]);
          wg_fence();
#pragma unroll
          for (int kk = 0; kk < BN / 16; ++kk)
            wg_mma_rs<T, D, /*B MN-major*/ true>(acc_o[0][0], pa[kk], v_desc + kv_tile::mn_major_step(kk), true);
          wg_commit();
        };
        const auto release = [&](mbarrier* empty, int i) {
          if (t % 32 == 0) mbarrier_arrive(&empty[stage_of(i)]);  // one arrival per warp, after its wait_group
        };
        // Scores of tile i (key tile nb = n_last - i) into P in place, masked where the tile crosses a
        // boundary; corr: what O must be scaled by before P V of this tile is added.
        float corr[1][rows_t::slots];
        const auto softmax_tile = [&](wg_accum<BN> (&acc)[1][1], int i) {
          const int n0 = (n_last - i) * BN;
          const attention::tile_mask mask = attention::tile_mask_of(br.m0, n0, br.sq, br.sk, p.window_left, p.window_right);
          if (mask.needs_mask<BM, BN>()) attn_ws::apply_mask(acc[0][0], mask, row0, t);
          softmax.template scores<attn_ws::rescale_slack<D>>(acc, p.scale_log2, corr);
        };

        if (n_tiles > 0) {
          wg_accum<BN> acc_s[1][1];
          turn_begin();
          issue_qk(acc_s[0][0], 0);
          turn_end();
          wg_wait<0>();
          wg_fence_operand(acc_s[0][0]);
          release(k_empty, 0);
          if (n_tiles == 1) release_q();
          if (p.cu_k != nullptr && br.sk - n_last * BN < BN) {
            // Varlen: the rows of the first (boundary) V tile past the sequence's last key are the next
            // sequence's (or whatever follows the packed tokens). P is exactly 0 there, but 0 * inf or NaN is
            // NaN: zero them before any P V reads the tile. The consumer warpgroups share the buffer: they split
            // the rows, fence for the MMA's (async proxy) reads, and meet at a named barrier.
            const int keys = br.sk - n_last * BN;
            constexpr int chunks = D * static_cast<int>(sizeof(T)) / 16;
            unsigned char* vt = smem + L::v_off + stage_of(0) * kv_tile::bytes;
            mbarrier_wait(&v_full[stage_of(0)], phase_of(0));
            for (int k = tid - warpgroup_threads; k < (BN - keys) * chunks; k += Consumers * warpgroup_threads) {
              const int r = keys + k / chunks, ch = k % chunks;
              store_vec(reinterpret_cast<std::uint32_t*>(vt + kv_tile::offset(r, ch * (16 / static_cast<int>(sizeof(T))))),
                        vec<std::uint32_t, 4>{});
            }
            fence_proxy_async_shared();
            named_barrier::sync(attn_ws::consumers_barrier, Consumers * warpgroup_threads);
          }
          softmax_tile(acc_s, 0);  // O is still 0: nothing to rescale
#pragma unroll
          for (int kk = 0; kk < BN / 16; ++kk) wg_accum_to_a<T>(pa[kk], acc_s[0][0], kk);

          for (int i = 1; i < n_tiles; ++i) {
            // S_i = Q K_i^T and O += P_{i-1} V_{i-1} in flight together; the softmax of S_i overlaps the latter.
            turn_begin();
            issue_qk(acc_s[0][0], i);
            issue_pv(i - 1);
            turn_end();
            wg_wait<1>();  // S_i (the older group) done
            wg_fence_operand(acc_s[0][0]);
            release(k_empty, i);
            if (i == n_tiles - 1) release_q();
            softmax_tile(acc_s, i);
            wg_wait<0>();  // P_{i-1} V_{i-1} done: O and the P registers are free
            wg_fence_operand(acc_o[0][0]);
            release(v_empty, i - 1);
            // The vote only pays where rows rarely move (rescale_slack): with the exact maximum it made the
            // d64 rows up to 8% and d128 causal 16k 2% slower on the H200
            // (bench/results/attention-h200-2026-12-03-qrelease.md).
            if constexpr (attn_ws::rescale_slack<D> > 0)
              softmax.template rescale_if_moved<o_layout>(acc_o, corr);
            else
              softmax.template rescale<o_layout>(acc_o, corr);
#pragma unroll
            for (int kk = 0; kk < BN / 16; ++kk) wg_accum_to_a<T>(pa[kk], acc_s[0][0], kk);
          }
          turn_begin();
          issue_pv(n_tiles - 1);
          turn_end();
          wg_wait<0>();
          wg_fence_operand(acc_o[0][0]);
          release(v_empty, n_tiles - 1);
        }

        // ---- epilogue: O / l rounded to T through this warpgroup's rows of the O staging tile (the Q tile
        // when one block computes one item: free once its last S = Q K^T completed), then 16-byte row
        // stores: stores straight from the accumulator layout write 4 bytes per thread 8 rows apart, and each
        // waits on the previous one's registers (measured with ncu on the H200 at seqlen 1k: 38% of the
        // warps' stall cycles); LSE of the rows this thread leads ----
        using rows = c_rows<o_layout>;
        float inv[rows::slots], lse[rows::slots];
        softmax.finish(0, inv, lse);
        unsigned char* const ot = smem + L::o_off;
        // Every warp's last MMA read of Q is done (O staged in Q), and every thread is past the previous
        // item's reads of the staging tile (persistent grid).
        named_barrier::sync(attn_ws::epilogue_bar(c), warpgroup_threads);
#pragma unroll
        for (int e = 0; e < o_layout::c_vals; e += 2) {
          const float f = inv[rows::slot(e)];
          const std::uint32_t two = pack2<T>(acc_o[0][0].v[e] * f, acc_o[0][0].v[e + 1] * f);
          __builtin_memcpy(ot + q_tile::offset(row0 + o_layout::c_m(t, e), o_layout::c_n(t, e)), &two, sizeof two);
        }
        named_barrier::sync(attn_ws::epilogue_bar(c), warpgroup_threads);
        {
          constexpr int per = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte store
          constexpr int chunks = D / per;                         // per row
          T* const o = br.o;
#pragma unroll
          for (int k = t; k < 64 * chunks; k += warpgroup_threads) {
            const int r = row0 + k / chunks, ch = k % chunks;
            if (br.m0 + r < br.sq)
              store_vec(o + std::int64_t{r} * p.o_row + ch * per,
                        load_vec<per>(reinterpret_cast<const T*>(ot + q_tile::offset(r, ch * per))));
          }
        }
        if (p.lse != nullptr && t % o_layout::c_row_lanes == 0) {
#pragma unroll
          for (int e = 0; e < o_layout::c_vals; ++e) {
            const int r = row0 + o_layout::c_m(t, e);
            if (rows::is_leader(e) && br.m0 + r < br.sq) p.lse[br.lse_base + br.m0 + r] = lse[rows::slot(e)];
          }
        }
        kv += n_tiles > 0 ? n_tiles : 0;
        ++n_items;
      }
    }
  }
}

}  // namespace impl
PK_DETAIL_TARGET_END
