// Segmented reduction by one even split of the elements over the grid, device code. The host does not
// see the segment lengths (the offsets live on the device), so the work is divided by elements, not by
// segments: its time depends on the total only, whatever the length distribution (uniform, power-law,
// empty segments, one segment of everything).
//
//  - Tiles of E = B * U * V elements (V per 16-byte vector) on the 16-byte grid of the input's
//    addresses; block k owns the contiguous chunk of tiles [k * per, (k + 1) * per), per =
//    ceil(tiles / grid), and finds the segment at its chunk's start with a B-ary search of the offsets
//    (a few rounds of one load per thread, overlapped with the first tile's loads).
//  - A tile inside one segment is folded into per-thread partials (no barrier). A tile with segment
//    ends finishes the open segment (a block reduction), reduces the segments that start and end inside
//    it from shared memory (a 32-lane group per segment, or a thread per segment when they average fewer
//    than `thread_segment_below` elements), and opens the segment that runs past it. The offsets are read
//    through a shared window of B + 1 values that later tiles reuse until they pass it.
//  - A segment that crosses chunks leaves one piece per chunk in the workspace: the part in the chunk
//    where it starts (open_out) and the part in each later chunk (open_in); a chunk publishes its (at most
//    two) pieces after its tiles. Each chunk adds one to the
//    ticket of the segment's first chunk; the chunk that brings the count to the number of chunks the
//    segment touches combines the pieces in a fixed order (thread j folds pieces j, j + B, ..., then the
//    block's tree), writes the result and resets the ticket; the last block to finish clears every
//    ticket, so they are zero between calls whatever the offsets.
//
// Determinism: an output's combination order depends only on the policy, the grid, the arch's warp size,
// the input's alignment and the offsets (the segment's own, and those of the segments ending in the same
// tile: their average length chooses a thread or a group per segment).
// Safety: every element read lies in [offsets[0], offsets[segments]), every shared-memory index is
// clamped to the tile and every workspace index to the grid, so offsets that break the non-decreasing
// precondition give wrong values, never an access out of bounds.
#pragma once
#include <pk/portable/block.hpp>
#include <pk/portable/memory.hpp>
#include <pk/reduction/detail/reduce_agent.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN
namespace impl {

//! The pieces of segments that cross chunks: one slot of each kind per block, one ticket per block and
//! a count of finished blocks after them (grid + 1 counters, zero between calls).
template <class Acc>
struct split_workspace {
  Acc* open_in;   //!< block k: its part of the segment that started in an earlier chunk
  Acc* open_out;  //!< block k: its part of the segment that starts in its chunk and runs past it
  unsigned* tickets;
};

//! Below this many elements per segment on average, the segments inside a tile are reduced a thread
//! each (sequentially from shared memory) rather than by a 32-lane group: a group has 5 shuffle rounds
//! to pay whatever the length, a thread one shared-memory load per element.
inline constexpr std::int64_t thread_segment_below = 32;

// U: 16-byte vectors a thread per tile (reduction::split_unroll); BlocksPerSm: the launch bounds' minimum
// blocks per SM.
template <int B, int U, int BlocksPerSm, class T, class Acc, class Out, class Op, class Load, class Fin>
PK_KERNEL PK_LAUNCH_BOUNDS_OCCUPANCY(B, BlocksPerSm) void segment_split_kernel(const T* in, Out* out,
                                                                               const std::int64_t* offsets,
                                                                               std::int64_t segments,
                                                                               split_workspace<Acc> ws, Op op,
                                                                               Acc identity, Load load, Fin fin) {
  static_assert(B % 64 == 0, "whole warps on every arch");
  constexpr int V = sizeof(T) >= 16 ? 1 : static_cast<int>(16 / sizeof(T));
  constexpr std::int64_t E = std::int64_t{B} * U * V;  // elements per tile
  constexpr int groups = B / 32;
  constexpr std::int64_t none = INT64_MAX;  // the offset of a segment past the last one
  using reducer = block_reduce<Acc, B>;
  using counter = block_reduce<std::int64_t, B>;
  PK_SHARED(typename reducer::temp_storage, red);
  PK_SHARED(typename counter::temp_storage, red_count);
  using tile_t = vec<T, V>[E / V];  // 16-byte aligned: written a vector at a time
  PK_SHARED(tile_t, tile);
  PK_SHARED(std::int64_t[B + 1], win);  // offsets[w0 .. w0 + B] (none past the last)
  PK_SHARED(unsigned, last_flag);

  const int t = thread_rank();
  // The chunk's work; every block then counts itself done, and the last one clears the tickets (a no-op
  // for non-decreasing offsets, whose crossing segments clear their own; others must not leave the
  // stream's counters non-zero for later calls). Measured (H100, 2^26 f32, a globaltimer stamp per block;
  // bench/results/reduction-h100-2026-12-07c.md), before the clearing was spread over the last block's
  // threads and the two pieces' publications merged into one: grid + 1 stores by thread 0 in turn ended the
  // kernel 5.8-6.0 us after the other blocks at every segment length; publishing the pieces after the tiles,
  // a round of fence, atomic, fence and two barriers each, took 5.3 us (median, 65536); the search for a
  // block's first segment takes 4.5-5 us. With both changes the f32 sum ran 2.6-5.7% faster at every segment
  // length, the other ops at 256 and 65536 1.8-8.5% (H100, two interleaved runs each;
  // bench/results/reduction-h100-2026-12-07d.md). L2 prefetches were measured and not kept: of the tiles ahead at
  // every tile, 10-17% slower (07d); of the chunk's next two tiles during the search, no gain (within noise at
  // 4096 and 65536, 1-4% slower at 256 and 2^20; bench/results/reduction-h100-2026-12-07e.md).
  const auto chunk_work = [&] {
    const std::int64_t S = segments;
    const std::int64_t base = offsets[0], end = offsets[S];
    if (!(end > base)) {  // no elements: every segment is empty, block 0 writes the identities
      if (block_idx().x == 0)
        for (std::int64_t s = t; s < S; s += B) out[s] = fin(identity);
      return;
    }
    const std::int64_t origin = base - static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(in + base) % 16 / sizeof(T));
    const std::int64_t ntiles = (end - origin + E - 1) / E;
    const std::int64_t grid = grid_dim().x;
    const std::int64_t per = (ntiles + grid - 1) / grid;
    const std::int64_t k = block_idx().x;
    const std::int64_t tile_first = k * per;
    if (tile_first >= ntiles) return;
    const std::int64_t tile_last = tile_first + per < ntiles ? tile_first + per : ntiles;
    const std::int64_t c0 = origin + tile_first * E > base ? origin + tile_first * E : base;
    const std::int64_t c1 = origin + tile_last * E < end ? origin + tile_last * E : end;
    const auto chunk_of = [&](std::int64_t p) { return (p - origin) / E / per; };

    // The thread's elements of the tile at tb: vector u holds tb + (u * B + t) * V + e.
    const auto load_tile = [&](vec<T, V>* x, std::int64_t tb) {
  #pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::int64_t q = tb + (std::int64_t{u} * B + t) * V;
        if (q >= base && q + V <= end) {
          x[u] = load_vec<V>(in + q);
        } else {
  #pragma unroll
          for (int e = 0; e < V; ++e) x[u][e] = q + e >= base && q + e < end ? in[q + e] : T{};
        }
      }
    };
    // Folds the thread's elements at positions [a, b) of the tile at tb into acc (indices from sb).
    const auto fold = [&](const vec<T, V>* x, std::int64_t tb, Acc acc, std::int64_t a, std::int64_t b, std::int64_t sb) {
  #pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::int64_t q = tb + (std::int64_t{u} * B + t) * V;
        if (q >= a && q + V <= b) {
  #pragma unroll
          for (int e = 0; e < V; ++e) acc = op(acc, load(x[u][e], q + e - sb));
        } else if (q + V > a && q < b) {
  #pragma unroll
          for (int e = 0; e < V; ++e)
            if (q + e >= a && q + e < b) acc = op(acc, load(x[u][e], q + e - sb));
        }
      }
      return acc;
    };
    // Block-wide count of a monotone predicate (true for a prefix of the threads).
    const auto count = [&](bool pred) {
      return counter(red_count).all_reduce(pred ? std::int64_t{1} : std::int64_t{0}, plus{});
    };

    vec<T, V> x[U];
    std::int64_t cur = 0;     // the open segment
    std::int64_t cb = 0;      // its begin
    std::int64_t nb = 0;      // its end
    bool here = true;         // it starts in this chunk
    std::int64_t w0 = -1;     // the window holds offsets[w0 ..], none loaded yet
    Acc acc = identity;
    std::int64_t lead = -1;   // the segment that started in an earlier chunk and ends in this one
    std::int64_t lead_k0 = 0;  // its first chunk
    Acc lead_piece = identity;  // thread 0: this chunk's part of it

    // The chunks a crossing segment [b, e) touches: k0 <= k <= k1 for non-decreasing offsets, clamped so
    // that other offsets cannot reach past the workspace's `grid` slots.
    const auto first_chunk = [&](std::int64_t b) {
      const std::int64_t c = chunk_of(b);
      return c < 0 ? std::int64_t{0} : c > k ? k : c;
    };
    const auto last_chunk = [&](std::int64_t e) {
      const std::int64_t c = chunk_of(e - 1);
      return c < k ? k : c > grid - 1 ? grid - 1 : c;
    };
    // One call site for each of the heavy steps of the general path (the loads, the fold, the search, a
    // piece's publication): with an arg op every call site inlines hundreds of instructions per element vector.
    // A tile inside the chunk has a second, lean load: 8 vector loads at constant offsets, one bounds test a
    // tile. Where the open segment covers such a tile whole (it may end at the tile's end: segments of 4096
    // elements on tiles of 4096), it is folded without positions, in the general fold's order
    // (same results). The general path's per-vector bounds and range tests cost about 250 instructions a warp
    // per tile on top of the 40 the lean path issues. H100, 2^26 elements in segments of 65536: the lean tile
    // halved the f32 sum's instructions (20.4 M -> 9.95 M) at the same time (85% of copy either way: its
    // instructions are not what bounds it), and made the bf16 sum 19% and argmin/argmax 10% faster
    // (bench/results/reduction-h100-2026-12-07.md). Every op takes it, argmin/argmax included: ptxas (sm_90a)
    // gives every instance 88-96 registers, spilling none but the u8 argmin/argmax (4 B, as before it).
    for (std::int64_t ti = tile_first; ti < tile_last; ++ti) {
      const std::int64_t tb = origin + ti * E;
      const bool inner = tb >= c0 && tb + E <= c1;  // so inside [base, end) too
      // The first tile's loads are in flight during the search.
      if (inner) {
        const T* const p = in + tb + std::int64_t{t} * V;
  #pragma unroll
        for (int u = 0; u < U; ++u) x[u] = load_vec<V>(p + std::int64_t{u} * B * V);
      } else {
        load_tile(x, tb);
      }
      const std::int64_t t0 = tb > c0 ? tb : c0, t1 = tb + E < c1 ? tb + E : c1;
      if (ti == tile_first) {
        // The segment holding c0: the last s with offsets[s] <= c0 (block 0 starts at segment 0, so that
        // leading empty segments are its own).
        if (k > 0) {
          std::int64_t hi = S;
          while (hi > cur) {
            const std::int64_t step = (hi - cur + B - 1) / B;
            const std::int64_t s = cur + (t + 1) * step;
            const std::int64_t n = count(s <= hi && offsets[s] <= c0);
            cur += n * step;
            hi = cur + step - 1 < hi ? cur + step - 1 : hi;
          }
        }
        cb = offsets[cur];
        nb = cur < S ? offsets[cur + 1] : none;
        here = k == 0 || cb >= c0;
      }
      // The open segment's part of the tile; when it ends inside the tile, the segments up to the one that
      // runs past it are finished, and that one becomes the open segment, whose part is folded in the next
      // round (which then leaves: its end is past the tile).
      for (;;) {
        if (inner && cb <= tb && nb >= t1) {  // the open segment covers the tile (its end may be the tile's)
  #pragma unroll
          for (int u = 0; u < U; ++u)
  #pragma unroll
            for (int e = 0; e < V; ++e) acc = op(acc, load(x[u][e], tb + (std::int64_t{u} * B + t) * V + e - cb));
        } else if (cb < t1) {
          // (cb >= t1: the open segment starts at the tile's end, a segment ended there; nothing of it in this
          // tile, and it ends past it. Skipping the general fold over that empty range in every tile whose
          // last segment ends on the tile's end: H100, 2^26 f32, 4-8% at segments of 64 and 256, every op;
          // bench/results/reduction-h100-2026-12-07.md.)
          acc = fold(x, tb, acc, cb > t0 ? cb : t0, nb < t1 ? nb : t1, cb);
        }
        if (nb > t1) break;
  #pragma unroll
        for (int u = 0; u < U; ++u) tile[u * B + t] = x[u];
        const Acc total = reducer(red).reduce(acc, op);
        if (here) {
          if (t == 0) out[cur] = fin(total);
        } else {  // published with the chunk's last piece, after the tiles
          lead = cur;
          lead_k0 = first_chunk(cb);
          lead_piece = total;
        }
        block::sync();  // the tile in shared memory is complete
        // Segments cur + 1 ... that start in this tile: the finished ones from shared memory, up to the
        // first that runs past the tile, which becomes the open one. (Storing the tile only when some
        // segment finishes inside it, and leaving out this barrier otherwise, ran 12-20% slower on the
        // H200 at 4096-element segments, one per tile.)
        std::int64_t s0 = cur + 1;
        for (;;) {
          if (s0 < w0 || s0 >= w0 + B || w0 < 0) {
            block::sync();  // every thread is done with the old window
            w0 = s0;
            win[t] = s0 + t <= S ? offsets[s0 + t] : none;
            if (t == 0) win[B] = s0 + B <= S ? offsets[s0 + B] : none;
            block::sync();
          }
          const int j0 = static_cast<int>(s0 - w0);
          // cnt: entries of win[j0 .. B] at or before t1 (a prefix: the offsets do not decrease), >= 1. The
          // first probe is the next entry: where segments are longer than a tile, the segment starting in this
          // one ends past it, and one shared load replaces the search's log2(B) dependent ones.
          int lo = j0 + 1, hi = B + 1;
          if (win[lo] <= t1) {
            ++lo;
            while (lo < hi) {
              const int mid = (lo + hi) / 2;
              if (win[mid] <= t1) lo = mid + 1; else hi = mid;
            }
          }
          const int cnt = lo - j0;
          const int nfin = cnt - 1;  // segments s0 .. s0 + nfin - 1 end in this tile
          if (nfin > 0) {
            const std::int64_t span = win[j0 + nfin] - win[j0];
            const auto segment_range = [&](int i, std::int64_t& a, std::int64_t& b) {
              a = win[j0 + i] > t0 ? win[j0 + i] : t0;
              b = win[j0 + i + 1] < t1 ? win[j0 + i + 1] : t1;
            };
            if (span < thread_segment_below * nfin) {
              for (int i = t; i < nfin; i += B) {
                std::int64_t a, b;
                segment_range(i, a, b);
                Acc v = identity;
                for (std::int64_t p = a; p < b; ++p) v = op(v, load(tile[(p - tb) / V][static_cast<int>((p - tb) % V)], p - win[j0 + i]));
                out[s0 + i] = fin(v);
              }
            } else {
              const int g = t / 32, l = t % 32;
              // Uniform rounds: two 32-lane groups may share a wave64, whose lanes all reach the reduction.
              for (int r = 0; r < nfin; r += groups) {
                const int i = r + g;
                Acc v = identity;
                if (i < nfin) {
                  std::int64_t a, b;
                  segment_range(i, a, b);
                  for (std::int64_t p = a + l; p < b; p += 32) v = op(v, load(tile[(p - tb) / V][static_cast<int>((p - tb) % V)], p - win[j0 + i]));
                }
                v = warp<32>::reduce(v, op);
                if (l == 0 && i < nfin) out[s0 + i] = fin(v);
              }
            }
          }
          if (j0 + cnt <= B) {  // win[j0 + cnt] is past the tile: s0 + nfin is the new open segment
            cur = s0 + nfin;
            cb = win[j0 + nfin];
            nb = win[j0 + cnt];
            break;
          }
          s0 += nfin;  // the window ends inside the tile: load the next one
        }
        here = true;
        acc = identity;
        block::sync();  // the tile, the window and the reducer's storage are free for the next tile
      }
    }
    // The pieces of the segments that cross chunks: the one that ended in this chunk (lead; its last chunk is
    // this one), and the open segment if it runs past the chunk (its end is beyond c1), whose piece is reduced
    // here. Thread 0 stores both (open_in[k] is written at most once: a tail that started in an earlier chunk
    // covers the whole chunk, so no segment ended in it), then takes both tickets between one pair of fences;
    // the chunk that completes a segment's count combines its pieces.
    const bool tail = cur < S && cb < c1;
    const Acc tail_piece = tail ? reducer(red).reduce(acc, op) : identity;
    const std::int64_t tail_k0 = tail ? first_chunk(cb) : 0, tail_k1 = tail ? last_chunk(nb) : 0;
    if (t == 0) {
      if (lead >= 0) ws.open_in[k] = lead_piece;
      if (tail) (here ? ws.open_out : ws.open_in)[k] = tail_piece;
      unsigned completes = 0u;  // bit 0: this chunk completes the lead's count, bit 1: the tail's
      if (lead >= 0 || tail) {
        thread_fence();
        if (lead >= 0 && atomic_add(ws.tickets + lead_k0, 1u) + 1u == static_cast<unsigned>(k - lead_k0 + 1)) completes |= 1u;
        if (tail && atomic_add(ws.tickets + tail_k0, 1u) + 1u == static_cast<unsigned>(tail_k1 - tail_k0 + 1)) completes |= 2u;
        thread_fence();
      }
      last_flag = completes;
    }
    block::sync();
    const unsigned done = last_flag;
    // Two rounds of one call site, the second's arguments carried in scalars (selecting them by the round's
    // index would put them in local memory).
    std::int64_t s = lead, k0 = lead_k0, k1 = k;
    bool take = (done & 1u) != 0u;
  #pragma unroll 1
    for (int round = 0; round < 2; ++round) {
      if (take) {
        Acc v = identity;
        for (std::int64_t j = k0 + t; j <= k1; j += B) v = op(v, load_volatile(j == k0 ? ws.open_out + j : ws.open_in + j));
        v = reducer(red).reduce(v, op);
        if (t == 0) {
          out[s] = fin(v);
          ws.tickets[k0] = 0u;
        }
        block::sync();  // the reducer's storage is free for the next round
      }
      s = cur;
      k0 = tail_k0;
      k1 = tail_k1;
      take = (done & 2u) != 0u;
    }
  };
  chunk_work();
  // Every block counts itself done; the last one clears the grid + 1 tickets with all its threads.
  block::sync();  // last_flag is free
  const unsigned g = grid_dim().x;
  if (t == 0) {
    thread_fence();
    last_flag = atomic_add(ws.tickets + g, 1u) == g - 1 ? 1u : 0u;
    thread_fence();
  }
  block::sync();
  if (last_flag != 0u)
    for (unsigned j = t; j <= g; j += B) ws.tickets[j] = 0u;
}

}  // namespace impl
PK_DETAIL_TARGET_END
