// Matrix-multiply atoms: one hardware matrix instruction each, D = A * B + C with fp32 accumulation,
// executed by one warp (wavefront), with the instruction's exact thread -> value layout.
//
// Every atom gives its fragment layouts as constexpr functions of (lane, value index), in CuTe notation
// (T = lanes, V = values per lane):
//   A: (T, V_A) -> (M, K)   a_m(lane, v), a_k(lane, v)        A is M x K, K fastest in each run
//   B: (T, V_B) -> (N, K)   b_n(lane, v), b_k(lane, v)        B is K x N ("tn": both operands K-major)
//   C: (T, V_C) -> (M, N)   c_m(lane, v), c_n(lane, v)        accumulators, fp32
// plus `a_run` / `b_run`: values that are consecutive in K (and consecutive in the fragment), so a
// kernel can load them as one vector; `c_row_lanes`: a row of C is spread over the `c_row_lanes`
// lanes that differ only in their low log2(c_row_lanes) bits (row reductions shuffle over those).
//
// On GPUs `mma()` is the instruction itself (inline PTX mma.sync, __builtin_amdgcn_mfma_*,
// __builtin_amdgcn_wmma_*). On the host emulator it is a warp-wide collective (backend::host::
// warp_custom): once every lane has arrived, the operands are gathered from every lane's registers
// through the layout functions above, multiplied in fp32, and D is scattered back the same way; an
// operand element that two lanes must hold identically (WMMA's duplicated A/B in wave32) but do not,
// or one that no lane holds, makes the whole D NaN, so a layout mistake cannot pass a test.
//
// Atoms are class templates over the 16-bit input type so that only the selected atom's instruction is
// ever instantiated (each builtin exists only on its own target); the named aliases are the atoms.
#pragma once
#include <pk/portable/fp8.hpp>
#include <pk/portable/numeric.hpp>
#include <pk/portable/warp.hpp>

#include <cstdint>
#include <type_traits>

PK_DETAIL_TARGET_BEGIN

//! N values of T held by one lane: one operand or accumulator fragment of an atom.
template <class T, int N>
struct alignas(N * sizeof(T) >= 16 ? 16 : N * sizeof(T)) fragment {
  T v[N];
  PK_HOST_DEVICE T& operator[](int i) noexcept { return v[i]; }
  PK_HOST_DEVICE const T& operator[](int i) const noexcept { return v[i]; }
};

namespace impl {

#if defined(PK_DETAIL_BACKEND_HOST)
// Per-lane operand pointers handed to the warp-wide emulation.
template <class Atom>
struct mma_lane_io {
  const typename Atom::a_frag* a;
  const typename Atom::b_frag* b;
  const typename Atom::c_frag* c;
};

// Places `value` at (r, col) of a row-major matrix; a second lane placing different bits there (an
// operand the instruction requires to be duplicated) marks the operand inconsistent.
template <class T>
inline void emu_place(float* m, std::uint16_t* bits, unsigned char* seen, int idx, T value, bool& bad) {
  std::uint16_t b;
  __builtin_memcpy(&b, &value, sizeof b);
  if (seen[idx] && bits[idx] != b) bad = true;
  seen[idx] = 1;
  bits[idx] = b;
  m[idx] = static_cast<float>(value);
}

// The warp-wide emulation of one atom (see the header comment).
template <class Atom>
void emulate_mma(const void*, int lanes, const void* const* in, void* const* out) {
  constexpr int M = Atom::M, N = Atom::N, K = Atom::K;
  float a[M * K], b[K * N], c[M * N];
  std::uint16_t abits[M * K], bbits[K * N];
  unsigned char aseen[M * K] = {}, bseen[K * N] = {}, cseen[M * N] = {};
  bool bad = lanes < Atom::lanes;
  for (int l = 0; l < lanes && l < Atom::lanes; ++l) {
    const auto& io = *static_cast<const mma_lane_io<Atom>*>(in[l]);
    for (int v = 0; v < Atom::a_vals; ++v)
      emu_place(a, abits, aseen, Atom::a_m(l, v) * K + Atom::a_k(l, v), io.a->v[v], bad);
    for (int v = 0; v < Atom::b_vals; ++v)
      emu_place(b, bbits, bseen, Atom::b_k(l, v) * N + Atom::b_n(l, v), io.b->v[v], bad);
    for (int v = 0; v < Atom::c_vals; ++v) {
      const int idx = Atom::c_m(l, v) * N + Atom::c_n(l, v);
      bad = bad || cseen[idx];
      cseen[idx] = 1;
      c[idx] = io.c->v[v];
    }
  }
  for (int i = 0; i < M * K; ++i) bad = bad || !aseen[i];
  for (int i = 0; i < K * N; ++i) bad = bad || !bseen[i];
  for (int i = 0; i < M * N; ++i) bad = bad || !cseen[i];
  float d[M * N];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = 0.0f;  // products of 16-bit inputs are exact in fp32; the sum is fp32, in K order
      for (int k = 0; k < K; ++k) acc += a[m * K + k] * b[k * N + n];
      d[m * N + n] = bad ? __builtin_nanf("") : acc + c[m * N + n];
    }
  for (int l = 0; l < lanes && l < Atom::lanes; ++l) {
    auto& dl = *static_cast<typename Atom::c_frag*>(out[l]);
    for (int v = 0; v < Atom::c_vals; ++v) dl.v[v] = d[Atom::c_m(l, v) * N + Atom::c_n(l, v)];
  }
}

