// Reproducible fp32/fp64 sum, device code. The summation order is the fixed layout of
// reduction::reproducible_layout (reduce_policy.hpp), which depends on n only: the same bits for every
// policy, grid, warp size, device and backend. One launch:
//  - each block sums a contiguous range of ceil(chunks / grid) chunks, one chunk per 32-thread team (a
//    logical warp, also on wave64) at a time, and writes the chunk sums;
//  - for each group of 256 chunks its range touches, the block adds the number of chunks it wrote to the
//    group's counter (one atomic per block and group, not per chunk); the block that completes a group
//    has warp 0 sum it (binary tree over its 256 chunk sums) and take a ticket on the top counter;
//  - the block completing the last group sums the group sums (two levels of 256-leaf trees);
//  - a NaN total is written as the canonical quiet NaN (ops::canonical_nan): the NaN an FPU produces
//    (0xffc00000 on x86 for inf + -inf, 0x7fffffff on NVIDIA, an input's payload) differs by device.
// Counters are reset by whoever completes them, so they are zero between calls.
#pragma once
#include <pk/portable/block.hpp>
#include <pk/portable/memory.hpp>
#include <pk/reduction/detail/reduce_agent.hpp>
#include <pk/reduction/detail/reduce_call.hpp>
#include <pk/reduction/detail/reduce_ops.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN
namespace impl {

struct repro_add {
  template <class A>
  PK_DEVICE A operator()(const A& a, const A& b) const {
    return a + b;
  }
};

//! Binary tree (adjacent pairs first) over the 256 values v[first, first + 256); values at index >=
//! count are +0. Computed by a 32-lane logical warp (lane l holds values 8l..8l+7); on a wider warp
//! every segment computes the same tree. Every lane of the hardware warp must call it.
template <class A>
PK_DEVICE A tree256(const A* v, std::int64_t first, std::int64_t count) {
  const int l = lane_id() % 32;
  A leaf[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const std::int64_t i = first + l * 8 + e;
    leaf[e] = i < count ? load_volatile(v + i) : A(0);
  }
  const A x = ((leaf[0] + leaf[1]) + (leaf[2] + leaf[3])) + ((leaf[4] + leaf[5]) + (leaf[6] + leaf[7]));
  return warp<32>::reduce(x, repro_add{});
}

template <int B, class T>
PK_KERNEL PK_LAUNCH_BOUNDS(B) void repro_sum_kernel(const T* in, std::int64_t n, T* out, unsigned* group_tickets,
                                                    unsigned* top_ticket, T* chunk_sums, T* group_sums) {
  using layout = reduction::reproducible_layout;
  static_assert(B % 64 == 0, "whole warps on every arch");
  constexpr int V = static_cast<int>(16 / sizeof(T));
  constexpr std::int64_t chunk = layout::chunk_elems(sizeof(T));
  constexpr int teams = B / 32;
  const std::int64_t m = (n + chunk - 1) / chunk;
  const std::int64_t groups = (m + layout::group_chunks - 1) / layout::group_chunks;
  PK_SHARED(unsigned, group_last);
  PK_SHARED(unsigned, top_last);
  PK_SHARED(T[layout::top_fanout], level1);
  if (m == 0) {
    if (block_idx().x == 0 && thread_rank() == 0) *out = T(0);
    return;
  }
  const int team = thread_rank() / 32, lane = thread_rank() % 32;
  const bool aligned = reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
  // This block's chunks [c0, c1).
  const std::int64_t per = (m + grid_dim().x - 1) / grid_dim().x;
  const std::int64_t c0 = std::int64_t{block_idx().x} * per < m ? std::int64_t{block_idx().x} * per : m;
  const std::int64_t c1 = c0 + per < m ? c0 + per : m;
  // Every team runs the same number of rounds: two teams share a 64-wide wave, whose lanes must all reach
  // the warp reduction.
  for (std::int64_t first = c0; first < c1; first += teams) {
    const std::int64_t c = first + team;
    const std::int64_t cb = c * chunk;
    T leaf = T(0);
    if (c < c1 && aligned && cb + chunk <= n) {
      vec<T, V> x[layout::leaf_vectors];
#pragma unroll
      for (int k = 0; k < layout::leaf_vectors; ++k) x[k] = load_vec<V>(in + cb + (std::int64_t{k} * 32 + lane) * V);
#pragma unroll
      for (int k = 0; k < layout::leaf_vectors; ++k)
#pragma unroll
        for (int e = 0; e < V; ++e) leaf = leaf + x[k][e];
    } else if (c < c1) {
      for (int k = 0; k < layout::leaf_vectors; ++k)
        for (int e = 0; e < V; ++e) {
          const std::int64_t i = cb + (std::int64_t{k} * 32 + lane) * V + e;
          leaf = leaf + (i < n ? in[i] : T(0));
        }
    }
    const T cs = warp<32>::reduce(leaf, repro_add{});
    if (lane == 0 && c < c1) chunk_sums[c] = cs;
  }
  thread_fence();  // every chunk sum this block wrote is visible before the group counters move
  if (thread_rank() == 0) top_last = 0u;
  block::sync();
  if (c0 < c1) {
    for (std::int64_t g = c0 / layout::group_chunks; g <= (c1 - 1) / layout::group_chunks; ++g) {
      if (thread_rank() == 0) {
        const std::int64_t glo = g * layout::group_chunks;
        const std::int64_t ghi = glo + layout::group_chunks < m ? glo + layout::group_chunks : m;
        const std::int64_t mine = (c1 < ghi ? c1 : ghi) - (c0 > glo ? c0 : glo);
        const unsigned tk = atomic_add(group_tickets + g, static_cast<unsigned>(mine));
        thread_fence();
        group_last = tk + static_cast<unsigned>(mine) == static_cast<unsigned>(ghi - glo) ? 1u : 0u;
      }
      block::sync();
      if (group_last != 0u && warp_id() == 0) {
        const T gs = tree256(chunk_sums, g * layout::group_chunks, m);
        if (thread_rank() == 0) {
          group_sums[g] = gs;
          group_tickets[g] = 0u;
          thread_fence();
          const unsigned tk = atomic_add(top_ticket, 1u);
          thread_fence();
          if (tk == static_cast<unsigned>(groups - 1)) top_last = 1u;
        }
      }
      block::sync();  // group_last is reused
    }
  }
  if (top_last != 0u && warp_id() == 0) {
    const std::int64_t l1 = (groups + layout::top_fanout - 1) / layout::top_fanout;
    for (std::int64_t i = 0; i < l1; ++i) {
      const T v = tree256(group_sums, i * layout::top_fanout, groups);
      if (lane_id() == 0) level1[i] = v;
    }
    warp<>::sync();
    const T total = tree256(static_cast<const T*>(level1), 0, l1);
    if (thread_rank() == 0) {
      *out = reduction::ops::canonicalize_nan(total);  // one NaN on every device (reduce.hpp)
      *top_ticket = 0u;
    }
  }
}

}  // namespace impl
PK_DETAIL_TARGET_END
