// Block-scope operations: the barrier and block-wide reductions (CUB pattern: the caller owns the
// shared memory through a nested TempStorage type).
#pragma once
#include <pk/portable/warp.hpp>

PK_DETAIL_TARGET_BEGIN

struct block {
  //! Barrier: every live thread of the block must reach the same call (__syncthreads); it also orders
  //! shared- and global-memory accesses of the block's threads. The emulator reports a barrier that
  //! cannot complete (threads exited or waiting elsewhere) as an error naming the sites.
  PK_DEVICE static void sync(impl::site s = impl::site::current("block barrier")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    backend::host::block_sync(s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    backend::cuda::block_sync();
#else
    (void)s;
    backend::hip::block_sync();
#endif
  }
  PK_DEVICE static int rank() { return thread_rank(); }
  PK_DEVICE static int size() {
    const idx3 d = block_dim();
    return static_cast<int>(d.x * d.y * d.z);
  }
};

enum class block_reduce_algo : unsigned char {
  warp_reductions,  //!< reduce each warp with shuffles, then the warp partials in warp 0
};

//! Block-wide reduction of one value per thread. Usage:
//!   using reducer = pk::block_reduce<float, 256>;
//!   PK_SHARED(reducer::temp_storage, tmp);
//!   float total = reducer(tmp).reduce(x, pk::plus{});   // valid in thread 0
template <class T, int BlockThreads, block_reduce_algo Algo = block_reduce_algo::warp_reductions>
class block_reduce {
  static_assert(BlockThreads % warp_size == 0, "block must be a whole number of warps");
  static constexpr int warps = BlockThreads / warp_size;  // 256 threads: 8 warps on sm_80, 4 on gfx942

 public:
  struct temp_storage {
    T warp_partials[warps];
    T result;
  };
  PK_DEVICE explicit block_reduce(temp_storage& storage) noexcept : storage_(storage) {}

  //! Ordered reduction over the block's threads in rank order; the result is valid in thread 0.
  //! Deterministic: the combination tree depends only on BlockThreads and the arch's warp size.
  template <class Op>
  PK_DEVICE T reduce(T v, Op op) {
    v = warp<>::reduce(v, op);
    if constexpr (warps == 1) {
      return v;
    } else {
      if (lane_id() == 0) storage_.warp_partials[warp_id()] = v;
      block::sync();
      if (warp_id() == 0) {
        T p = storage_.warp_partials[lane_id() % warps];
        v = warp<warps>::reduce(p, op);
      }
      return v;
    }
  }
  //! Like reduce(), with the result returned to every thread (one more barrier).
  template <class Op>
  PK_DEVICE T all_reduce(T v, Op op) {
    v = reduce(v, op);
    if (thread_rank() == 0) storage_.result = v;
    block::sync();
    v = storage_.result;
    block::sync();  // temp_storage may be reused by the caller after this
    return v;
  }

 private:
  temp_storage& storage_;
};

//! Common operators (usable as `op` above).
struct plus {
  template <class T> PK_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const { return a + b; }
};
struct maximum {
  template <class T> PK_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
struct minimum {
  template <class T> PK_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};

PK_DETAIL_TARGET_END