template <class Atom>
PK_FORCEINLINE void host_mma(typename Atom::c_frag& d, const typename Atom::a_frag& a,
                             const typename Atom::b_frag& b, const typename Atom::c_frag& c, site s) {
  const mma_lane_io<Atom> io{&a, &b, &c};
  typename Atom::c_frag r;
  backend::host::warp_custom(&emulate_mma<Atom>, nullptr, &io, &r, s);
  d = r;
}
#endif

}  // namespace impl


// ---------------------------------------------------------------------------------------------------
// Operand loads from shared memory. Every atom has
//   load_a(a_frag&, tile, ld, lane)           A block (M x K) of a row-major tile [m][k] (K contiguous)
//   load_b_nk(b_frag (&)[b_group], tile, ld)  b_group adjacent N blocks of a K-contiguous tile [n][k]
//   load_b_kn(b_frag (&)[b_group], tile, ld)  the same from an N-contiguous tile [k][n]
// with `ld` the row pitch in elements. The generic versions below read each lane's values through the
// layout functions (runs of a_run / b_run consecutive K elements as one vector); an atom may use a
// faster instruction with the same result (ldmatrix for mma.sync).
namespace mma_load {
template <class Atom, class T>
PK_DEVICE PK_FORCEINLINE void a_generic(typename Atom::a_frag& f, const T* tile, int ld, int lane) {
  constexpr int per = Atom::a_run < 8 ? Atom::a_run : 8;  // at most one 16-byte vector per load
#pragma unroll
  for (int v = 0; v < Atom::a_vals; v += per) {
    const vec<T, per> x = load_vec<per>(tile + Atom::a_m(lane, v) * ld + Atom::a_k(lane, v));
#pragma unroll
    for (int e = 0; e < per; ++e) f.v[v + e] = x[e];
  }
}
template <class Atom, class T>
PK_DEVICE PK_FORCEINLINE void b_nk_generic(typename Atom::b_frag (&f)[Atom::b_group], const T* tile, int ld, int lane) {
  constexpr int per = Atom::b_run < 8 ? Atom::b_run : 8;
#pragma unroll
  for (int g = 0; g < Atom::b_group; ++g)
#pragma unroll
    for (int v = 0; v < Atom::b_vals; v += per) {
      const vec<T, per> x = load_vec<per>(tile + (g * Atom::N + Atom::b_n(lane, v)) * ld + Atom::b_k(lane, v));
#pragma unroll
      for (int e = 0; e < per; ++e) f[g].v[v + e] = x[e];
    }
}
template <class Atom, class T>
PK_DEVICE PK_FORCEINLINE void b_kn_generic(typename Atom::b_frag (&f)[Atom::b_group], const T* tile, int ld, int lane) {
#pragma unroll
  for (int g = 0; g < Atom::b_group; ++g)
#pragma unroll
    for (int v = 0; v < Atom::b_vals; ++v) f[g].v[v] = tile[Atom::b_k(lane, v) * ld + g * Atom::N + Atom::b_n(lane, v)];
}
}  // namespace mma_load

namespace mma_layout {
//! True when the `run` values starting at each multiple of `run` are consecutive in K (A operand).
template <class Atom>
constexpr bool a_runs_contiguous() {
  for (int l = 0; l < Atom::lanes; ++l)
    for (int v = 0; v < Atom::a_vals; ++v)
      if (v % Atom::a_run != 0 && (Atom::a_k(l, v) != Atom::a_k(l, v - 1) + 1 || Atom::a_m(l, v) != Atom::a_m(l, v - 1)))
        return false;
  return true;
}
template <class Atom>
constexpr bool b_runs_contiguous() {
  for (int l = 0; l < Atom::lanes; ++l)
    for (int v = 0; v < Atom::b_vals; ++v)
      if (v % Atom::b_run != 0 && (Atom::b_k(l, v) != Atom::b_k(l, v - 1) + 1 || Atom::b_n(l, v) != Atom::b_n(l, v - 1)))
        return false;
  return true;
}
//! True when value v of C lies on the same row in the c_row_lanes lanes that differ only in their low
//! bits (so a row statistic of value v reduces with xor shuffles over those lanes).
template <class Atom>
constexpr bool c_rows_in_low_lane_bits() {
  for (int l = 0; l < Atom::lanes; ++l)
    for (int v = 0; v < Atom::c_vals; ++v)
      for (int x = 1; x < Atom::c_row_lanes; ++x)
        if (Atom::c_m(l ^ x, v) != Atom::c_m(l, v)) return false;
  return true;
}
//! When the accumulators of K/N adjacent C tiles are, in the same lane, exactly the A operand of the
//! next product (mma.sync: the FlashAttention-2 register reuse of P), `c_to_a_tile(v)` / `c_to_a_val(v)`
//! say which C tile and value feed A value v; otherwise c_feeds_a() is false and P goes through memory.
template <class Atom>
constexpr int c_to_a_tile(int v) { return Atom::a_k(0, v) / Atom::N; }
template <class Atom>
constexpr int c_to_a_val(int v) {
  for (int w = 0; w < Atom::c_vals; ++w)
    if (Atom::c_m(0, w) == Atom::a_m(0, v) && Atom::c_n(0, w) == Atom::a_k(0, v) % Atom::N) return w;
  return -1;
}
template <class Atom>
constexpr bool c_feeds_a() {
  if (Atom::K % Atom::N != 0) return false;
  for (int v = 0; v < Atom::a_vals; ++v) {
    const int w = c_to_a_val<Atom>(v);
    if (w < 0) return false;
    for (int l = 0; l < Atom::lanes; ++l)
      if (Atom::c_m(l, w) != Atom::a_m(l, v) || Atom::c_n(l, w) != Atom::a_k(l, v) % Atom::N ||
          Atom::a_k(l, v) / Atom::N != c_to_a_tile<Atom>(v))
        return false;
  }
  return true;
}
}  // namespace mma_layout

