// Warpgroup MMA (sm_90a wgmma): four consecutive warps (a warpgroup, starting at a warp index divisible
// by 4) multiply a 64 x 16 A by a 16 x N B into a 64 x N fp32 accumulator spread over their 128 threads.
// B is always in shared memory (a descriptor, pk/portable/swizzle.hpp); A is in shared memory too ("ss")
// or in registers ("rs", the layout of wg_layout::a_*). Asynchronous: issue, commit a group, wait for
// groups; the accumulators must not be touched between issue and wait.
//
//   wg_fence();  wg_mma_ss<N>(acc, a_desc, b_desc, accumulate);  ...  wg_commit();  wg_wait<0>();
//
// On the emulator (host_sm90) each MMA is a collective of the warpgroup's 128 threads, computed at issue
// from shared memory through the descriptors with the ISA's layouts (backends/host intrinsics.hpp);
// commit and wait have nothing left to do. Other targets have no warpgroup MMA (arch_has_wgmma false);
// the kernels that use it are instantiated only where it exists. Room left for the other vendors'
// equivalents is described in docs/design.md ("Warp-specialized strategies").
#pragma once
#include <pk/portable/index.hpp>
#include <pk/portable/mma.hpp>

#include <cstdint>
#include <type_traits>

PK_DETAIL_TARGET_BEGIN

inline constexpr bool arch_has_wgmma = archdb::traits(device_arch).has_wgmma;

#if defined(PK_DETAIL_BACKEND_CUDA)
namespace impl::sm90 {
#include <pk/portable/detail/wgmma_sm90.inc>
}  // namespace impl::sm90
#endif

//! Threads of a warpgroup.
inline constexpr int warpgroup_threads = 128;

//! The thread -> element layouts of a warpgroup MMA of N columns (the PTX ISA's wgmma fragments):
//! accumulator value i = 4 j + r of thread t (warp w = t / 32, lane l) holds row 16 w + l / 4 + 8 (r / 2),
//! column 8 j + 2 (l % 4) + r % 2; the A fragment (8 16-bit values) value v holds row 16 w + l / 4 +
//! 8 ((v / 2) % 2), k = 2 (l % 4) + v % 2 + 8 (v / 4). A C layout in the sense of pk::c_rows (lanes are
//! the warpgroup's threads; a row's values live in the 4 lanes that differ in their low 2 bits).
template <int N>
struct wg_layout {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "warpgroup MMA: N is a multiple of 8 up to 256");
  static constexpr int M = 64, K = 16;
  static constexpr int lanes = warpgroup_threads;
  static constexpr int c_vals = N / 2;
  static constexpr int c_row_lanes = 4;
  PK_HOST_DEVICE static constexpr int c_m(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i % 4) / 2); }
  PK_HOST_DEVICE static constexpr int c_n(int t, int i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; }
  PK_HOST_DEVICE static constexpr int a_m(int t, int v) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((v / 2) % 2); }
  PK_HOST_DEVICE static constexpr int a_k(int t, int v) { return 2 * (t % 4) + v % 2 + 8 * (v / 4); }
  //! Accumulator values 8 kk + v (v < 8) sit where A value v of k step kk does: P needs no shuffle.
  static constexpr bool c_to_a_is_identity() {
    for (int t = 0; t < lanes; ++t)
      for (int v = 0; v < 8; ++v)
        if (c_m(t, v) != a_m(t, v) || c_n(t, v) != a_k(t, v)) return false;
    return true;
  }
};

//! Accumulators of one thread for a 64 x N warpgroup MMA.
template <int N>
struct wg_accum {
  using layout = wg_layout<N>;
  static constexpr int vals = N / 2;
  float v[vals];
  PK_DEVICE PK_FORCEINLINE void fill(float x) {
#pragma unroll
    for (int i = 0; i < vals; ++i) v[i] = x;
  }
};

//! The A fragment (k step kk) of a later MMA made from accumulator columns [16 kk, 16 kk + 16), rounded
//! to T: the accumulator layout over 16 columns is the A layout (values 8 kk .. 8 kk + 7 in order), so P
//! feeds O += P V straight from registers.
template <class T, int N>
PK_DEVICE PK_FORCEINLINE void wg_accum_to_a(std::uint32_t (&a)[4], const wg_accum<N>& c, int kk) {
  static_assert(wg_layout<N>::c_to_a_is_identity(), "wg_accum_to_a: one k step's accumulator columns are the A fragment");
#pragma unroll
  for (int r = 0; r < 4; ++r) a[r] = pack2<T>(c.v[8 * kk + 2 * r], c.v[8 * kk + 2 * r + 1]);
}

