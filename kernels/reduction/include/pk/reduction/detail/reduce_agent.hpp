// Device-wide reduction, device code: the block "agent" and the single-pass kernel.
//
// Single pass, one launch: each block reduces a grid-strided set of tiles and writes one partial;
// the last block to finish (a ticket counter in the workspace) reduces the partials in block order
// and writes the result, then resets the counter for the next call. Run-to-run deterministic for a
// plan: every combination order depends only on the policy, the grid and the arch's warp size.
//
// The reduction is given as load(x, index) -> Acc, op(Acc, Acc), the identity and finalize(Acc) -> Out
// (detail/reduce_ops.hpp); the index is the element's position in the input (argmin/argmax).
#pragma once
#include <pk/portable/block.hpp>
#include <pk/portable/memory.hpp>
#include <pk/portable/numeric.hpp>
#include <pk/reduction/detail/reduce_ops.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN
namespace impl {

//! Scratch the kernel needs: `grid` partials and a ticket counter (zero between calls).
template <class Acc>
struct reduce_workspace {
  Acc* partials;
  unsigned* ticket;
};

//! Reads a value another block wrote (after the ticket's fences) without a stale cached copy: through
//! volatile 4-byte words, so that any trivially copyable accumulator (structs included) works.
template <class A>
PK_DEVICE A load_volatile(const A* p) {
  static_assert(sizeof(A) % 4 == 0, "accumulators are whole 4-byte words");
  struct words {
    std::uint32_t w[sizeof(A) / 4];
  } r;
  const volatile std::uint32_t* src = reinterpret_cast<const volatile std::uint32_t*>(p);
#pragma unroll
  for (std::size_t i = 0; i < sizeof(A) / 4; ++i) r.w[i] = src[i];
  return pk::detail::bit_cast<A>(r);  // not a store through a uint32_t* into an A (strict aliasing)
}

//! argmin/argmax (arg_op<Max>): +1 for argmax, -1 for argmin, 0 for every other operation.
template <class Op>
inline constexpr int arg_direction = 0;
template <bool Max>
inline constexpr int arg_direction<reduction::ops::arg_op<Max>> = Max ? 1 : -1;

//! Folds one vector of elements (indices i0, i0 + 1, ...) into an argmin/argmax accumulator. A thread
//! meets its elements in increasing index order, so an element only replaces the accumulator when it is
//! strictly more extreme, a NaN, or the accumulator is still the identity (a tie keeps the lower index).
//! Each element is first compared with the accumulator's value by one unordered comparison (true when it
//! is more extreme or either is NaN; in PTX a setp and a predicate and per element after the 16-bit
//! widening); the exact element-wise fold runs only for a vector that may win (rare past the first tiles).
template <int Dir, int Vec, class T, class A, class Op, class Load>
PK_DEVICE PK_FORCEINLINE void arg_fold_vector(reduction::ops::indexed<A>& acc, const vec<T, Vec>& v, std::int64_t i0,
                                              Op op, Load load) {
  bool may_win = acc.index == reduction::ops::no_index;
#pragma unroll
  for (int k = 0; k < Vec; ++k) {
    const A a = ::pk::widen<A>(v[k]);
    may_win = may_win || (Dir > 0 ? !(a <= acc.value) : !(a >= acc.value));
  }
  if (may_win) {
#pragma unroll
    for (int k = 0; k < Vec; ++k) acc = op(acc, load(v[k], i0 + k));
  }
}

template <int BlockThreads, int Items, int Vec, class T, class Acc, class Op, class Load>
PK_DEVICE Acc reduce_tiles(const T* in, std::int64_t n, Op op, Acc identity, Load load) {
  constexpr int tile = BlockThreads * Items;  // elements per block per tile
  const int t = thread_rank();
  const std::int64_t grid = grid_dim().x;
  Acc acc = identity;
  const bool aligned = (reinterpret_cast<std::uintptr_t>(in) % (sizeof(T) * Vec)) == 0;
  for (std::int64_t base = std::int64_t{block_idx().x} * tile; base < n; base += grid * tile) {
    if (aligned && base + tile <= n) {
      // Full tile: Items/Vec vector loads per thread, consecutive threads on consecutive vectors.
#pragma unroll
      for (int j = 0; j < Items / Vec; ++j) {
        const vec<T, Vec> v = load_vec<Vec>(in + base + (std::int64_t{j} * BlockThreads + t) * Vec);
        const std::int64_t i0 = base + (std::int64_t{j} * BlockThreads + t) * Vec;
        if constexpr (arg_direction<Op> != 0) {
          arg_fold_vector<arg_direction<Op>, Vec>(acc, v, i0, op, load);
        } else {
#pragma unroll
          for (int k = 0; k < Vec; ++k) acc = op(acc, load(v[k], i0 + k));
        }
      }
    } else {
      for (std::int64_t i = base + t; i < n && i < base + tile; i += BlockThreads) acc = op(acc, load(in[i], i));
    }
  }
  return acc;
}

template <int BlockThreads, int Items, int Vec, class T, class Acc, class Out, class Op, class Load, class Fin>
PK_KERNEL PK_LAUNCH_BOUNDS(BlockThreads) void reduce_single_pass_kernel(const T* in, std::int64_t n, Out* out,
                                                                         reduce_workspace<Acc> ws, Op op,
                                                                         Acc identity, Load load, Fin fin) {
  using reducer = block_reduce<Acc, BlockThreads>;
  PK_SHARED(typename reducer::temp_storage, storage);
  PK_SHARED(unsigned, is_last);
  Acc acc = reduce_tiles<BlockThreads, Items, Vec>(in, n, op, identity, load);
  acc = reducer(storage).reduce(acc, op);
  const unsigned grid = grid_dim().x;
  if (grid == 1) {
    if (thread_rank() == 0) *out = fin(acc);
    return;
  }
  if (thread_rank() == 0) {
    ws.partials[block_idx().x] = acc;
    thread_fence();  // the partial is visible device-wide before the ticket is taken
    const unsigned ticket = atomic_add(ws.ticket, 1u);
    thread_fence();
    is_last = ticket == grid - 1 ? 1u : 0u;
  }
  block::sync();
  if (is_last == 0u) return;
  // Last block: reduce the partials in block order (thread i takes i, i+B, ...; then the ordered
  // block tree). Loads go through volatile so that no stale cached copy is read.
  Acc p = identity;
  for (unsigned i = static_cast<unsigned>(thread_rank()); i < grid; i += BlockThreads) p = op(p, load_volatile(ws.partials + i));
  block::sync();  // `storage` is reused
  p = reducer(storage).reduce(p, op);
  if (thread_rank() == 0) {
    *out = fin(p);
    *ws.ticket = 0u;  // ready for the next call on this workspace
  }
}

}  // namespace impl
PK_DETAIL_TARGET_END