// ---------------------------------------------------------------------------------------------------
// B operands from FP8 e4m3 codes in shared memory (KV caches), converted in registers to the atom's fp16
// inputs (pk/portable/fp8.hpp: exact, each value times 2^-fp8_convert_shift<Fnuz>):
//   load_b_nk_fp8<Fnuz>(b_frag (&)[b_group], tile, r0, c0, lane)   the block at (r0, c0) of a K-contiguous
//                                                                   tile [n][k] of codes
//   load_b_kn_fp8<Fnuz>(b_frag (&)[b_group], tile, r0, c0, lane)   the same from an N-contiguous tile [k][n]
// `tile` is any byte tile with `data` and a static `offset(r, c)` that keeps each 16-byte chunk of a row
// contiguous and 16-byte aligned (pk/portable/tile.hpp: swizzled_byte_tile); r0 is a multiple of 8, c0 of the
// block's width. A byte tile cannot be read with the 16-bit operand layouts' instructions as is, so an
// atom may read the codes in another order, which it states as two column maps:
//   fp8_k_col(k): the tile column (within a block of K) that holds the operand's k index for load_b_nk_fp8;
//                 the A operand it multiplies must then be stored with its columns in the same order;
//   fp8_n_col(c): the tile column (within a block of b_group * N) that load_b_kn_fp8 reads for output
//                 column c; column c of the product then holds the values of tile column fp8_n_col(c).
// Both maps are identities on atoms that read the codes through their layout functions alone. The generic
// loads below implement the definition (the emulator's, and AMD's); an atom's own may be faster.
namespace mma_fp8 {
//! Four codes (lowest byte first) as values v..v+3 of a B fragment.
template <class Atom, bool Fnuz>
PK_DEVICE PK_FORCEINLINE void put4(typename Atom::b_frag& f, int v, std::uint32_t codes) {
  std::uint32_t lo, hi;
  fp8x4_to_half<Fnuz>(codes, lo, hi);
  __builtin_memcpy(&f.v[v], &lo, sizeof lo);
  __builtin_memcpy(&f.v[v + 2], &hi, sizeof hi);
}
template <class Atom>
constexpr bool nk_runs_of_four() {
  if (Atom::b_run % 4 != 0 || Atom::b_vals % 4 != 0) return false;
  for (int k = 0; k < Atom::K; ++k)
    if (Atom::fp8_k_col(k) != k) return false;
  return mma_layout::b_runs_contiguous<Atom>();
}
template <class Atom, bool Fnuz, class Tile>
PK_DEVICE PK_FORCEINLINE void b_nk_generic(typename Atom::b_frag (&f)[Atom::b_group], const Tile& t, int r0, int c0, int lane) {
  const auto* tile = reinterpret_cast<const std::uint8_t*>(t.data);
  static_assert(std::is_same_v<typename Atom::element, fp16> && Atom::b_vals % 4 == 0, "FP8 operands: fp16 atoms, whole pairs of pairs");
#pragma unroll
  for (int g = 0; g < Atom::b_group; ++g)
#pragma unroll
    for (int v = 0; v < Atom::b_vals; v += 4) {
      std::uint32_t codes = 0;
      if constexpr (nk_runs_of_four<Atom>()) {
        codes = load_vec<1>(reinterpret_cast<const std::uint32_t*>(tile + Tile::offset(r0 + g * Atom::N + Atom::b_n(lane, v), c0 + Atom::b_k(lane, v))))[0];
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          codes |= std::uint32_t{tile[Tile::offset(r0 + g * Atom::N + Atom::b_n(lane, v + i), c0 + Atom::fp8_k_col(Atom::b_k(lane, v + i)))]}
                   << (8 * i);
      }
      put4<Atom, Fnuz>(f[g], v, codes);
    }
}
template <class Atom, bool Fnuz, class Tile>
PK_DEVICE PK_FORCEINLINE void b_kn_generic(typename Atom::b_frag (&f)[Atom::b_group], const Tile& t, int r0, int c0, int lane) {
  const auto* tile = reinterpret_cast<const std::uint8_t*>(t.data);
  static_assert(std::is_same_v<typename Atom::element, fp16> && Atom::b_vals % 4 == 0, "FP8 operands: fp16 atoms, whole pairs of pairs");
#pragma unroll
  for (int g = 0; g < Atom::b_group; ++g)
#pragma unroll
    for (int v = 0; v < Atom::b_vals; v += 4) {
      std::uint32_t codes = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i)
        codes |= std::uint32_t{tile[Tile::offset(r0 + Atom::b_k(lane, v + i), c0 + Atom::fp8_n_col(g * Atom::N + Atom::b_n(lane, v + i)))]}
                 << (8 * i);
      put4<Atom, Fnuz>(f[g], v, codes);
    }
}
//! Whether an atom's FP8 column maps are permutations of their blocks (every code read once).
template <class Atom>
constexpr bool fp8_orders_are_permutations() {
  bool k[Atom::K] = {}, n[Atom::b_group * Atom::N] = {};
  for (int i = 0; i < Atom::K; ++i) {
    const int c = Atom::fp8_k_col(i);
    if (c < 0 || c >= Atom::K || k[c]) return false;
    k[c] = true;
  }
  for (int i = 0; i < Atom::b_group * Atom::N; ++i) {
    const int c = Atom::fp8_n_col(i);
    if (c < 0 || c >= Atom::b_group * Atom::N || n[c]) return false;
    n[c] = true;
  }
  return true;
}
//! The tile column of output column c of a product whose B operand came from load_b_kn_fp8.
template <class Atom>
PK_HOST_DEVICE constexpr int n_col(int c) {
  constexpr int block = Atom::b_group * Atom::N;
  return c / block * block + Atom::fp8_n_col(c % block);
}
//! Which column of the logical A matrix the A operand's storage holds at column `stored`, when it multiplies
//! B operands from load_b_nk_fp8: the k index `stored` meets the codes of tile column fp8_k_col(k), block by
//! block of K.
template <class Atom>
PK_HOST_DEVICE constexpr int k_source(int stored) {
  const int base = stored / Atom::K * Atom::K, k = stored % Atom::K;
  return base + Atom::fp8_k_col(k);
}
}  // namespace mma_fp8