//! Orders earlier register writes of the accumulators before the MMAs that read them.
PK_DEVICE PK_FORCEINLINE void wg_fence() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_wgmma) asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
//! Closes the group of MMAs issued so far by this warpgroup.
PK_DEVICE PK_FORCEINLINE void wg_commit() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_wgmma) asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
//! Waits until at most `Pending` committed groups are still running.
template <int Pending>
PK_DEVICE PK_FORCEINLINE void wg_wait() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_wgmma) asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}
//! Keeps the compiler from moving accesses of `acc` across an MMA issue or wait.
template <int N>
PK_DEVICE PK_FORCEINLINE void wg_fence_operand(wg_accum<N>& acc) {
#if defined(PK_DETAIL_BACKEND_CUDA)
#pragma unroll
  for (int i = 0; i < N / 2; ++i) asm volatile("" : "+f"(acc.v[i])::"memory");
#else
  (void)acc;
#endif
}

#if defined(PK_DETAIL_BACKEND_HOST)
namespace impl {
//! The emulator's description of one warpgroup MMA, A still to be given (descriptor or registers).
template <class T, int N, bool BMnMajor>
backend::host::wgmma_op host_wgmma_op(wg_accum<N>& acc, std::uint64_t b_desc, bool accumulate) {
  backend::host::wgmma_op op;
  op.n = N;
  op.bf16 = std::is_same_v<T, bf16>;
  op.b_mn_major = BMnMajor;
  op.accumulate = accumulate;
  op.b_desc = b_desc;
  op.d = acc.v;
  return op;
}
}  // namespace impl
#endif

//! acc (+)= A B: A (64 x 16) and B (16 x N) in shared memory. B is K-major (N rows of K) unless BMnMajor.
template <class T, int N, bool BMnMajor = false>
PK_DEVICE PK_FORCEINLINE void wg_mma_ss(wg_accum<N>& acc, std::uint64_t a_desc, std::uint64_t b_desc, bool accumulate,
                                        impl::site s = impl::site::current("warpgroup MMA")) {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, fp16>, "warpgroup MMA: bf16 or fp16 inputs");
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::wgmma_op op = impl::host_wgmma_op<T, N, BMnMajor>(acc, b_desc, accumulate);
  op.a_desc = a_desc;
  backend::host::wgmma(op, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  if constexpr (arch_has_wgmma)
    impl::sm90::wgmma_ss<N, std::is_same_v<T, bf16>, 0, BMnMajor ? 1 : 0>(acc.v, a_desc, b_desc, accumulate ? 1 : 0);
#endif
}

//! acc (+)= A B: A (64 x 16) from this thread's registers (wg_layout's A fragment), B in shared memory.
template <class T, int N, bool BMnMajor = false>
PK_DEVICE PK_FORCEINLINE void wg_mma_rs(wg_accum<N>& acc, const std::uint32_t (&a)[4], std::uint64_t b_desc, bool accumulate,
                                        impl::site s = impl::site::current("warpgroup MMA")) {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, fp16>, "warpgroup MMA: bf16 or fp16 inputs");
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::wgmma_op op = impl::host_wgmma_op<T, N, BMnMajor>(acc, b_desc, accumulate);
  op.a_in_registers = true;
  op.a_regs = a;
  backend::host::wgmma(op, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  if constexpr (arch_has_wgmma) impl::sm90::wgmma_rs<N, std::is_same_v<T, bf16>, BMnMajor ? 1 : 0>(acc.v, a, b_desc, accumulate ? 1 : 0);
#endif
}

//! Register budget of a warpgroup role (setmaxnreg): producers give registers back (Increase false),
//! consumers take them. Every thread of the warpgroup executes it; 24 <= Regs <= 256, a multiple of 8.
template <int Regs, bool Increase>
PK_DEVICE PK_FORCEINLINE void wg_set_registers(impl::site s = impl::site::current("setmaxnreg")) {
  static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg: 24..256, a multiple of 8");
#if defined(PK_DETAIL_BACKEND_HOST)
  backend::host::set_max_registers(Regs, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
  (void)s;
  if constexpr (arch_has_wgmma) {
    if constexpr (Increase)
      asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
    else
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
  }
#endif
}

PK_DETAIL_TARGET_END
