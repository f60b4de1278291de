// The host-callable pieces the tiled attention kernel is built from (pk/attention/detail/attention_mask.hpp):
// the key tiles a query block visits and the per-element mask of one (query block, key tile) pair,
// against the masking rule written here in 64-bit arithmetic:
//   query row sees key col iff col < seqlen_k, and with diag = seqlen_k - seqlen_q,
//   col - row <= diag + window_right (window_right >= 0), col - row >= diag - window_left (window_left >= 0).
// Exact comparisons (integers). Exhaustive over a grid of ragged sizes, windows and tiles; then the sizes
// and windows near 2^31 whose int sums overflowed (sampled blocks and tiles, every element of those).
#include <pk/attention/detail/attention_mask.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using i64 = std::int64_t;

struct problem {
  i64 sq, sk, wl, wr;
};

bool visible_ref(const problem& p, i64 row, i64 col) {
  const i64 diag = p.sk - p.sq;
  if (col < 0 || col >= p.sk) return false;
  if (p.wr >= 0 && col - row > diag + p.wr) return false;
  if (p.wl >= 0 && col - row < diag - p.wl) return false;
  return true;
}

// Visible keys [lo, hi] of one query row by the rule (lo > hi: none), in closed form.
void row_keys_ref(const problem& p, i64 row, i64& lo, i64& hi) {
  const i64 diag = p.sk - p.sq;
  lo = p.wl >= 0 ? std::max<i64>(0, row + diag - p.wl) : 0;
  hi = p.wr >= 0 ? std::min<i64>(p.sk - 1, row + diag + p.wr) : p.sk - 1;
}

// The block's key tiles cover every key its rows see; first / last are exact where the block's first /
// last row sees a key (their window ends are the block's).
void check_range(const problem& p, i64 m0, int bm, int bn) {
  SCOPED_TRACE(testing::Message() << "sq " << p.sq << " sk " << p.sk << " wl " << p.wl << " wr " << p.wr << " m0 " << m0
                                  << " block " << bm << "x" << bn);
  const pk::attention::key_tiles t = pk::attention::key_tiles_of_block(m0, bm, bn, p.sq, p.sk, p.wl, p.wr);
  const i64 m_end = std::min<i64>(m0 + bm, p.sq);
  i64 any_lo = p.sk, any_hi = -1;
  for (i64 r = m0; r < m_end; ++r) {
    i64 lo, hi;
    row_keys_ref(p, r, lo, hi);
    if (lo > hi) continue;
    any_lo = std::min(any_lo, lo);
    any_hi = std::max(any_hi, hi);
    if (r == m0) EXPECT_EQ(t.first, lo / bn) << "first tile of a block whose first row sees keys";
    if (r == m_end - 1) EXPECT_EQ(t.last, hi / bn) << "last tile of a block whose last row sees keys";
  }
  if (any_hi >= 0) {
    EXPECT_LE(t.first, any_lo / bn);
    EXPECT_GE(t.last, any_hi / bn);
    EXPECT_EQ(t.count(), t.last - t.first + 1);
  }
  if (t.last >= t.first) {
    EXPECT_GE(t.first, 0);
    EXPECT_LT(t.last * bn, p.sk) << "a tile past the keys";
  } else {
    EXPECT_EQ(t.count(), 0);
  }
}

// Every element of the pair (rows past seqlen_q included: the kernel masks them alike) and needs_mask
// exactly when some element is masked.
template <int BM, int BN>
void check_pair(const problem& p, i64 m0, i64 n0) {
  SCOPED_TRACE(testing::Message() << "sq " << p.sq << " sk " << p.sk << " wl " << p.wl << " wr " << p.wr << " m0 " << m0
                                  << " n0 " << n0 << " block " << BM << "x" << BN);
  const pk::attention::tile_mask m = pk::attention::tile_mask_of(m0, n0, p.sq, p.sk, p.wl, p.wr);
  bool any_masked = false;
  int wrong = 0;
  for (int q = 0; q < BM; ++q)
    for (int k = 0; k < BN; ++k) {
      const bool ref = visible_ref(p, m0 + q, n0 + k);
      any_masked = any_masked || !ref;
      if (m.visible(q, k) != ref && ++wrong <= 5) ADD_FAILURE() << "element (" << q << ", " << k << "): visible " << !ref;
    }
  EXPECT_EQ(wrong, 0);
  const bool needs = m.template needs_mask<BM, BN>();
  EXPECT_EQ(needs, any_masked);
}