//! Two floats rounded to nearest even into a packed pair of T (x in the low half), as one 32-bit value.
template <class T>
PK_DEVICE PK_FORCEINLINE std::uint32_t pack2(float x, float y) {
#if defined(PK_DETAIL_BACKEND_CUDA)
  if constexpr (arch_mma == archdb::mma_family::mma_sync_m16n8k16) {
    std::uint32_t r;
    if constexpr (std::is_same_v<T, bf16>)
      asm("cvt.rn.bf16x2.f32 %0, %2, %1;\n" : "=r"(r) : "f"(x), "f"(y));
    else
      asm("cvt.rn.f16x2.f32 %0, %2, %1;\n" : "=r"(r) : "f"(x), "f"(y));
    return r;
  }
#endif
  const T a(x), b(y);
  return static_cast<std::uint32_t>(a.bits) | (static_cast<std::uint32_t>(b.bits) << 16);
}

// ---------------------------------------------------------------------------------------------------
// NVIDIA sm_80+: mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 (PTX ISA
// "Matrix Fragments for mma.m16n8k16 with floating point type"). g = lane / 4, t = lane % 4.
//   A (T32,V8) -> (M16,K16): m = g + 8*((v/2)%2), k = 2t + v%2 + 8*(v/4)   (a0..a7 in 4 .b32 regs)
//   B (T32,V4) -> (N8,K16):  n = g,               k = 2t + v%2 + 8*(v/2)   (b0..b3 in 2 .b32 regs)
//   C (T32,V4) -> (M16,N8):  m = g + 8*(v/2),     n = 2t + v%2             (c0..c3)
template <class T>
struct mma_sm80_16x8x16 {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, fp16>, "mma.sync m16n8k16: bf16 or fp16 inputs");
  using element = T;
  static constexpr int M = 16, N = 8, K = 16, lanes = 32;
  static constexpr int a_vals = 8, b_vals = 4, c_vals = 4;
  static constexpr int a_run = 2, b_run = 2, c_row_lanes = 4;
  using a_frag = fragment<T, a_vals>;
  using b_frag = fragment<T, b_vals>;
  using c_frag = fragment<float, c_vals>;
  PK_HOST_DEVICE static constexpr int a_m(int l, int v) { return l / 4 + 8 * ((v / 2) % 2); }
  PK_HOST_DEVICE static constexpr int a_k(int l, int v) { return 2 * (l % 4) + v % 2 + 8 * (v / 4); }
  PK_HOST_DEVICE static constexpr int b_n(int l, int) { return l / 4; }
  PK_HOST_DEVICE static constexpr int b_k(int l, int v) { return 2 * (l % 4) + v % 2 + 8 * (v / 2); }
  PK_HOST_DEVICE static constexpr int c_m(int l, int v) { return l / 4 + 8 * (v / 2); }
  PK_HOST_DEVICE static constexpr int c_n(int l, int v) { return 2 * (l % 4) + v % 2; }

  PK_DEVICE static void mma(c_frag& d, const a_frag& a, const b_frag& b, const c_frag& c,
                            impl::site s = impl::site::current("mma.sync m16n8k16")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    impl::host_mma<mma_sm80_16x8x16>(d, a, b, c, s);
#elif defined(PK_DETAIL_BACKEND_CUDA)
    (void)s;
    const auto* ar = reinterpret_cast<const std::uint32_t*>(a.v);
    const auto* br = reinterpret_cast<const std::uint32_t*>(b.v);
    if constexpr (std::is_same_v<T, bf16>) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%10,%11,%12,%13};\n"
          : "=f"(d.v[0]), "=f"(d.v[1]), "=f"(d.v[2]), "=f"(d.v[3])
          : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "f"(c.v[0]), "f"(c.v[1]),
            "f"(c.v[2]), "f"(c.v[3]));
    } else {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%10,%11,%12,%13};\n"
          : "=f"(d.v[0]), "=f"(d.v[1]), "=f"(d.v[2]), "=f"(d.v[3])
          : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "f"(c.v[0]), "f"(c.v[1]),
            "f"(c.v[2]), "f"(c.v[3]));
    }
