// Attention masking: which keys a query sees. Query `row` (0-based in its sequence) sees key `col` iff
//   col < seqlen_k,  col - row <= diag + window_right (window_right >= 0),
//                    col - row >= diag - window_left  (window_left >= 0),      diag = seqlen_k - seqlen_q
// (the diagonal is bottom-right aligned; causal is window_right = 0; -1 is unbounded). Two levels:
//  - the key tiles a query block visits (key_tiles_of_block), constexpr and host-callable so that the
//    planner counts the same tiles the kernel walks;
//  - the per-element test of one (query block, key tile) pair (tile_mask), paid only by pairs that
//    cross a boundary.
// Every sum of a position, diag and a window is formed in 64 bits (seqlen_k - seqlen_q + window_right
// alone can exceed int). The per-element test is int: it compares key - query, both relative to the
// pair's corner (so within +-(block_m + block_n)), with the window bounds shifted to that corner and
// clamped to +-tile_offset_bound, which keeps every comparison exact.
#pragma once
#include <pk/portable/macros.hpp>

#include <cstdint>

namespace pk::attention {

namespace mask_detail {
//! Larger than any key-minus-query difference inside one tile pair (block sizes are at most a few hundred).
inline constexpr std::int64_t tile_offset_bound = std::int64_t{1} << 30;
PK_HOST_DEVICE constexpr std::int64_t clamp(std::int64_t x, std::int64_t lo, std::int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
PK_HOST_DEVICE constexpr std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
}  // namespace mask_detail

//! Key tiles [first, last] of block_n keys that a query block visits; empty when last < first.
struct key_tiles {
  std::int64_t first = 0, last = -1;
  PK_HOST_DEVICE constexpr std::int64_t count() const { return last >= first ? last - first + 1 : 0; }
};

//! The key tiles seen by query rows [m0, min(m0 + block_m, seqlen_q)): from the first key the first row
//! sees (left window) to the last key the last row sees (right window, seqlen_k). The kernel walks
//! them; the planner (attention_api.cpp) counts them.
PK_HOST_DEVICE constexpr key_tiles key_tiles_of_block(std::int64_t m0, std::int64_t block_m, std::int64_t block_n,
                                                      std::int64_t seqlen_q, std::int64_t seqlen_k,
                                                      std::int64_t window_left, std::int64_t window_right) {
  using namespace mask_detail;
  const std::int64_t diag = seqlen_k - seqlen_q;
  const std::int64_t m_last = min64(m0 + block_m, seqlen_q) - 1;
  // Keys [lo, hi), both clamped to [0, seqlen_k] (an empty range stays empty); non-negative, so the
  // tile indices are unsigned divisions (shifts for the power-of-two tiles).
  const std::int64_t hi = window_right >= 0 ? clamp(m_last + diag + window_right + 1, 0, seqlen_k) : seqlen_k;
  const std::int64_t lo = window_left >= 0 ? clamp(m0 + diag - window_left, 0, seqlen_k) : 0;
  const auto bn = static_cast<std::uint64_t>(block_n);
  const auto first = static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) / bn);
  return key_tiles{first, hi > lo ? static_cast<std::int64_t>(static_cast<std::uint64_t>(hi - 1) / bn) : first - 1};
}

//! The mask of one (query block, key tile) pair, relative to the block's first query m0 and the tile's
//! first key n0: key k of the tile is visible to query q of the block iff k < keys and
//! left <= k - q <= right.
struct tile_mask {
  int keys;         //!< seqlen_k - n0
  int right, left;  //!< the window's bounds on key - query, shifted by n0 - m0, clamped to +-tile_offset_bound

  PK_HOST_DEVICE constexpr bool visible(int q, int k) const { return k < keys && k <= q + right && k >= q + left; }
  //! Whether some element of the BlockM x BlockN pair is masked: only those pay for the element test.
  template <int BlockM, int BlockN>
  PK_HOST_DEVICE constexpr bool needs_mask() const {
    static_assert(BlockM < mask_detail::tile_offset_bound && BlockN < mask_detail::tile_offset_bound);
    return keys < BlockN || right < BlockN - 1 || left > 1 - BlockM;
  }
};

//! The tile_mask of query block m0 and key tile n0 (0 <= n0 < seqlen_k); window -1: unbounded. Rows
//! past seqlen_q are masked like the others (their results are not stored). Computed per tile from
//! values the kernel holds anyway (the window bounds stay in the parameter block, not in registers).
PK_HOST_DEVICE constexpr tile_mask tile_mask_of(std::int64_t m0, std::int64_t n0, std::int64_t seqlen_q,
                                                std::int64_t seqlen_k, std::int64_t window_left,
                                                std::int64_t window_right) {
  using namespace mask_detail;
  const std::int64_t shift = seqlen_k - seqlen_q - (n0 - m0);  // diag, relative to the pair's corner
  const std::int64_t right = window_right >= 0 ? shift + window_right : tile_offset_bound;
  const std::int64_t left = window_left >= 0 ? shift - window_left : -tile_offset_bound;
  return tile_mask{static_cast<int>(seqlen_k - n0), static_cast<int>(clamp(right, -tile_offset_bound, tile_offset_bound)),
                   static_cast<int>(clamp(left, -tile_offset_bound, tile_offset_bound))};
}

}  // namespace pk::attention
