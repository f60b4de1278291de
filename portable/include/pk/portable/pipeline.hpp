// Asynchronous pipelines: transaction barriers (mbarrier), tensor copies (TMA) that complete on them,
// named barriers among a subset of the block's warps, and the proxy fence. The sm_90 machinery of the
// warp-specialized kernels; on the emulator (host_sm90) each maps to its checked emulation
// (backends/host intrinsics.hpp, docs/emulator.md), elsewhere it does not exist (arch_has_tma false:
// kernels that use it are only instantiated for targets that have it).
//
//   producer                                   consumer
//   wait(empty[s], phase ^ 1)                  wait(full[s], phase)
//   arrive_expect_tx(full[s], bytes)           ... read stage s ...
//   tma_load(map, stage s, full[s], coords)    arrive(empty[s])
#pragma once
#include <pk/portable/index.hpp>
#include <pk/portable/memory.hpp>
#include <pk/portable/swizzle.hpp>
#include <pk/status.hpp>

#if defined(PK_DETAIL_BACKEND_CUDA)
#include <pk/backend/cuda/device.hpp>
#endif

#include <cstdint>

PK_DETAIL_TARGET_BEGIN

inline constexpr bool arch_has_tma = archdb::traits(device_arch).has_tma;

//! A transaction barrier in shared memory (PTX mbarrier). Declare it in shared memory; one thread
//! initialises it, then mbarrier_init_fence() and a block barrier make it visible.
#if defined(PK_DETAIL_BACKEND_HOST)
using mbarrier = backend::host::mbarrier_state;
#else
struct alignas(8) mbarrier {
  std::uint64_t state;
};
#endif

namespace impl {
#if defined(PK_DETAIL_BACKEND_CUDA)
PK_DEVICE PK_FORCEINLINE std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
#endif
}  // namespace impl

//! The shared-window address of `p` (what descriptors and barriers hold).
PK_DEVICE PK_FORCEINLINE std::uint32_t shared_address(const void* p, impl::site s = impl::site::current("shared address")) {
#if defined(PK_DETAIL_BACKEND_HOST)
  return backend::host::shared_offset(p, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  return impl::smem_addr(p);
#else
  (void)s;
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(p));
#endif
}

//! mbarrier.init with `arrivals` arrivals per phase (one thread).
PK_DEVICE PK_FORCEINLINE void mbarrier_init(mbarrier* b, int arrivals, impl::site s = impl::site::current("mbarrier init")) {
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::mbarrier_init(b, arrivals, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(impl::smem_addr(b)), "r"(arrivals));
#endif
}
//! Makes initialised barriers visible to the copy engine (then a block barrier makes them visible to the block).
PK_DEVICE PK_FORCEINLINE void mbarrier_init_fence() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
//! One arrival.
PK_DEVICE PK_FORCEINLINE void mbarrier_arrive(mbarrier* b, impl::site s = impl::site::current("mbarrier arrive")) {
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::mbarrier_arrive(b, 0, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(impl::smem_addr(b)) : "memory");
#endif
}
//! One arrival that also announces `bytes` transaction bytes (the tensor copies of this phase).
PK_DEVICE PK_FORCEINLINE void mbarrier_arrive_expect_tx(mbarrier* b, std::uint32_t bytes,
                                                        impl::site s = impl::site::current("mbarrier arrive.expect_tx")) {
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::mbarrier_arrive(b, bytes, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(impl::smem_addr(b)), "r"(bytes) : "memory");
#endif
}
//! Waits until the phase of parity `parity` has completed.
PK_DEVICE PK_FORCEINLINE void mbarrier_wait(mbarrier* b, int parity, impl::site s = impl::site::current("mbarrier wait")) {
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::mbarrier_wait(b, parity, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  const std::uint32_t a = impl::smem_addr(b);
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
  } while (done == 0);
#endif
}

//! Orders this thread's ordinary shared-memory writes before later reads by the async proxy (the tensor
//! cores' shared-memory operands, the copy engine); a barrier among the threads must follow.
PK_DEVICE PK_FORCEINLINE void fence_proxy_async_shared() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