#else
    (void)d, (void)a, (void)b, (void)c, (void)s;
    static_assert(!is_device_pass || sizeof(T) == 0, "mma.sync exists only on NVIDIA targets");  // a host pass only parses it
#endif
  }

  // ldmatrix.x4 (PTX ISA "Warp-level matrix load instruction: ldmatrix"): lane l gives the address of row
  // l%8 of 8x8 matrix l/8; lane l receives, of matrix j, row l/4, columns 2(l%4)..+1 into register j
  // (.trans: column l/4, rows 2(l%4)..+1). The matrix order below makes the registers the A / B fragments.
  static constexpr int b_group = 2;
  PK_DEVICE static void load_a(a_frag& f, const T* tile, int ld, int lane) {
#if defined(PK_DETAIL_BACKEND_CUDA)
    // matrices: (m 0-7, k 0-7) (m 8-15, k 0-7) (m 0-7, k 8-15) (m 8-15, k 8-15)
    const T* p = tile + (lane % 16) * ld + 8 * (lane / 16);
    ldmatrix_x4<false>(reinterpret_cast<std::uint32_t*>(f.v), p);
#else
    mma_load::a_generic<mma_sm80_16x8x16>(f, tile, ld, lane);
#endif
  }
  PK_DEVICE static void load_b_nk(b_frag (&f)[b_group], const T* tile, int ld, int lane) {
#if defined(PK_DETAIL_BACKEND_CUDA)
    // matrices: (n 0-7, k 0-7) (n 0-7, k 8-15) (n 8-15, k 0-7) (n 8-15, k 8-15)
    const T* p = tile + ((lane % 8) + 8 * (lane / 16)) * ld + 8 * ((lane / 8) % 2);
    std::uint32_t r[4];
    ldmatrix_x4<false>(r, p);
    __builtin_memcpy(f[0].v, r, 8);
    __builtin_memcpy(f[1].v, r + 2, 8);
#else
    mma_load::b_nk_generic<mma_sm80_16x8x16>(f, tile, ld, lane);
#endif
  }
  PK_DEVICE static void load_b_kn(b_frag (&f)[b_group], const T* tile, int ld, int lane) {
#if defined(PK_DETAIL_BACKEND_CUDA)
    // transposed matrices: (k 0-7, n 0-7) (k 8-15, n 0-7) (k 0-7, n 8-15) (k 8-15, n 8-15)
    const T* p = tile + (lane % 16) * ld + 8 * (lane / 16);
    std::uint32_t r[4];
    ldmatrix_x4<true>(r, p);
    __builtin_memcpy(f[0].v, r, 8);
    __builtin_memcpy(f[1].v, r + 2, 8);
#else
    mma_load::b_kn_generic<mma_sm80_16x8x16>(f, tile, ld, lane);
#endif
  }

  // FP8 operands (mma_fp8): ldmatrix reads the codes as 16-bit pairs, so lane (g, t) receives 4 consecutive
  // codes of a row (non-transposed) or a pair of codes of two consecutive rows (transposed):
  //   load_b_nk_fp8: codes 4t..4t+3 of key g are the lane's k = 2t, 2t+1, 2t+8, 2t+9;
  //   load_b_kn_fp8: codes (2g, 2g+1) of keys 2t, 2t+1 (and 2t+8, 2t+9) are B's values at column g of the
  //                  even and the odd 8-column block of 16 tile columns.
  PK_HOST_DEVICE static constexpr int fp8_k_col(int k) { return 4 * ((k % 8) / 2) + 2 * (k / 8) + k % 2; }
  PK_HOST_DEVICE static constexpr int fp8_n_col(int c) { return 2 * (c % 8) + c / 8; }
  template <bool Fnuz, class Tile>
  PK_DEVICE static void load_b_nk_fp8(b_frag (&f)[b_group], const Tile& t, int r0, int c0, int lane) {
#if defined(PK_DETAIL_BACKEND_CUDA)
    static_assert(std::is_same_v<T, fp16>, "FP8 operands: the fp16 atom");
    // matrices (16 codes wide): (n 0-7) (n 8-15); lanes 0-15 give the row addresses.
    std::uint32_t r[2];
    ldmatrix_x2<false>(r, reinterpret_cast<const std::uint8_t*>(t.data) + Tile::offset(r0 + lane % 16, c0));
    mma_fp8::put4<mma_sm80_16x8x16, Fnuz>(f[0], 0, r[0]);
    mma_fp8::put4<mma_sm80_16x8x16, Fnuz>(f[1], 0, r[1]);
#else
    mma_fp8::b_nk_generic<mma_sm80_16x8x16, Fnuz>(f, t, r0, c0, lane);
#endif
  }
  template <bool Fnuz, class Tile>
  PK_DEVICE static void load_b_kn_fp8(b_frag (&f)[b_group], const Tile& t, int r0, int c0, int lane) {
#if defined(PK_DETAIL_BACKEND_CUDA)
    static_assert(std::is_same_v<T, fp16>, "FP8 operands: the fp16 atom");
    // transposed matrices (16 codes wide): (k 0-7) (k 8-15). r[i] bytes: (2t, 2g) (2t, 2g+1) (2t+1, 2g)
    // (2t+1, 2g+1), keys 8i on; the even columns' pairs of both matrices make f[0], the odd ones f[1].
    std::uint32_t r[2];
    ldmatrix_x2<true>(r, reinterpret_cast<const std::uint8_t*>(t.data) + Tile::offset(r0 + lane % 16, c0));
    mma_fp8::put4<mma_sm80_16x8x16, Fnuz>(f[0], 0, __byte_perm(r[0], r[1], 0x6420));
    mma_fp8::put4<mma_sm80_16x8x16, Fnuz>(f[1], 0, __byte_perm(r[0], r[1], 0x7531));
#else
    mma_fp8::b_kn_generic<mma_sm80_16x8x16, Fnuz>(f, t, r0, c0, lane);
#endif
  }

 private:
