// Per-segment reductions, device code: segmented reduce (offsets), reduce along a unit-stride axis
// (one group of threads per output) and along a strided axis (one thread per output).
//
// Determinism: each output's combination order depends only on the policy, the arch's warp size and
// the segment's length and alignment.
#pragma once
#include <pk/portable/block.hpp>
#include <pk/portable/memory.hpp>
#include <pk/reduction/detail/reduce_call.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN
namespace impl {

struct seg_loc {
  std::int64_t begin;   //!< element offset of the segment's first element
  std::int64_t len;     //!< elements
  std::int64_t stride;  //!< elements between consecutive elements of the segment
  std::int64_t out;     //!< element offset of the output
};

//! Segment `i` of the map: from the offsets array, or by decomposing i over the outer dimensions.
PK_DEVICE PK_FORCEINLINE seg_loc locate(const reduction::seg_map& m, std::int64_t i) {
  if (m.offsets != nullptr) {
    const std::int64_t b = m.offsets[i];
    return seg_loc{b, m.offsets[i + 1] - b, 1, i};
  }
  seg_loc l{0, m.len, m.axis_stride, 0};
  if (m.outer_rank <= 1) {  // one outer dimension (rows of a matrix): no division
    l.begin = i * m.in_stride[0];
    l.out = i * m.out_stride[0];
    return l;
  }
  // Constant indices only: a kernel parameter indexed at run time is copied to the stack (104 bytes per
  // thread, written at every thread's start: more bytes than a row sum of 1024 bf16 columns reads).
  std::int64_t r = i;
#pragma unroll
  for (int d = reduction::seg_map::max_outer_rank - 1; d >= 0; --d) {
    if (d >= m.outer_rank) continue;
    const std::int64_t k = r % m.outer_shape[d];
    r /= m.outer_shape[d];
    l.begin += k * m.in_stride[d];
    l.out += k * m.out_stride[d];
  }
  return l;
}

//! Reduction of the group's thread `t` (of G) over a contiguous run p[0, len): a scalar head up to
//! 16-byte alignment, then 16-byte vectors (U in flight per thread), then a scalar tail. Element
//! indices passed to `load` are relative to p.
template <int G, int U, class T, class Acc, class Op, class Load>
PK_DEVICE Acc reduce_contiguous(const T* p, std::int64_t len, int t, Op op, Acc acc, Load load) {
  constexpr int V = 16 / sizeof(T) > 0 ? static_cast<int>(16 / sizeof(T)) : 1;
  const std::uintptr_t mis = reinterpret_cast<std::uintptr_t>(p) % 16;
  std::int64_t head = mis % sizeof(T) != 0 ? len : static_cast<std::int64_t>(((16 - mis) % 16) / sizeof(T));
  if (head > len) head = len;
  for (std::int64_t j = t; j < head; j += G) acc = op(acc, load(p[j], j));
  const T* body = p + head;
  const std::int64_t nvec = (len - head) / V;
  std::int64_t v = t;
  for (; v + std::int64_t{U - 1} * G < nvec; v += std::int64_t{U} * G) {
    vec<T, V> x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = load_vec<V>(body + (v + std::int64_t{u} * G) * V);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int e = 0; e < V; ++e) acc = op(acc, load(x[u][e], head + (v + std::int64_t{u} * G) * V + e));
  }
  for (; v < nvec; v += G) {
    const vec<T, V> x = load_vec<V>(body + v * V);
#pragma unroll
    for (int e = 0; e < V; ++e) acc = op(acc, load(x[e], head + v * V + e));
  }
  for (std::int64_t j = head + nvec * V + t; j < len; j += G) acc = op(acc, load(p[j], j));
  return acc;
}

//! Reduction over a group of G threads (G <= 32: a logical warp; G == B: the block); the result is
//! valid on every thread of the group. `Storage` is block_reduce's temp_storage (unused when G <= 32).
template <int B, int G, class Acc, class Op>
struct group_reducer {
  static_assert(G == B || G <= 32, "a group is a logical warp of at most 32 threads or the whole block");
  using block_t = block_reduce<Acc, (G == B ? B : 64)>;
  using temp_storage = typename block_t::temp_storage;
  PK_DEVICE static Acc all_reduce(Acc v, Op op, temp_storage& tmp) {
    if constexpr (G == B && B > 32) {
      return block_t(tmp).all_reduce(v, op);
    } else {
      (void)tmp;
      return warp<G>::reduce(v, op);
    }
  }
  //! all_reduce for an op with op(a, b) == op(b, a) bit for bit (sums, maxima): a logical warp of a power
  //! of two lanes reduces by an xor butterfly (warp::all_reduce_commutative).
  PK_DEVICE static Acc all_reduce_commutative(Acc v, Op op, temp_storage& tmp) {
    if constexpr (G == B && B > 32) {
      return block_t(tmp).all_reduce(v, op);
    } else if constexpr (warp<G>::width == warp<G>::segment) {
      (void)tmp;
      return warp<G>::all_reduce_commutative(v, op);
    } else {
      (void)tmp;
      return warp<G>::reduce(v, op);
    }
  }
};

template <int B, int G, int U, class T, class Acc, class Out, class Op, class Load, class Fin>
PK_KERNEL PK_LAUNCH_BOUNDS(B) void segment_reduce_kernel(const T* in, Out* out, reduction::seg_map map,
                                                         std::int64_t segments, Op op, Acc identity, Load load,
                                                         Fin fin) {
  using reducer = group_reducer<B, G, Acc, Op>;
  PK_SHARED(typename reducer::temp_storage, storage);
  constexpr int groups = B / G;
  const int g = thread_rank() / G, t = thread_rank() % G;
  // Every thread runs the same number of iterations (collectives must not diverge): a group without a
  // segment in the last round reduces nothing and writes nothing.
  for (std::int64_t base = std::int64_t{block_idx().x} * groups; base < segments;
       base += std::int64_t{grid_dim().x} * groups) {
    const std::int64_t seg = base + g;
    const bool live = seg < segments;
    const seg_loc l = live ? locate(map, seg) : seg_loc{0, 0, 1, 0};
    Acc acc = identity;
    if (l.stride == 1) {
      // An empty segment forms no pointer: the input of an empty problem may be null.
      if (l.len > 0) acc = reduce_contiguous<G, U>(in + l.begin, l.len, t, op, acc, load);
    } else {
      for (std::int64_t j = t; j < l.len; j += G) acc = op(acc, load(in[l.begin + j * l.stride], j));
    }
    acc = reducer::all_reduce(acc, op, storage);
    if (t == 0 && live) out[l.out] = fin(acc);
  }
}

//! One thread per output, sequential along the axis (coalesced when consecutive outputs are
//! consecutive in memory, e.g. reducing the rows axis of a row-major matrix).
template <int B, class T, class Acc, class Out, class Op, class Load, class Fin>
PK_KERNEL PK_LAUNCH_BOUNDS(B) void strided_reduce_kernel(const T* in, Out* out, reduction::seg_map map,
                                                         std::int64_t segments, Op op, Acc identity, Load load,
                                                         Fin fin) {
  for (std::int64_t seg = std::int64_t{block_idx().x} * B + thread_rank(); seg < segments;
       seg += std::int64_t{grid_dim().x} * B) {
    const seg_loc l = locate(map, seg);
    Acc acc = identity;
    for (std::int64_t j = 0; j < l.len; ++j) acc = op(acc, load(in[l.begin + j * l.stride], j));
    out[l.out] = fin(acc);
  }
}

}  // namespace impl
PK_DETAIL_TARGET_END
