// Tiles: a shared-memory tile (rows x cols of T, row-major, padded leading dimension) and a register
// tile of one warp (a grid of accumulator fragments of an MMA atom, in the atom's C layout). Small on
// purpose, after CuTe's layouts and ThunderKittens' st/rt tiles: the layout is a compile-time fact of
// the type, the data is a pointer (shared) or the fragments themselves (registers).
//
//   smem_tile<T, R, C>          (R,C) -> data[r * ld + c],  ld = C + pad
//   reg_tile<Atom, MT, NT>      (T, (MT, NT, V)) -> (MT*M, NT*N): lane l, fragment (i, j), value e holds
//                               element (i*M + c_m(l, e), j*N + c_n(l, e))
//   c_rows<Layout>              the rows of a C layout as seen from one lane: which values share a row,
//                               and a dense "row slot" index per distinct row (row statistics live there)
#pragma once
#include <pk/portable/async_copy.hpp>
#include <pk/portable/memory.hpp>
#include <pk/portable/mma.hpp>

#include <cstdint>

PK_DETAIL_TARGET_BEGIN

//! Padding of every shared-memory tile row: one 16-byte vector. Rows are (cols + pad) elements apart, so
//! with 32 banks x 4 bytes (archdb smem_banks / smem_bank_bytes on every supported arch) and 16-byte
//! aligned row starts, 8 consecutive rows read at the same column begin in 8 different 16-byte bank
//! groups: fragment loads that give each lane group its own row (ldmatrix, the generic per-lane loads)
//! and the row-wise 16-byte copies are conflict-free. This is the one statement of the rule; tile
//! footprints (and the planners' shared-memory sizes) follow from it.
inline constexpr int smem_row_pad_bytes = 16;

//! Bytes moved by one vector copy between global and shared memory (cp.async / a 16-byte load).
inline constexpr int tile_copy_bytes = 16;

//! A Rows x Cols tile of T in shared memory, row-major, rows `ld` elements apart. A view: `data` points
//! at the first element; the footprint is `elements` (a following tile starts there).
template <class T, int Rows, int Cols, int PadBytes = smem_row_pad_bytes>
struct smem_tile {
  static_assert(PadBytes % static_cast<int>(sizeof(T)) == 0 && (Cols * sizeof(T)) % tile_copy_bytes == 0,
                "smem_tile: whole elements of padding and whole 16-byte copies per row");
  using element = T;
  static constexpr int rows = Rows, cols = Cols;
  static constexpr int pad = PadBytes / static_cast<int>(sizeof(T));
  static constexpr int ld = Cols + pad;
  static constexpr int elements = Rows * ld;
  static constexpr int per_copy = tile_copy_bytes / static_cast<int>(sizeof(T));  // elements per 16-byte copy
  static constexpr int chunks = Cols / per_copy;                                  // copies per row

  T* data;

  PK_DEVICE PK_FORCEINLINE T* at(int r, int c) const { return data + r * ld + c; }
  //! The `i`-th tile of the same shape after this one (stage buffers laid out back to back).
  PK_DEVICE PK_FORCEINLINE smem_tile next(int i = 1) const { return smem_tile{data + i * elements}; }
  //! Starts the copy of `Rows` rows of global memory (row i at src + i*stride, Cols contiguous elements)
  //! into the tile by all `Threads` threads of the block, 16 bytes per asynchronous copy (plain loads
  //! where the arch has no async copy); rows >= valid are zero-filled. The caller commits and waits
  //! (async_copy_commit / async_copy_wait_all + block::sync).
  template <int Threads>
  PK_DEVICE PK_FORCEINLINE void load_async(const T* src, std::int64_t stride, int valid, int tid) const {
    constexpr int per = per_copy;
    if constexpr (Threads % chunks == 0) {
      // Each thread keeps one column of copies and walks rows Threads/chunks apart: one pointer each.
      constexpr int step = Threads / chunks;
      const int r0 = tid / chunks, c = tid % chunks;
      const T* s = src + r0 * stride + c * per;
      T* d = data + r0 * ld + c * per;
#pragma unroll
      for (int r = r0, i = 0; i < (Rows + step - 1) / step; ++i, r += step, s += step * stride, d += step * ld)
        if (Rows % step == 0 || r < Rows) async_copy_16(d, r < valid ? s : src, r < valid);
    } else {
      constexpr int total = Rows * chunks;
#pragma unroll
      for (int i0 = 0; i0 < total; i0 += Threads) {
        const int i = i0 + tid;
        if (total % Threads == 0 || i < total) {
          const int r = i / chunks, c = i % chunks;
          const bool ok = r < valid;
          async_copy_16(data + r * ld + c * per, ok ? src + r * stride + c * per : src, ok);
        }
      }
    }
  }

