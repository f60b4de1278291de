// The online softmax of attention (FlashAttention-2), over accumulator fragments in any C layout
// (pk::c_rows<Layout>: the MMA atoms' layouts, a warpgroup accumulator layout alike).
//
// Per row slot (a distinct row of C held by this lane) it keeps the running maximum m, in log2 units
// (S * scale * log2(e): the scale is folded into the exponent, one FFMA per element, which needs
// scale > 0, validated by the API), and this lane's partial sum l of exp2(S' - m). Per key tile:
//   m' = max(m, rowmax(S) * scale_log2)        (over the lane's values of the row, then the row's lanes)
//   P  = exp2(S * scale_log2 - m'),  l = l * exp2(m - m') + rowsum_lane(P),  O *= exp2(m - m')
// The FFMA computes S * scale_log2 - m' exactly before it rounds, so the rounding error of the product in m'
// (up to 2^-24 of it) comes back in the argument: harmless for ordinary scores, but past 2^31 (queries and keys
// of magnitude 10^4 at head_dim 128) it overflows exp2 (P = inf, a NaN row) or underflows the largest score's P
// to 0 (LSE -inf, output 0). A row with |m'| > big_scores (2^16: below it the argument's error is at most 2^-8,
// under a 16-bit P's rounding) rounds its products first (mul_rn) and subtracts with the factor 1 in the same
// FFMA: every argument is then <= 0 (<= Slack, see scores) and the largest score's is exact. Measured on the
// H200 against the softmax without this path (bench/results/decode-h200-2026-12-02.md): within 1-2% at
// head_dim 128, 3-6% at head_dim 64 on 16k and 1k causal; two loops behind a warp vote spread the cost more
// evenly but spilled in the sm_90a tiled kernel, and a vote-guarded rewrite of the huge rows cost more registers
// on sm_80 (compile matrix, same day).
// A row with no visible key so far has m' = -inf; it then uses 0 as the subtrahend, so P = 0 and the
// correction exp2(-inf - 0) = 0 stay finite (never -inf - -inf = NaN). At the end (finish): the row's
// lanes add their sums; O / l, LSE = (m + log2 l) * ln 2; a row with l = 0 (fully masked) gives
// 1/l := 0 (output 0) and LSE = -inf.
#pragma once
#include <pk/portable/math.hpp>
#include <pk/portable/tile.hpp>
#include <pk/portable/warp.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl::attn {

inline constexpr float neg_inf = -__builtin_huge_valf();
inline constexpr float big_scores = 0x1p16f;
using ::pk::ln2;
using ::pk::log2e;

//! Row statistics of MT row blocks of accumulators in `Layout` (one fragment grid [MT][*] of Frag, whose
//! values v[e] follow Layout's C layout). A view: the statistics are the caller's arrays
//! (float[MT][slots] each; clang's AMDGPU back end keeps arrays held inside a struct in scratch memory,
//! measured on gfx942: 52 more bytes per lane, while plain local arrays stay in registers).
template <class Layout, int MT>
struct online_softmax {
  using rows = c_rows<Layout>;
  static constexpr int slots = rows::slots;
  static constexpr int vals = Layout::c_vals;
  static_assert(rows::lane_independent(), "online_softmax: the rows of the C layout must not depend on the lane");
  using stats = float[MT][slots];

  stats& row_max;  //!< running maximum, log2 units
  stats& row_sum;  //!< this lane's partial sum

  //! Whether OLayout's row slots are this layout's: slot r is the same row (for every lane).
  template <class OLayout>
  static constexpr bool same_row_slots() {
    if (c_rows<OLayout>::slots != slots) return false;
    // The k-th leader in value order is slot k's (c_rows numbers slots by their leaders); leaders are
    // lane-independent (c_rows::lane_independent).
    int lead[slots > 0 ? slots : 1] = {}, olead[slots > 0 ? slots : 1] = {};
    for (int v = 0, k = 0; v < vals; ++v)
      if (rows::is_leader(v)) lead[k++] = v;
    for (int w = 0, k = 0; w < OLayout::c_vals; ++w)
      if (c_rows<OLayout>::is_leader(w)) olead[k++] = w;
    for (int l = 0; l < Layout::lanes; ++l)
      for (int k = 0; k < slots; ++k)
        if (Layout::c_m(l, lead[k]) != OLayout::c_m(l, olead[k])) return false;
    return true;
  }

