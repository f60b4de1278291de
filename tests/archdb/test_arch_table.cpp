// pk::archdb arch table: constexpr sweeps and the parse <-> print round trip.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "pk/archdb/arch.hpp"

namespace ad = pk::archdb;

// Compile-time checks: the table is usable in constant expressions (as in device code).
static_assert(ad::traits(ad::arch::sm80).warp_size == 32);
static_assert(ad::traits(ad::arch::gfx942).warp_size == 64);
static_assert(ad::traits(ad::arch::gfx1100).warp_size == 32);
static_assert(ad::traits(ad::arch::sm90a).has_wgmma && !ad::traits(ad::arch::sm100).has_wgmma);
static_assert(ad::traits(ad::arch::sm86).fallback == ad::arch::sm80);
static_assert(ad::traits(ad::arch::gfx950).fallback == ad::arch::gfx942);
static_assert([] {
  ad::arch a{};
  return ad::parse_arch("SM_90A", a) && a == ad::arch::sm90a;
}());
static_assert(ad::falls_back_to(ad::arch::sm89, ad::arch::sm80));
static_assert(!ad::falls_back_to(ad::arch::sm100, ad::arch::sm90a));

TEST(Archdb_ArchTable, RowsAreConsistent) {
  for (const auto& t : ad::arch_table) {
    SCOPED_TRACE(t.name);
    EXPECT_TRUE(t.warp_size == 32 || t.warp_size == 64);
    EXPECT_EQ(t.max_threads_per_block % t.warp_size, 0);
    EXPECT_GT(t.smem_banks, 0);
    EXPECT_GT(t.smem_bank_bytes, 0);
    EXPECT_TRUE(ad::falls_back_to(t.id, ad::arch::generic)) << "fallback chain must end at generic";
    if (t.id != ad::arch::generic) {
      EXPECT_NE(t.fallback, t.id);
      EXPECT_EQ(ad::traits(t.fallback).vendor_id == t.vendor_id || t.fallback == ad::arch::generic, true);
      EXPECT_NE(t.mma, ad::mma_family::none);
    }
    if (t.has_wgmma) EXPECT_EQ(t.id, ad::arch::sm90a);
    if (t.vendor_id == ad::vendor::amd) {
      EXPECT_FALSE(t.has_tma);
      EXPECT_FALSE(t.has_clusters);
      EXPECT_FALSE(t.has_grid_dependency);
    }
    // griddepcontrol: sm_90 and later, which are the NVIDIA rows with clusters.
    if (t.vendor_id == ad::vendor::nvidia) EXPECT_EQ(t.has_grid_dependency, t.has_clusters);
  }
}

TEST(Archdb_ArchTable, ParsePrintRoundTrip) {
  for (const auto& t : ad::arch_table) {
    SCOPED_TRACE(t.name);
    ad::arch a = ad::arch::generic;
    ASSERT_TRUE(ad::parse_arch(ad::name_of(t.id), a));
    EXPECT_EQ(a, t.id);
    EXPECT_STREQ(ad::name_of(a), t.name);
    std::string upper = t.name;
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ASSERT_TRUE(ad::parse_arch(upper.c_str(), a));
    EXPECT_EQ(a, t.id);
  }
}

TEST(Archdb_ArchTable, ParseSpellings) {
  struct spelled {
    const char* text;
    ad::arch want;
  };
  const spelled cases[] = {{"sm_80", ad::arch::sm80},   {"sm80", ad::arch::sm80},     {"80", ad::arch::sm80},
                           {"sm_86", ad::arch::sm86},   {"89", ad::arch::sm89},       {"sm_90a", ad::arch::sm90a},
                           {"90a", ad::arch::sm90a},    {"sm_90", ad::arch::sm90a},   {"sm_100a", ad::arch::sm100},
                           {"100", ad::arch::sm100},    {"sm_120", ad::arch::sm120},  {"120f", ad::arch::sm120},
                           {"gfx90a", ad::arch::gfx90a}, {"GFX942", ad::arch::gfx942}, {"gfx950", ad::arch::gfx950},
                           {"gfx1100", ad::arch::gfx1100}, {"gfx1201", ad::arch::gfx1201}, {"generic", ad::arch::generic}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    ad::arch a = ad::arch::generic;
    EXPECT_TRUE(ad::parse_arch(c.text, a));
    EXPECT_EQ(a, c.want);
  }
  for (const char* bad : {"", "sm_", "sm_70", "75", "gfx908", "gfx94", "sm_80x", "hopper"}) {
    SCOPED_TRACE(bad);
    ad::arch a = ad::arch::sm86;
    EXPECT_FALSE(ad::parse_arch(bad, a));
    EXPECT_EQ(a, ad::arch::sm86) << "output must be unchanged on failure";
  }
  ad::arch a = ad::arch::sm86;
  EXPECT_FALSE(ad::parse_arch(nullptr, a));
}

TEST(Archdb_ArchTable, OutOfRangeIsGeneric) {
  EXPECT_EQ(ad::traits(static_cast<ad::arch>(999)).id, ad::arch::generic);
}

TEST(Archdb_ArchTable, FeatureFacts) {
  // ARCH_FACTS §1 and §5.
  EXPECT_TRUE(ad::traits(ad::arch::sm80).has_async_copy);
  EXPECT_FALSE(ad::traits(ad::arch::sm89).has_tma);
  EXPECT_TRUE(ad::traits(ad::arch::sm90a).has_tma);
  EXPECT_TRUE(ad::traits(ad::arch::sm120).has_tma);
  EXPECT_FALSE(ad::traits(ad::arch::sm120).has_wgmma);
  EXPECT_EQ(ad::traits(ad::arch::gfx942).mma, ad::mma_family::mfma_cdna3);
  EXPECT_EQ(ad::traits(ad::arch::gfx1100).mma, ad::mma_family::wmma_rdna3);
  // RDNA4's WMMA operands are laid out differently: no RDNA3 code may run on gfx1201.
  EXPECT_EQ(ad::traits(ad::arch::gfx1201).mma, ad::mma_family::wmma_rdna4);
  EXPECT_FALSE(ad::falls_back_to(ad::arch::gfx1201, ad::arch::gfx1100));
  EXPECT_EQ(ad::traits(ad::arch::sm120).fallback, ad::arch::sm89);
}