  //! Stores the first `valid` rows to global memory (row i at dst + i*stride) by all `Threads` threads,
  //! 16 bytes per store. The tile must be complete (block::sync after its writers).
  template <int Threads>
  PK_DEVICE PK_FORCEINLINE void store_rows(T* dst, std::int64_t stride, int valid, int tid) const {
    constexpr int per = per_copy;
    if constexpr (Threads % chunks == 0) {
      constexpr int step = Threads / chunks;  // whole rows per pass: one column of 16-byte stores per thread
      const int c = tid % chunks;
#pragma unroll
      for (int r = tid / chunks; r < Rows; r += step)
        if (r < valid) store_vec(dst + std::int64_t{r} * stride + c * per, load_vec<per>(data + r * ld + c * per));
    } else {
      for (int i = tid; i < Rows * chunks; i += Threads) {
        const int r = i / chunks, c = i % chunks;
        if (r < valid) store_vec(dst + std::int64_t{r} * stride + c * per, load_vec<per>(data + r * ld + c * per));
      }
    }
  }
};

//! A Rows x Cols tile of one-byte codes (FP8) in shared memory with no row padding: 16-byte chunk c of row r is
//! stored at chunk c ^ swizzle(r). Eight consecutive rows (from a multiple of 8) read at one column, as an
//! ldmatrix or a lane group's loads do, then fall in eight different 16-byte bank groups (32 banks x 4 bytes),
//! conflict-free as the padded smem_tile, without its 16 bytes per row (1/8 of a 128-byte row: the difference
//! between three and four decode blocks per SM). A view, as smem_tile.
template <class E, int Rows, int Cols>
struct swizzled_byte_tile {
  static_assert(sizeof(E) == 1, "swizzled_byte_tile: one-byte codes");
  static constexpr int chunks = Cols / 16;
  static_assert(Cols % 16 == 0 && (chunks == 4 || chunks == 8 || chunks == 16),
                "swizzled_byte_tile: rows of 64, 128 or 256 bytes");
  using element = E;
  static constexpr int rows = Rows, cols = Cols, ld = Cols, elements = Rows * Cols;

  E* data;

  //! The chunk permutation of row r: with 8+ chunks a row per 128-byte line (XOR the row's low 3 bits); with 4,
  //! two rows per line (XOR bits 1-2, so that the two rows of a line and the four lines differ).
  PK_HOST_DEVICE static constexpr int swizzle(int r) { return chunks >= 8 ? (r & 7) : ((r >> 1) & 3); }
  //! Byte offset of element (r, c) from `data`.
  PK_HOST_DEVICE static constexpr int offset(int r, int c) { return r * Cols + (((c >> 4) ^ swizzle(r)) << 4) + (c & 15); }
  PK_DEVICE PK_FORCEINLINE E* at(int r, int c) const { return data + offset(r, c); }
  PK_DEVICE PK_FORCEINLINE swizzled_byte_tile next(int i = 1) const { return swizzled_byte_tile{data + i * elements}; }
};