template <int BM, int BN>
void check_problem(const problem& p) {
  for (i64 m0 = 0; m0 < p.sq; m0 += BM) {
    check_range(p, m0, BM, BN);
    const pk::attention::key_tiles t = pk::attention::key_tiles_of_block(m0, BM, BN, p.sq, p.sk, p.wl, p.wr);
    for (i64 nb = t.first; nb <= t.last; ++nb) check_pair<BM, BN>(p, m0, nb * BN);
  }
}

TEST(Portable_AttentionMask, RaggedSizesAllWindows) {
  const std::vector<i64> lens{1, 7, 31, 32, 33, 64, 65, 127, 130, 203};
  const std::vector<i64> windows{-1, 0, 1, 5, 63, 64, 200};
  for (i64 sq : lens)
    for (i64 sk : lens)
      for (i64 wl : windows)
        for (i64 wr : windows) {
          const problem p{sq, sk, wl, wr};
          check_problem<128, 64>(p);
          check_problem<64, 32>(p);
          check_problem<32, 32>(p);
          if (HasFailure()) return;
        }
}

// Lengths and windows near 2^31: in int, last query + (seqlen_k - seqlen_q) + window_right overflowed.
TEST(Portable_AttentionMask, LengthsAndWindowsNearIntMax) {
  constexpr i64 big = 2147483647;  // INT_MAX: the largest window and sequence length the API accepts
  const std::vector<problem> cases{
      {big, big, -1, big},       {big, big, big, big},      {big, big, big, 0},     {big, 1, -1, big},
      {1, big, big, big},        {big, 1000, big, 0},       {1000, big, 0, big},    {big - 5, big, big - 3, big - 7},
      {big, big - 100, 50, big}, {big, big, 0, 0},          {1 << 30, big, big, big},
  };
  constexpr int BM = 128, BN = 64;
  for (const problem& p : cases) {
    const i64 last_block = (p.sq - 1) / BM * BM;
    for (i64 m0 : {i64{0}, last_block / 2 / BM * BM, last_block}) {
      check_range(p, m0, BM, BN);
      const pk::attention::key_tiles t = pk::attention::key_tiles_of_block(m0, BM, BN, p.sq, p.sk, p.wl, p.wr);
      if (t.last < t.first) continue;
      // The first and last tiles, the tiles where the block's diagonal band starts and ends, and the middle.
      const i64 diag = p.sk - p.sq;
      std::vector<i64> tiles{t.first, t.last, (t.first + t.last) / 2};
      for (i64 key : {m0 + diag, m0 + BM - 1 + diag})
        if (key >= t.first * BN && key < (t.last + 1) * BN) tiles.push_back(key / BN);
      for (i64 nb : tiles) check_pair<BM, BN>(p, m0, nb * BN);
    }
    if (HasFailure()) return;
  }
}

// The planner's count (attention_api.cpp) and the kernel's walk are the same function: usable in constant
// expressions on the host.
static_assert(pk::attention::key_tiles_of_block(0, 128, 64, 1000, 1000, -1, 0).count() == 2);
static_assert(pk::attention::key_tiles_of_block(896, 128, 64, 1000, 1000, -1, 0).count() == 16);
static_assert(pk::attention::key_tiles_of_block(0, 128, 64, 1000, 10, -1, 0).count() == 0);

}  // namespace