#if defined(PK_DETAIL_BACKEND_CUDA)
  template <bool Trans>
  PK_DEVICE static void ldmatrix_x2(std::uint32_t* r, const void* p) {
    const auto a = static_cast<unsigned>(__cvta_generic_to_shared(p));
    if constexpr (Trans)
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
    else
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  }
  template <bool Trans>
  PK_DEVICE static void ldmatrix_x4(std::uint32_t* r, const T* p) {
    const auto a = static_cast<unsigned>(__cvta_generic_to_shared(p));
    if constexpr (Trans)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                   : "r"(a));
    else
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                   : "r"(a));
  }
#endif
};
using mma_sm80_16x8x16_f32bf16bf16f32_tn = mma_sm80_16x8x16<bf16>;
using mma_sm80_16x8x16_f32f16f16f32_tn = mma_sm80_16x8x16<fp16>;

// ---------------------------------------------------------------------------------------------------
// AMD CDNA2/CDNA3 (gfx90a, gfx942), wave64: v_mfma_f32_32x32x8_{bf16 (the "_1k" encoding), f16}
// (AMD Matrix Instruction Calculator; CDNA3 ISA §7.1). h = lane / 32.
//   A (T64,V4) -> (M32,K8): m = lane%32, k = 4h + v
//   B (T64,V4) -> (N32,K8): n = lane%32, k = 4h + v
//   C (T64,V16) -> (M32,N32): m = 8*(v/4) + 4h + v%4, n = lane%32
template <class T>
struct mma_cdna_32x32x8 {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, fp16>, "MFMA 32x32x8: bf16 or fp16 inputs");
  using element = T;
  static constexpr int M = 32, N = 32, K = 8, lanes = 64;
  static constexpr int a_vals = 4, b_vals = 4, c_vals = 16;
  static constexpr int a_run = 4, b_run = 4, c_row_lanes = 32;
  using a_frag = fragment<T, a_vals>;
  using b_frag = fragment<T, b_vals>;
  using c_frag = fragment<float, c_vals>;
  PK_HOST_DEVICE static constexpr int a_m(int l, int) { return l % 32; }
  PK_HOST_DEVICE static constexpr int a_k(int l, int v) { return 4 * (l / 32) + v; }
  PK_HOST_DEVICE static constexpr int b_n(int l, int) { return l % 32; }
  PK_HOST_DEVICE static constexpr int b_k(int l, int v) { return 4 * (l / 32) + v; }
  PK_HOST_DEVICE static constexpr int c_m(int l, int v) { return 8 * (v / 4) + 4 * (l / 32) + v % 4; }
  PK_HOST_DEVICE static constexpr int c_n(int l, int) { return l % 32; }

  PK_DEVICE static void mma(c_frag& d, const a_frag& a, const b_frag& b, const c_frag& c,
                            impl::site s = impl::site::current("mfma 32x32x8")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    impl::host_mma<mma_cdna_32x32x8>(d, a, b, c, s);
#elif defined(PK_DETAIL_BACKEND_HIP)
    (void)s;
    using f32x16 = float __attribute__((ext_vector_type(16)));
    f32x16 acc = __builtin_bit_cast(f32x16, c);
    if constexpr (std::is_same_v<T, bf16>) {
      using i16x4 = short __attribute__((ext_vector_type(4)));
      acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(__builtin_bit_cast(i16x4, a), __builtin_bit_cast(i16x4, b), acc,
                                                      0, 0, 0);
    } else {
      using f16x4 = _Float16 __attribute__((ext_vector_type(4)));
      acc = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0,
                                                 0, 0);
    }
    d = __builtin_bit_cast(c_frag, acc);