//! The swizzle's two promises, checked at compile time for every row width: each 16-byte chunk of 16 rows lands
//! in its own place within those rows' bytes, and the chunk at one column of 8 consecutive rows (from a multiple
//! of 8) falls in 8 different 16-byte bank groups.
template <class Tile>
constexpr bool swizzle_is_conflict_free_permutation() {
  constexpr int rows = 16, line_groups = 8;  // 32 banks x 4 bytes = 8 groups of 16 bytes
  bool used[rows * Tile::chunks] = {};
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < Tile::chunks; ++c) {
      const int o = Tile::offset(r, 16 * c);
      if (o % 16 != 0 || o / 16 >= rows * Tile::chunks || used[o / 16] || o / Tile::cols != r) return false;
      used[o / 16] = true;
    }
  for (int r0 = 0; r0 < rows; r0 += 8)
    for (int c = 0; c < Tile::chunks; ++c) {
      bool group[line_groups] = {};
      for (int i = 0; i < 8; ++i) {
        const int g = Tile::offset(r0 + i, 16 * c) / 16 % line_groups;
        if (group[g]) return false;
        group[g] = true;
      }
    }
  return true;
}
static_assert(swizzle_is_conflict_free_permutation<swizzled_byte_tile<std::uint8_t, 16, 64>>() &&
                  swizzle_is_conflict_free_permutation<swizzled_byte_tile<std::uint8_t, 16, 128>>() &&
                  swizzle_is_conflict_free_permutation<swizzled_byte_tile<std::uint8_t, 16, 256>>(),
              "swizzled_byte_tile: a permutation of each row's chunks, conflict-free over 8 rows");

//! The rows of a C (accumulator) layout as one lane sees them. `Layout` is anything with c_vals,
//! c_m(lane, v), lanes and c_row_lanes (every MMA atom of pk/portable/mma.hpp; a warpgroup accumulator
//! layout alike): the row of value v must not depend on the lane except through the row's lanes, so
//! that "values v and w share a row" is one compile-time fact for every lane.
template <class Layout>
struct c_rows {
  //! Whether values v and w lie on the same row (lane-independent, see lane_independent()).
  static constexpr bool same_row(int v, int w) { return Layout::c_m(0, v) == Layout::c_m(0, w); }
  //! The first value of v's row: row statistics are computed once per row, at its leader.
  static constexpr int leader(int v) {
    for (int w = 0; w < Layout::c_vals; ++w)
      if (same_row(v, w)) return w;
    return v;
  }
  static constexpr bool is_leader(int v) { return leader(v) == v; }
  //! Distinct rows per lane ("row slots").
  static constexpr int count() {
    int n = 0;
    for (int v = 0; v < Layout::c_vals; ++v) n += is_leader(v) ? 1 : 0;
    return n;
  }
  static constexpr int slots = count();
  struct slot_table {
    int v[Layout::c_vals];
  };
  static constexpr slot_table make_slot_table() {
    slot_table t{};
    for (int v = 0, n = 0; v < Layout::c_vals; ++v)
      if (is_leader(v)) t.v[v] = n++;
    for (int v = 0; v < Layout::c_vals; ++v) t.v[v] = t.v[leader(v)];
    return t;
  }
  //! The row slot of value v: a lookup in a table local to the function, so that once a loop over v is
  //! unrolled the index into a caller's per-slot arrays folds to a constant before those arrays are split
  //! into registers (computed in place, the nested loops outlived clang-19's SROA on gfx90a/gfx942: 352
  //! bytes per lane of scratch in every attention kernel, the statistics of 16 slots kept in memory). Local,
  //! not a static member: nvcc has no device copy of a class's constexpr array and compiled reads of one
  //! into kernels that computed nothing, without a diagnostic.
  static constexpr int slot(int v) {
    constexpr slot_table t = make_slot_table();
    return t.v[v];
  }
  static constexpr bool lane_independent() {
    // Per lane: every value is on its (lane-0) leader's row, and the leaders' rows are distinct. Linear in
    // the values per lane (a warpgroup layout has 128 lanes x up to 128 values).
    int lead[Layout::c_vals] = {}, leaders[Layout::c_vals] = {}, n = 0;
    for (int v = 0; v < Layout::c_vals; ++v) {
      lead[v] = leader(v);
      if (lead[v] == v) leaders[n++] = v;
    }
    for (int l = 0; l < Layout::lanes; ++l) {
      for (int v = 0; v < Layout::c_vals; ++v)
        if (Layout::c_m(l, v) != Layout::c_m(l, lead[v])) return false;
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j)
          if (Layout::c_m(l, leaders[i]) == Layout::c_m(l, leaders[j])) return false;
    }
    return true;
  }
  //! True when values (2i, 2i+1) of every lane are adjacent columns of one row (stores go as pairs).
  static constexpr bool pairs() {
    for (int l = 0; l < Layout::lanes; ++l)
      for (int v = 0; v + 1 < Layout::c_vals; v += 2)
        if (Layout::c_m(l, v + 1) != Layout::c_m(l, v) || Layout::c_n(l, v + 1) != Layout::c_n(l, v) + 1) return false;
    return Layout::c_vals % 2 == 0;
  }
};

