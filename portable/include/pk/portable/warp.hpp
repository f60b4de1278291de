// Warp collectives over a logical warp of LogicalWidth lanes (1..warp_size).
//
// Logical warps: a hardware warp is cut into segments of P = bit_ceil(LogicalWidth) lanes; logical
// lane i of a segment is hardware lane (segment*P + i). When LogicalWidth is not a power of two, lanes
// [LogicalWidth, P) of each segment are padding: they must still make the call (convergence), their
// inputs are ignored and their results are unspecified.
//
// Participation: every lane of the hardware warp calls the same collective at the same call site
// (no divergent calls). The host emulator reports a violation as an error naming the call sites.
//
// Collectives are not noexcept: on the emulator each one is a suspension point, and an error found
// there unwinds the GPU thread's stack.
#pragma once
#include <pk/portable/index.hpp>
#include <pk/portable/lane.hpp>

PK_DETAIL_TARGET_BEGIN

template <int LogicalWidth = warp_size>
struct warp {
  static_assert(LogicalWidth >= 1 && LogicalWidth <= warp_size, "logical warp wider than the arch's warp");
  static constexpr int width = LogicalWidth;
  static constexpr int segment = bit_ceil(LogicalWidth);  //!< hardware lanes per logical warp

  //! Logical lane in [0, segment); lanes >= width are padding.
  PK_DEVICE static int lane() { return lane_id() % segment; }
  //! Index of this logical warp within the block.
  PK_DEVICE static int index() { return thread_rank() / segment; }

  //! Effectively: `return v[segment_base + (src % segment)]` (CUDA __shfl_sync semantics).
  template <class T>
  PK_DEVICE static T shfl(const T& v, int src, impl::site s = impl::site::current("shfl")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    T r;
    backend::host::warp_shuffle(backend::host::collective_kind::shfl_idx, &v, &r, sizeof(T), segment, src, s);
    return r;
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    return backend::cuda::shfl(v, src, segment);
#else
    (void)s;
    return backend::hip::shfl(v, src, segment);
#endif
  }
  //! Effectively: `return lane() >= d ? v[lane - d] : v[lane]`.
  template <class T>
  PK_DEVICE static T shfl_up(const T& v, int d, impl::site s = impl::site::current("shfl_up")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    T r;
    backend::host::warp_shuffle(backend::host::collective_kind::shfl_up, &v, &r, sizeof(T), segment, d, s);
    return r;
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    return backend::cuda::shfl_up(v, d, segment);
#else
    (void)s;
    return backend::hip::shfl_up(v, d, segment);
#endif
  }
  //! Effectively: `return lane() + d < segment ? v[lane + d] : v[lane]`.
  template <class T>
  PK_DEVICE static T shfl_down(const T& v, int d, impl::site s = impl::site::current("shfl_down")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    T r;
    backend::host::warp_shuffle(backend::host::collective_kind::shfl_down, &v, &r, sizeof(T), segment, d, s);
    return r;
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    return backend::cuda::shfl_down(v, d, segment);
#else
    (void)s;
    return backend::hip::shfl_down(v, d, segment);
#endif
  }
  //! Effectively: `return v[lane ^ m]` (a source in a later segment yields the caller's own value).
  template <class T>
  PK_DEVICE static T shfl_xor(const T& v, int m, impl::site s = impl::site::current("shfl_xor")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    T r;
    backend::host::warp_shuffle(backend::host::collective_kind::shfl_xor, &v, &r, sizeof(T), segment, m, s);
    return r;
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    return backend::cuda::shfl_xor(v, m, segment);
#else
    (void)s;
    return backend::hip::shfl_xor(v, m, segment);
#endif
  }

  //! Bit i of the result is set iff `pred` is true on logical lane i (i < width). Effectively:
  //!   bool p[width]; p[lane()] = pred; <converge>; return sum_i(p[i] << i);
  PK_DEVICE static lane_mask ballot(bool pred, impl::site s = impl::site::current("ballot")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    const lane_mask hw = backend::host::warp_ballot(pred, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    const lane_mask hw = backend::cuda::ballot(pred);
#else
    (void)s;
    const lane_mask hw = backend::hip::ballot(pred);
#endif
    const int base = lane_id() - lane();
    return (hw >> base) & lanes_below(width);
  }
  //! True iff `pred` is true on some lane of the logical warp.
  PK_DEVICE static bool any(bool pred, impl::site s = impl::site::current("any")) {
    return ballot(pred, s) != 0;
  }
  //! True iff `pred` is true on every lane of the logical warp.
  PK_DEVICE static bool all(bool pred, impl::site s = impl::site::current("all")) {
    return ballot(pred, s) == lanes_below(width);
  }
  //! Convergence point of the hardware warp (__syncwarp).
  PK_DEVICE static void sync(impl::site s = impl::site::current("warp sync")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    backend::host::warp_sync(s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    backend::cuda::warp_sync();
#else
    (void)s;
    backend::hip::warp_sync();
#endif
  }

  //! Reduction of `v` over the `width` lanes of the logical warp with an associative (not necessarily
  //! commutative) `op`; the result is valid on every lane. Effectively:
  //!   `return op(...op(op(v[0], v[1]), v[2])..., v[width-1])` up to associativity.
  //! The combination tree is fixed (offsets 1, 2, 4, ... then a broadcast from lane 0), so the result
  //! is run-to-run deterministic for a given width.
  template <class T, class Op>
  PK_DEVICE static T reduce(T v, Op op, impl::site s = impl::site::current("warp reduce")) {
    const int l = lane();
#pragma unroll
    for (int o = 1; o < segment; o *= 2) {
      const T other = shfl_down(v, o, s);
      if (l + o < width) v = op(v, other);  // lane l now holds the ordered reduction of [l, l + 2o)
    }
    return shfl(v, 0, s);
  }
  //! Reduction of `v` over the logical warp with an associative and commutative `op` (a sum, a maximum)
  //! when `width` is a power of two: an xor butterfly, log2(width) shuffles and ops. Every lane ends with
  //! the same bits (each step combines the same two values on both lanes of a pair, and op(a, b) ==
  //! op(b, a)); reduce() issues about twice the instructions (a lane test a step and the broadcast).
  template <class T, class Op>
  PK_DEVICE static T all_reduce_commutative(T v, Op op, impl::site s = impl::site::current("warp all_reduce")) {
    static_assert(width == segment, "the butterfly needs a power-of-two logical warp (reduce() takes any width)");
#pragma unroll
    for (int o = segment / 2; o >= 1; o /= 2) v = op(v, shfl_xor(v, o, s));
    return v;
  }
};

PK_DETAIL_TARGET_END