#else
    (void)d, (void)a, (void)b, (void)c, (void)s;
    static_assert(!is_device_pass || sizeof(T) == 0, "MFMA exists only on AMD CDNA targets");  // a host pass only parses it
#endif
  }

  static constexpr int b_group = 1;
  PK_DEVICE static void load_a(a_frag& f, const T* tile, int ld, int lane) { mma_load::a_generic<mma_cdna_32x32x8>(f, tile, ld, lane); }
  PK_DEVICE static void load_b_nk(b_frag (&f)[b_group], const T* tile, int ld, int lane) {
    mma_load::b_nk_generic<mma_cdna_32x32x8>(f, tile, ld, lane);
  }
  PK_DEVICE static void load_b_kn(b_frag (&f)[b_group], const T* tile, int ld, int lane) {
    mma_load::b_kn_generic<mma_cdna_32x32x8>(f, tile, ld, lane);
  }
  // FP8 operands (mma_fp8): through the layout functions, columns in order.
  PK_HOST_DEVICE static constexpr int fp8_k_col(int k) { return k; }
  PK_HOST_DEVICE static constexpr int fp8_n_col(int c) { return c; }
  template <bool Fnuz, class Tile>
  PK_DEVICE static void load_b_nk_fp8(b_frag (&f)[b_group], const Tile& t, int r0, int c0, int lane) {
    mma_fp8::b_nk_generic<mma_cdna_32x32x8, Fnuz>(f, t, r0, c0, lane);
  }
  template <bool Fnuz, class Tile>
  PK_DEVICE static void load_b_kn_fp8(b_frag (&f)[b_group], const Tile& t, int r0, int c0, int lane) {
    mma_fp8::b_kn_generic<mma_cdna_32x32x8, Fnuz>(f, t, r0, c0, lane);
  }
};
using mma_cdna_32x32x8_f32bf16bf16f32 = mma_cdna_32x32x8<bf16>;
using mma_cdna_32x32x8_f32f16f16f32 = mma_cdna_32x32x8<fp16>;

// ---------------------------------------------------------------------------------------------------
// AMD WMMA 16x16x16 (wave32): v_wmma_f32_16x16x16_{bf16,f16}, in the operand layouts of RDNA3 (gfx11) or
// RDNA4 (gfx12). h = lane / 16.
// RDNA3 (gfx1100; RDNA3 ISA §7.9; AMD GPUOpen "How to accelerate AI applications on RDNA 3 using WMMA"):
// A and B are duplicated, lanes 16-31 must hold the same values as lanes 0-15.
//   A (T32,V16) -> (M16,K16): m = lane%16, k = v          (lanes l and l+16 identical)
//   B (T32,V16) -> (N16,K16): n = lane%16, k = v          (lanes l and l+16 identical)
//   C (T32,V8)  -> (M16,N16): m = 2v + h,  n = lane%16
// RDNA4 (gfx1201; AMD GPUOpen, "Using the Matrix Cores of AMD RDNA 4 architecture GPUs",
// https://gpuopen.com/learn/using_matrix_core_amd_rdna4/; llama.cpp ggml-cuda/mma.cuh, its RDNA4 tiles;
// clang's __builtin_amdgcn_wmma_*_w32_gfx12 take 8-element vectors): no duplication, each half-wave holds
// half of K.
//   A (T32,V8) -> (M16,K16): m = lane%16, k = 8h + v
//   B (T32,V8) -> (N16,K16): n = lane%16, k = 8h + v
//   C (T32,V8) -> (M16,N16): m = 8h + v,  n = lane%16
enum class wmma_gen : std::uint8_t { rdna3, rdna4 };
template <class T, wmma_gen G>
struct mma_wmma_16x16x16 {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, fp16>, "WMMA 16x16x16: bf16 or fp16 inputs");
  static constexpr bool rdna4 = G == wmma_gen::rdna4;
  using element = T;
  static constexpr int M = 16, N = 16, K = 16, lanes = 32;
  static constexpr int a_vals = rdna4 ? 8 : 16, b_vals = a_vals, c_vals = 8;
  static constexpr int a_run = a_vals, b_run = b_vals, c_row_lanes = 16;
  using a_frag = fragment<T, a_vals>;
  using b_frag = fragment<T, b_vals>;
  using c_frag = fragment<float, c_vals>;
  PK_HOST_DEVICE static constexpr int a_m(int l, int) { return l % 16; }
  PK_HOST_DEVICE static constexpr int a_k(int l, int v) { return rdna4 ? 8 * (l / 16) + v : v; }
  PK_HOST_DEVICE static constexpr int b_n(int l, int) { return l % 16; }
  PK_HOST_DEVICE static constexpr int b_k(int l, int v) { return rdna4 ? 8 * (l / 16) + v : v; }
  PK_HOST_DEVICE static constexpr int c_m(int l, int v) { return rdna4 ? 8 * (l / 16) + v : 2 * v + l / 16; }
  PK_HOST_DEVICE static constexpr int c_n(int l, int) { return l % 16; }

  PK_DEVICE static void mma(c_frag& d, const a_frag& a, const b_frag& b, const c_frag& c,
                            impl::site s = impl::site::current("wmma 16x16x16")) {
#if defined(PK_DETAIL_BACKEND_HOST)
    impl::host_mma<mma_wmma_16x16x16>(d, a, b, c, s);
#elif defined(PK_DETAIL_BACKEND_HIP)
    (void)s;
    using f32x8 = float __attribute__((ext_vector_type(8)));
    using i16xn = short __attribute__((ext_vector_type(a_vals)));
    using f16xn = _Float16 __attribute__((ext_vector_type(a_vals)));
    f32x8 acc = __builtin_bit_cast(f32x8, c);
    if constexpr (rdna4 && std::is_same_v<T, bf16>) {
      acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(__builtin_bit_cast(i16xn, a), __builtin_bit_cast(i16xn, b), acc);
    } else if constexpr (rdna4) {
      acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(f16xn, a), __builtin_bit_cast(f16xn, b), acc);
    } else if constexpr (std::is_same_v<T, bf16>) {
      acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(i16xn, a), __builtin_bit_cast(i16xn, b), acc);
    } else {
      acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(f16xn, a), __builtin_bit_cast(f16xn, b), acc);
    }
    d = __builtin_bit_cast(c_frag, acc);
