// Lane masks: 64-bit on every backend (bit i == lane i); helpers never shift by 64.
#pragma once
#include <pk/portable/macros.hpp>

#include <cstdint>

namespace pk {

using lane_mask = std::uint64_t;
inline constexpr int min_warp_size = 32;  //!< for host-side sizing across archs (NVIDIA, RDNA wave32)
inline constexpr int max_warp_size = 64;  //!< CDNA wave64

//! Lanes [0, lane): lanes_below(64) is all ones, lanes_below(0) is zero.
PK_HOST_DEVICE constexpr lane_mask lanes_below(int lane) noexcept {
  return lane >= 64 ? ~lane_mask{0} : (lane <= 0 ? lane_mask{0} : (lane_mask{1} << lane) - 1);
}
//! Lanes [first, first + count).
PK_HOST_DEVICE constexpr lane_mask lane_range(int first, int count) noexcept {
  return lanes_below(first + count) & ~lanes_below(first);
}
PK_HOST_DEVICE constexpr int popcount(lane_mask m) noexcept {
  int c = 0;
  for (; m; m &= m - 1) ++c;
  return c;
}
//! Smallest power of two >= v (v >= 1).
PK_HOST_DEVICE constexpr int bit_ceil(int v) noexcept {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace pk
