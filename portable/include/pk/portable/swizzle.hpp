// Swizzled shared-memory tiles: ONE description of a tile's layout from which the three users of it
// are derived, so that they cannot disagree:
//   - the tensor copy engine's swizzle mode (CUtensorMapSwizzle numbering) and box,
//   - the warpgroup MMA's shared-memory matrix descriptor (K-major or MN-major, swizzle layout type),
//   - the address of element (r, c) for ordinary loads and stores (epilogues, fix-ups, the emulator's tests).
//
// A swizzled_tile<T, Rows, Cols, S> holds Rows x Cols elements with the column index contiguous, as
// Cols / span_elems "panels" of [Rows][span_elems] (span_elems: the swizzle span, 128 bytes = 64 16-bit
// values for b128): panel p covers columns [p * span_elems, (p + 1) * span_elems). Inside a panel, row r
// starts r * span bytes in, and the 16-byte chunk bits of each address are XORed with its row bits:
//   addr' = addr ^ (((addr >> 7) & (span / 16 - 1)) << 4)
// applied to the address in the shared window, which is why tiles are aligned to 8 rows of one span
// (1024 bytes for b128): then the pattern is a property of the tile, not of where it sits.
//
// The same tile is read by the MMA as
//   K-major ("rows x K", the column index is K):   S = Q K^T reads Q (A, rows = queries) and K (B, rows = keys)
//   MN-major ("K x N", the column index is N):      O += P V reads V (B, rows = keys = K, columns = head dim = N)
// with the PTX ISA's canonical layouts (wgmma "Shared Memory Matrix Layout"): K-major swizzled: 8-row groups
// SBO = 8 * span apart, a k16 step is 32 bytes further inside the span (LBO unused); MN-major swizzled: 8-row
// (K) groups SBO = 8 * span apart, panels of span_elems columns (N) LBO = panel_bytes apart.
#pragma once
#include <pk/portable/macros.hpp>

#include <cstdint>

namespace pk {

//! Swizzle span of a shared-memory tile, numbered like CUtensorMapSwizzle (and the emulator's swizzle_mode).
enum class swizzle : std::uint8_t { none = 0, b32 = 1, b64 = 2, b128 = 3 };

PK_HOST_DEVICE constexpr int span_bytes(swizzle s) { return s == swizzle::none ? 16 : 16 << static_cast<int>(s); }
//! The wgmma descriptor's layout type (bits 62-63): 0 none, 1 128-byte, 2 64-byte, 3 32-byte.
PK_HOST_DEVICE constexpr std::uint64_t mma_layout_type(swizzle s) {
  return s == swizzle::b128 ? 1 : s == swizzle::b64 ? 2 : s == swizzle::b32 ? 3 : 0;
}
//! Applies the swizzle to a shared-window byte address (or an offset from an aligned tile base).
PK_HOST_DEVICE constexpr std::uint32_t swizzle_address(swizzle s, std::uint32_t a) {
  if (s == swizzle::none) return a;
  const std::uint32_t mask = static_cast<std::uint32_t>(span_bytes(s) / 16 - 1);
  return a ^ (((a >> 7) & mask) << 4);
}

//! A shared-memory matrix descriptor (wgmma): start address >> 4 (bits 0-13), leading byte offset >> 4
//! (16-29), stride byte offset >> 4 (32-45), layout type (62-63). `addr` is a shared-window byte address.
PK_HOST_DEVICE constexpr std::uint64_t mma_descriptor(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo, swizzle s) {
  return (std::uint64_t{(addr >> 4) & 0x3FFFu}) | (std::uint64_t{(lbo >> 4) & 0x3FFFu} << 16) |
         (std::uint64_t{(sbo >> 4) & 0x3FFFu} << 32) | (mma_layout_type(s) << 62);
}

template <class T, int Rows, int Cols, swizzle S = swizzle::b128>
struct swizzled_tile {
  static_assert(S != swizzle::none, "swizzled_tile: a swizzle span is required (the MMA layouts below assume one)");
  static constexpr swizzle mode = S;
  static constexpr int span = span_bytes(S);                           // bytes per panel row
  static constexpr int span_elems = span / static_cast<int>(sizeof(T));  // columns per panel
  static constexpr int rows = Rows, cols = Cols;
  static constexpr int panels = Cols / span_elems;
  static constexpr int panel_bytes = Rows * span;
  static constexpr int bytes = panels * panel_bytes;
  static constexpr int alignment = 8 * span;  // one swizzle pattern: 8 rows
  static_assert(Cols % span_elems == 0, "swizzled_tile: whole panels of columns");
  static_assert(Rows % 8 == 0, "swizzled_tile: whole 8-row swizzle groups");
  static_assert(panel_bytes % alignment == 0, "swizzled_tile: panels keep the tile's alignment");