//! Named barrier `id` (1..15; 0 is the block barrier) among `threads` threads (whole warps): sync waits,
//! arrive counts this warp without waiting (producer/consumer hand-offs, warpgroup ping-pong).
struct named_barrier {
  PK_DEVICE static void sync(int id, int threads, impl::site s = impl::site::current("named barrier sync")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    backend::host::named_barrier_sync(id, threads, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
  }
  PK_DEVICE static void arrive(int id, int threads, impl::site s = impl::site::current("named barrier arrive")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    backend::host::named_barrier_arrive(id, threads, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
  }
};

// ---------------------------------------------------------------------------------------------------
// Tensor maps and tensor copies.

//! A tiled tensor map, as the kernel receives it (by value in its parameter block; a __grid_constant__
//! parameter on CUDA, whose address is what the copy instruction takes). Built on the host by
//! make_tma_map (below) for the target of the launch.
#if defined(PK_DETAIL_BACKEND_HOST)
using tma_map = backend::host::tma_map;
#else
struct alignas(64) tma_map {
  std::uint64_t opaque[16];  // CUtensorMap: 128 bytes, 64-byte aligned
};
#endif

//! What a tensor map describes: a strided tensor of rank <= 5 (dimension 0 contiguous) and the box one
//! copy moves into a swizzled tile.
struct tma_desc {
  const void* base = nullptr;
  int rank = 0;
  int elem_bytes = 2;
  bool bf16 = true;                  //!< the element type (16-bit: bf16 or fp16)
  std::uint64_t dims[5] = {};        //!< elements
  std::uint64_t strides[5] = {};     //!< bytes; strides[0] = elem_bytes
  std::uint32_t box[5] = {};         //!< elements
  swizzle mode = swizzle::b128;
};

//! Copies the box at `coords` (dims order, elements; out-of-range elements read as zero) into shared
//! memory at `dst`, completing its bytes on `bar`. One thread issues it.
template <int Rank>
PK_DEVICE PK_FORCEINLINE void tma_load(const tma_map* map, void* dst, mbarrier* bar, const std::int32_t (&c)[Rank],
                                       impl::site s = impl::site::current("tensor copy")) {
  static_assert(Rank >= 1 && Rank <= 5, "tma_load: rank 1..5");
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::tma_load(map, dst, bar, c, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  const std::uint32_t d = impl::smem_addr(dst), b = impl::smem_addr(bar);
  const auto m = reinterpret_cast<std::uint64_t>(map);
  if constexpr (Rank == 2) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(d),
        "l"(m), "r"(b), "r"(c[0]), "r"(c[1])
        : "memory");
  } else if constexpr (Rank == 3) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(d),
        "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2])
        : "memory");
  } else if constexpr (Rank == 4) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(d),
        "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
        : "memory");
  } else {
    static_assert(Rank >= 2 && Rank <= 4, "tma_load: ranks 2-4 are wired on CUDA");
  }
#endif
}

//! Builds the tensor map of `d` for this translation unit's target (host code, before the launch).
inline status make_tma_map(const tma_desc& d, tma_map& out) {
#if defined(PK_DETAIL_BACKEND_HOST)
  out = tma_map{};
  out.base = d.base;
  out.rank = d.rank;
  out.elem_bytes = d.elem_bytes;
  for (int i = 0; i < d.rank && i < 5; ++i) {
    out.dims[i] = d.dims[i];
    out.strides[i] = d.strides[i];
    out.box[i] = d.box[i];
  }
  out.swizzle = static_cast<backend::host::swizzle_mode>(d.mode);
  return {};
#elif defined(PK_DETAIL_BACKEND_CUDA)
  return backend::cuda::encode_tensor_map(&out, d.base, d.rank, d.bf16, d.dims, d.strides, d.box, static_cast<int>(d.mode));
#else
  (void)d;
  (void)out;
  return unsupported("tensor maps: this target has no tensor copy engine");
#endif
}

PK_DETAIL_TARGET_END