#else
    (void)d, (void)a, (void)b, (void)c, (void)s;
    static_assert(!is_device_pass || sizeof(T) == 0, "WMMA exists only on AMD RDNA targets");  // a host pass only parses it
#endif
  }

  static constexpr int b_group = 1;
  PK_DEVICE static void load_a(a_frag& f, const T* tile, int ld, int lane) { mma_load::a_generic<mma_wmma_16x16x16>(f, tile, ld, lane); }
  PK_DEVICE static void load_b_nk(b_frag (&f)[b_group], const T* tile, int ld, int lane) {
    mma_load::b_nk_generic<mma_wmma_16x16x16>(f, tile, ld, lane);
  }
  PK_DEVICE static void load_b_kn(b_frag (&f)[b_group], const T* tile, int ld, int lane) {
    mma_load::b_kn_generic<mma_wmma_16x16x16>(f, tile, ld, lane);
  }
  // FP8 operands (mma_fp8): through the layout functions, columns in order.
  PK_HOST_DEVICE static constexpr int fp8_k_col(int k) { return k; }
  PK_HOST_DEVICE static constexpr int fp8_n_col(int c) { return c; }
  template <bool Fnuz, class Tile>
  PK_DEVICE static void load_b_nk_fp8(b_frag (&f)[b_group], const Tile& t, int r0, int c0, int lane) {
    mma_fp8::b_nk_generic<mma_wmma_16x16x16, Fnuz>(f, t, r0, c0, lane);
  }
  template <bool Fnuz, class Tile>
  PK_DEVICE static void load_b_kn_fp8(b_frag (&f)[b_group], const Tile& t, int r0, int c0, int lane) {
    mma_fp8::b_kn_generic<mma_wmma_16x16x16, Fnuz>(f, t, r0, c0, lane);
  }
};
template <class T>
using mma_rdna3_16x16x16 = mma_wmma_16x16x16<T, wmma_gen::rdna3>;
template <class T>
using mma_rdna4_16x16x16 = mma_wmma_16x16x16<T, wmma_gen::rdna4>;
using mma_rdna3_16x16x16_f32bf16bf16f32 = mma_rdna3_16x16x16<bf16>;
using mma_rdna3_16x16x16_f32f16f16f32 = mma_rdna3_16x16x16<fp16>;
using mma_rdna4_16x16x16_f32bf16bf16f32 = mma_rdna4_16x16x16<bf16>;
using mma_rdna4_16x16x16_f32f16f16f32 = mma_rdna4_16x16x16<fp16>;

static_assert(mma_fp8::fp8_orders_are_permutations<mma_sm80_16x8x16<fp16>>() &&
                  mma_fp8::fp8_orders_are_permutations<mma_cdna_32x32x8<fp16>>() &&
                  mma_fp8::fp8_orders_are_permutations<mma_rdna3_16x16x16<fp16>>() &&
                  mma_fp8::fp8_orders_are_permutations<mma_rdna4_16x16x16<fp16>>(),
              "FP8 operand column orders must be permutations");

//! The atom the portable tiled kernels use on this target, chosen by the archdb feature predicate
//! pk::arch_mma. The CUDA/HIP host pass (arch generic, no device code) gets the sm_80 atom as a
//! placeholder so that templates still parse there.
template <class T>
using arch_mma_atom =
    std::conditional_t<arch_mma == archdb::mma_family::mfma_cdna2 || arch_mma == archdb::mma_family::mfma_cdna3 ||
                           arch_mma == archdb::mma_family::mfma_cdna4,
                       mma_cdna_32x32x8<T>,
                       std::conditional_t<arch_mma == archdb::mma_family::wmma_rdna3, mma_rdna3_16x16x16<T>,
                                          std::conditional_t<arch_mma == archdb::mma_family::wmma_rdna4,
                                                             mma_rdna4_16x16x16<T>, mma_sm80_16x8x16<T>>>>;


PK_DETAIL_TARGET_END