//! One warp's (MT*M) x (NT*N) fp32 accumulator tile: MT x NT C fragments of `Atom`, in its C layout.
template <class Atom, int MT, int NT>
struct reg_tile {
  using atom = Atom;
  using layout = c_rows<Atom>;
  static constexpr int mt = MT, nt = NT, vals = Atom::c_vals;
  static constexpr int rows = MT * Atom::M, cols = NT * Atom::N;

  typename Atom::c_frag f[MT][NT];

  //! Row / column in the tile of value e of fragment (i, j) in `lane`.
  PK_HOST_DEVICE static constexpr int row(int i, int lane, int e) { return i * Atom::M + Atom::c_m(lane, e); }
  PK_HOST_DEVICE static constexpr int col(int j, int lane, int e) { return j * Atom::N + Atom::c_n(lane, e); }

  PK_DEVICE PK_FORCEINLINE void fill(float x) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < vals; ++e) f[i][j].v[e] = x;
  }

  //! Stores row block i, rounded to T, at dst[row * ld + col] (dst: the tile's (i*M, 0) element).
  template <class T>
  PK_DEVICE PK_FORCEINLINE void store_rows(int i, T* dst, int ld, int lane) const {
#pragma unroll
    for (int j = 0; j < NT; ++j) store_frag(dst + j * Atom::N, ld, f[i][j], lane);
  }
  //! Stores one fragment, rounded to T, at dst[c_m * ld + c_n] through the C layout.
  template <class T>
  PK_DEVICE PK_FORCEINLINE static void store_frag(T* dst, int ld, const typename Atom::c_frag& c, int lane) {
    if constexpr (layout::pairs()) {
#pragma unroll
      for (int e = 0; e < vals; e += 2) {
        const std::uint32_t two = pack2<T>(c.v[e], c.v[e + 1]);
        __builtin_memcpy(dst + Atom::c_m(lane, e) * ld + Atom::c_n(lane, e), &two, sizeof two);
      }
    } else {
#pragma unroll
      for (int e = 0; e < vals; ++e) dst[Atom::c_m(lane, e) * ld + Atom::c_n(lane, e)] = T(c.v[e]);
    }
  }

  //! Whether the accumulators can feed the next product's A operand straight from registers
  //! (mma_layout::c_feeds_a: mma.sync's C layout over K/N adjacent tiles is its A layout).
  static constexpr bool feeds_a = mma_layout::c_feeds_a<Atom>();
  //! The A fragment of row block i, k step kk (columns kk*K .. kk*K+K-1), rounded to the atom's input
  //! type: FlashAttention-2's register reuse of P. Only when feeds_a.
  PK_DEVICE PK_FORCEINLINE void to_a(typename Atom::a_frag& a, int i, int kk) const {
    static_assert(feeds_a, "reg_tile::to_a: the atom's C layout is not its A layout");
    using T = typename Atom::element;
#pragma unroll
    for (int e = 0; e < Atom::a_vals; e += 2) {
      const auto& c0 = f[i][kk * (Atom::K / Atom::N) + mma_layout::c_to_a_tile<Atom>(e)];
      const auto& c1 = f[i][kk * (Atom::K / Atom::N) + mma_layout::c_to_a_tile<Atom>(e + 1)];
      const std::uint32_t two = pack2<T>(c0.v[mma_layout::c_to_a_val<Atom>(e)], c1.v[mma_layout::c_to_a_val<Atom>(e + 1)]);
      __builtin_memcpy(&a.v[e], &two, sizeof two);
    }
  }
};

PK_DETAIL_TARGET_END