  PK_DEVICE PK_FORCEINLINE void init() {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int r = 0; r < slots; ++r) {
        row_max[i][r] = neg_inf;
        row_sum[i][r] = 0.0f;
      }
  }

  //! One key tile: turns the (masked, unscaled) scores S into P in place and rescales the output O.
  //! O's fragments may be of another C layout (OLayout: a warpgroup MMA of another N) with the same rows.
  template <class OLayout = Layout, class Frag, class OFrag, int NS, int NO>
  PK_DEVICE PK_FORCEINLINE void step(Frag (&s)[MT][NS], OFrag (&o)[MT][NO], float scale_log2) {
    float corr[MT][slots];
    scores(s, scale_log2, corr);
    rescale<OLayout>(o, corr);
  }

  //! The first half of step: S into P, the running maximum and sums updated; `corr` receives the factor
  //! O must be multiplied by before the next P V is added (rescale). Split so that a product still
  //! accumulating into O can overlap this part.
  //! Slack (log2 units, >= 0): the row's subtrahend m moves only when the tile's maximum passes it by more
  //! than Slack, so P <= 2^Slack and corr is exactly 1 for a row that did not move (rescale_if_moved then
  //! skips O's multiplications; conditional rescaling, research/HOPPER_ATTENTION.md on FlashAttention-4).
  //! O / l and the LSE are the same function of the scores for any Slack: l and O share the stale m. With
  //! Slack 8, P stays within 256 (finite in fp16 and bf16), and the rounding of P, l and O is relative.
  template <int Slack = 0, class Frag, int NS>
  PK_DEVICE PK_FORCEINLINE void scores(Frag (&s)[MT][NS], float scale_log2, float (&corr)[MT][slots]) {
    static_assert(Slack >= 0 && Slack <= 8, "online_softmax::scores: P = exp2(S' - m) must stay within 2^8");
    float base[MT][slots], sum[MT][slots], factor[MT][slots];
    bool big[MT][slots];
    bool any_big = false;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
      for (int e = 0; e < vals; ++e) {
        if (!rows::is_leader(e)) continue;
        float m = neg_inf;
#pragma unroll
        for (int j = 0; j < NS; ++j)
#pragma unroll
          for (int f = 0; f < vals; ++f)
            if (rows::same_row(e, f)) m = fmaxf(m, s[i][j].v[f]);
#pragma unroll
        for (int x = 1; x < Layout::c_row_lanes; x *= 2) m = fmaxf(m, warp<>::shfl_xor(m, x));
        const int r = rows::slot(e);
        const float m_tile = mul_rn(m, scale_log2);
        // Slack 0: fmaxf. Otherwise move only past m + Slack (-inf + Slack is -inf: the first visible key
        // moves a row; a NaN maximum moves nothing, as fmaxf ignores it).
        const float m_new = Slack == 0 ? fmaxf(row_max[i][r], m_tile)
                                       : (m_tile > row_max[i][r] + static_cast<float>(Slack) ? m_tile : row_max[i][r]);
        base[i][r] = m_new == neg_inf ? 0.0f : m_new;  // a row fully masked so far stays 0, not NaN
        big[i][r] = fabsf(base[i][r]) > big_scores;
        factor[i][r] = big[i][r] ? 1.0f : scale_log2;
        any_big |= big[i][r];
        corr[i][r] = exp2_fast(row_max[i][r] - base[i][r]);
        row_max[i][r] = m_new;
        sum[i][r] = 0.0f;
      }
    }
    // Rows with huge scores: their products rounded first, then exponentiated with the factor 1 (one loop for
    // every row; this lane's branch is taken only for such rows).
    if (any_big) {
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NS; ++j)
#pragma unroll
          for (int e = 0; e < vals; ++e)
            if (big[i][rows::slot(e)]) s[i][j].v[e] = mul_rn(s[i][j].v[e], scale_log2);
    }
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
      for (int j = 0; j < NS; ++j)
#pragma unroll
        for (int e = 0; e < vals; ++e) {
          const int r = rows::slot(e);
          const float pv = exp2_fast(fmaf(s[i][j].v[e], factor[i][r], -base[i][r]));
          s[i][j].v[e] = pv;
          sum[i][r] += pv;
        }
#pragma unroll
      for (int r = 0; r < slots; ++r) row_sum[i][r] = row_sum[i][r] * corr[i][r] + sum[i][r];
    }
  }

  //! The second half of step: O *= corr, row by row.
  template <class OLayout = Layout, class OFrag, int NO>
  PK_DEVICE PK_FORCEINLINE void rescale(OFrag (&o)[MT][NO], const float (&corr)[MT][slots]) const {
    using orows = c_rows<OLayout>;
    static_assert(same_row_slots<OLayout>(), "online_softmax: O's rows per lane must be S's");
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NO; ++j)
#pragma unroll
        for (int e = 0; e < OLayout::c_vals; ++e) o[i][j].v[e] *= corr[i][orows::slot(e)];
  }

  //! rescale, skipped when no row of the warp moved its maximum (every corr is 1): a warp collective. For
  //! kernels whose O is large beside a tile's scores (decode: O's 16 rows x head_dim per warp against 16 x 16
  //! scores, so the multiplications would cost as much as the tile's products), late in a long row the
  //! maximum rarely moves.
  template <class OLayout = Layout, class OFrag, int NO>
  PK_DEVICE PK_FORCEINLINE void rescale_if_moved(OFrag (&o)[MT][NO], const float (&corr)[MT][slots]) const {
    bool moved = false;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int r = 0; r < slots; ++r) moved |= corr[i][r] != 1.0f;
    if (warp<>::any(moved)) rescale<OLayout>(o, corr);
  }

  //! The end of the rows of block i: per slot, the factor that normalises O (0 for a fully masked row)
  //! and the LSE in natural-log units (-inf for a fully masked row). A warp collective (row lanes).
  PK_DEVICE PK_FORCEINLINE void finish(int i, float (&inv)[slots], float (&lse)[slots]) const {
#pragma unroll
    for (int r = 0; r < slots; ++r) {
      float l = row_sum[i][r];
#pragma unroll
      for (int x = 1; x < Layout::c_row_lanes; x *= 2) l += warp<>::shfl_xor(l, x);
      inv[r] = l > 0.0f ? 1.0f / l : 0.0f;
      lse[r] = l > 0.0f ? (row_max[i][r] + log2f(l)) * ln2 : neg_inf;
    }
  }
};

}  // namespace impl::attn
PK_DETAIL_TARGET_END