  //! Byte offset of element (r, c) from the (aligned) tile base, swizzle applied.
  PK_HOST_DEVICE static constexpr std::uint32_t offset(int r, int c) {
    const int p = c / span_elems, cc = c % span_elems;
    return swizzle_address(S, static_cast<std::uint32_t>(p * panel_bytes + r * span + cc * static_cast<int>(sizeof(T))));
  }
  //! The tensor copy box of one panel: {columns, rows} (dimension 0 contiguous).
  static constexpr int box_cols = span_elems, box_rows = Rows;

  //! Descriptor of the K-major operand made of rows [row0, row0 + mma rows) and K columns [16 kk, 16 kk + 16)
  //! (`base`: the tile's shared-window address; row0 a multiple of 8).
  PK_HOST_DEVICE static constexpr std::uint64_t k_major_desc(std::uint32_t base, int row0, int kk) {
    const std::uint32_t a = base + static_cast<std::uint32_t>(row0 * span + k_major_offset(kk));
    return mma_descriptor(a, /*lbo: unused by swizzled K-major layouts*/ 16, 8 * span, S);
  }
  //! Descriptor of the MN-major operand of K rows [16 kk, 16 kk + 16) and every column (N) of the tile.
  PK_HOST_DEVICE static constexpr std::uint64_t mn_major_desc(std::uint32_t base, int kk) {
    const std::uint32_t a = base + static_cast<std::uint32_t>(mn_major_offset(kk));
    return mma_descriptor(a, panel_bytes, 8 * span, S);
  }

  //! What k_major_desc(base, row0, kk) adds to k_major_desc(base, row0, 0), and mn_major_desc(base, kk) to
  //! mn_major_desc(base, 0): the step's byte offset >> 4, in the start-address field (bits 0-13). A kernel
  //! builds one descriptor per tile and adds a constant per K step instead of shifting and masking an address
  //! for each MMA. Exact while base + offset < max_window_bytes: the field holds address >> 4 without a carry.
  static constexpr std::uint32_t max_window_bytes = 1u << 18;
  PK_HOST_DEVICE static constexpr std::uint64_t k_major_step(int kk) {
    return static_cast<std::uint64_t>(k_major_offset(kk)) >> 4;
  }
  PK_HOST_DEVICE static constexpr std::uint64_t mn_major_step(int kk) {
    return static_cast<std::uint64_t>(mn_major_offset(kk)) >> 4;
  }

 private:
  //! Byte offset of K step kk (16 columns) from the tile's row: its panel, then 16 elements per step inside it.
  PK_HOST_DEVICE static constexpr int k_major_offset(int kk) {
    const int c = kk * 16;
    return (c / span_elems) * panel_bytes + (c % span_elems) * static_cast<int>(sizeof(T));
  }
  //! Byte offset of K step kk (16 rows) of an MN-major tile.
  PK_HOST_DEVICE static constexpr int mn_major_offset(int kk) { return kk * 16 * span; }
};

}  // namespace pk
