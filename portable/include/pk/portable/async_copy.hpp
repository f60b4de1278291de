// Global -> shared copies of 16 bytes per lane that may complete asynchronously (cp.async where the
// arch has it, pk::arch_has_async_copy); elsewhere an ordinary load and store. Usage:
//   async_copy_16(smem_dst, gmem_src, in_bounds);  ...  async_copy_commit();
//   async_copy_wait_all();  block::sync();          // now every lane's copies are visible
#pragma once
#include <pk/portable/memory.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN

//! Copies 16 bytes from `src` (global, 16-byte aligned) to `dst` (shared, 16-byte aligned); when
//! `valid` is false, writes 16 zero bytes and does not read `src`.
template <class T>
PK_DEVICE PK_FORCEINLINE void async_copy_16(T* dst, const T* src, bool valid) {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_async_copy) {
    const auto d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    const int src_bytes = valid ? 16 : 0;  // cp.async zero-fills the bytes beyond src-size
    // L2::128B: the copy's whole 128-byte line is fetched into L2 (the neighbours' copies of the same row hit
    // it). Decode over 16-bit caches on the H200 read 1-3% faster with it on most rows (up to 6% over a
    // contiguous cache) and 1-4% slower with L2::256B (bench/results/decode-h200-2026-12-04c.md).
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes));
    return;
  }
#endif
  using chunk = vec<std::uint32_t, 4>;
  chunk c{};
  if (valid) c = load_vec<4>(reinterpret_cast<const std::uint32_t*>(src));
  store_vec(reinterpret_cast<std::uint32_t*>(dst), c);
}

//! Closes the group of async copies issued so far by this lane.
PK_DEVICE PK_FORCEINLINE void async_copy_commit() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_async_copy) asm volatile("cp.async.commit_group;\n" ::);
#endif
}

//! Waits until at most `Pending` of this lane's committed groups are still in flight (the oldest complete
//! first): a pipeline of Pending + 1 stages waits for its oldest stage only. The lane may then read what it
//! copied itself; a block::sync must follow before other lanes read the data. Without asynchronous copies
//! every copy has completed already. (The waits are compiler barriers: shared-memory reads are not moved
//! above them.)
template <int Pending>
PK_DEVICE PK_FORCEINLINE void async_copy_wait_pending() {
  static_assert(Pending >= 0 && Pending <= 7, "cp.async.wait_group takes 0..7");
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_async_copy) asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

//! Waits until every async copy of this lane has completed (a block::sync must follow before other
//! lanes read the data).
PK_DEVICE PK_FORCEINLINE void async_copy_wait_all() {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_has_async_copy) asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

PK_DETAIL_TARGET_END
