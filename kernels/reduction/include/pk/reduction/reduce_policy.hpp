// Device-wide reduction: policy (tuning as data) and the per-arch-family candidate lists.
// Plain constexpr C++: used by the host planner at run time and by the kernels at compile time.
#pragma once
#include <pk/archdb/arch.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace pk::reduction {

//! One compiled variant of the single-pass device reduction.
struct reduce_policy {
  int block_threads;     //!< threads per block (a multiple of every warp size: 64)
  int items_per_thread;  //!< 4-byte items each thread loads per tile (scaled by element size)
  int vector_width;      //!< 4-byte items per vector load (4 = 16-byte loads)
  friend constexpr bool operator==(const reduce_policy&, const reduce_policy&) = default;
};

//! "reduce_b256_i16_v4" — the instance name (in kernel names, plans and the tuning cache).
inline std::string name_of(const reduce_policy& p) {
  return "reduce_b" + std::to_string(p.block_threads) + "_i" + std::to_string(p.items_per_thread) + "_v" +
         std::to_string(p.vector_width);
}

//! Items per thread for elements of `bytes` bytes: the policy is written for 4-byte items and keeps
//! the bytes in flight per thread constant (CUB scale_mem_bound), at least 1.
constexpr int scaled_items(const reduce_policy& p, std::size_t bytes) {
  const int s = static_cast<int>(p.items_per_thread * 4 / static_cast<int>(bytes));
  return s < 1 ? 1 : s;
}
//! Elements per vector load for `bytes`-byte elements: 16 bytes when vector_width is 4.
constexpr int scaled_vector(const reduce_policy& p, std::size_t bytes) {
  const int v = static_cast<int>(p.vector_width * 4 / static_cast<int>(bytes));
  return v < 1 ? 1 : v;
}

// The compiled candidate list, shared by every target (default first). It is short on purpose: each
// entry is compiled for every target. Initial values, not yet tuned on hardware: 16-byte vector loads
// (the widest global access on both vendors) and 64 bytes in flight per thread per tile; the block
// sizes bracket the usual 256 so that the planner and `pk tune` have a real choice. A policy must be
// a whole number of warps on every arch (a multiple of 64 threads).
inline constexpr std::array<reduce_policy, 4> reduce_candidates{{
    {256, 16, 4},
    {512, 8, 4},
    {128, 32, 4},
    {1024, 4, 4},
}};

}  // namespace pk::reduction
