// pk::archdb occupancy: the worked examples of ARCH_FACTS §6 and §7, with expected values computed by
// hand from the document's text (the arithmetic is spelled out next to each expectation).
#include <gtest/gtest.h>

#include <string>

#include "pk/archdb/occupancy.hpp"

namespace ad = pk::archdb;

namespace {
const ad::device_desc& dev(const char* name) {
  const ad::device_desc* d = ad::find_device(name);
  if (d == nullptr) throw std::runtime_error(std::string("missing device ") + name);
  return *d;
}
ad::kernel_resources res(int threads, int regs, std::int64_t dyn_smem, int agprs = 0) {
  ad::kernel_resources k;
  k.threads_per_block = threads;
  k.regs_per_thread = regs;
  k.dynamic_smem = dyn_smem;
  k.agprs = agprs;
  return k;
}
}  // namespace

// §6.1: H100, 256 threads, 168 regs, 64 KiB dynamic smem. W = 8; regs_warp = 168*32 = 5376;
// 16384/5376 = 3 warps per SMSP -> 12 warps/SM -> B_regs = 1; S_cta = 66,560 -> 233,472/66,560 = 3.
TEST(Archdb_Occupancy, NvidiaWorkedExampleH100RegistersBind) {
  const auto r = ad::occupancy(dev("H100 SXM"), res(256, 168, 64 * 1024));
  EXPECT_EQ(r.blocks_per_sm, 1);
  EXPECT_EQ(r.active_warps, 8);
  EXPECT_DOUBLE_EQ(r.occupancy, 0.125);
  EXPECT_STREQ(r.limiter, "registers");
  EXPECT_NE(r.detail.find("66560"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("-> 3 blocks"), std::string::npos) << r.detail;  // shared memory would allow 3
}

// §7.1: two 113.5 KB blocks do not fit an H100 SM: (113.5 + 1) x 2 KB = 229 KB > 228 KB.
TEST(Archdb_Occupancy, NvidiaPerBlockReserveH100) {
  const auto r = ad::occupancy(dev("H100 SXM"), res(128, 32, 116224));  // 113.5 KB
  EXPECT_EQ(r.blocks_per_sm, 1);
  EXPECT_STREQ(r.limiter, "shared memory");
  const auto r2 = ad::occupancy(dev("H100 SXM"), res(128, 32, 115712));  // 113 KB: (113 + 1) x 2 = 228 KB
  EXPECT_EQ(r2.blocks_per_sm, 2);
}

// §7.4: a 1024-thread block can use at most 64 regs/thread: 64*32 = 2048 per warp x 32 warps = 65,536.
TEST(Archdb_Occupancy, NvidiaRegisterPerBlockCheck) {
  const auto ok = ad::occupancy(dev("A100-SXM4-80GB"), res(1024, 64, 0));
  EXPECT_EQ(ok.blocks_per_sm, 1);  // 16384/2048 = 8 warps/SMSP -> 32 warps -> 1 block of 32 warps
  EXPECT_STREQ(ok.limiter, "registers");
  const auto bad = ad::occupancy(dev("A100-SXM4-80GB"), res(1024, 72, 0));  // 72*32 = 2304 x 32 = 73,728
  EXPECT_EQ(bad.blocks_per_sm, 0);
  EXPECT_STREQ(bad.limiter, "invalid");
  EXPECT_NE(bad.detail.find("73728"), std::string::npos) << bad.detail;
}

// §7.3: the carveout is discrete. A100, 40 KiB dynamic: S_cta = 40,960 + 1,024 = 41,984.
// Default carveout 164 KB = 167,936 -> 4 blocks; preferred 64 KB -> 65,536 / 41,984 -> 1 block;
// preferred 8 KB < S_cta -> smallest legal carveout >= S_cta = 64 KB -> 1 block.
TEST(Archdb_Occupancy, NvidiaCarveoutRounding) {
  const auto& a100 = dev("A100-SXM4-80GB");
  const auto def = ad::occupancy(a100, res(128, 32, 40 * 1024));
  EXPECT_EQ(def.blocks_per_sm, 4);
  EXPECT_STREQ(def.limiter, "shared memory");
  EXPECT_EQ(ad::occupancy(a100, res(128, 32, 40 * 1024), 64 * 1024).blocks_per_sm, 1);
  EXPECT_EQ(ad::occupancy(a100, res(128, 32, 40 * 1024), 8 * 1024).blocks_per_sm, 1);
  EXPECT_EQ(ad::occupancy(a100, res(128, 32, 40 * 1024), 50 * 1024).blocks_per_sm, 1);  // rounds up to 64 KB
}

// §1 block caps: RTX 3090, 32 threads, 16 regs: warps 48, regs 128, smem 102,400/1,024 = 100, cap 16.
TEST(Archdb_Occupancy, NvidiaBlockCap) {
  const auto r = ad::occupancy(dev("RTX 3090"), res(32, 16, 0));
  EXPECT_EQ(r.blocks_per_sm, 16);
  EXPECT_STREQ(r.limiter, "blocks");
  EXPECT_DOUBLE_EQ(r.occupancy, 16.0 / 48.0);
  EXPECT_EQ(ad::occupancy(dev("RTX 4090"), res(32, 16, 0)).blocks_per_sm, 24);
  EXPECT_EQ(ad::occupancy(dev("A100-SXM4-80GB"), res(32, 16, 0)).blocks_per_sm, 32);
}

// §1 barrier row: A100 has 2 x 32 = 64 barriers, 16 per block -> 4; RTX 3090 has 1 x 16, 4 per block -> 4.
TEST(Archdb_Occupancy, NvidiaNamedBarriers) {
  auto k = res(64, 32, 0);
  k.named_barriers = 16;
  const auto a = ad::occupancy(dev("A100-SXM4-80GB"), k);
  EXPECT_EQ(a.blocks_per_sm, 4);
  EXPECT_STREQ(a.limiter, "barriers");
  k.named_barriers = 4;
  EXPECT_EQ(ad::occupancy(dev("RTX 3090"), k).blocks_per_sm, 4);
}

TEST(Archdb_Occupancy, NvidiaInvalidKernels) {
  EXPECT_STREQ(ad::occupancy(dev("H100 SXM"), res(2048, 32, 0)).limiter, "invalid");
  EXPECT_STREQ(ad::occupancy(dev("H100 SXM"), res(128, 256, 0)).limiter, "invalid");
  EXPECT_STREQ(ad::occupancy(dev("RTX 3090"), res(128, 32, 101377)).limiter, "invalid");
  auto k = res(128, 32, 0);
  k.static_smem = 48 * 1024 + 4;  // above the static limit
  EXPECT_STREQ(ad::occupancy(dev("H100 SXM"), k).limiter, "invalid");
}

// §6.2: gfx942, WG 256 (N = 4), 128 ArchVGPR + 64 AGPR, 32 KiB LDS: V = 192, 512/192 = 2 waves/SIMD;
// LDS 65,536/32,768 = 2 WGs -> 8 waves/CU = 2 per SIMD. Result 2 waves/SIMD (25 %), VGPRs bind.
TEST(Archdb_Occupancy, CdnaWorkedExampleMI300X) {
  const auto r = ad::occupancy(dev("MI300X"), res(256, 128, 32 * 1024, 64));
  EXPECT_EQ(r.blocks_per_sm, 2);
  EXPECT_EQ(r.active_warps, 8);
  EXPECT_DOUBLE_EQ(r.occupancy, 0.25);
  EXPECT_STREQ(r.limiter, "vgprs");
}

// §6.2: on gfx950 the 160 KiB LDS would allow more WGs, but VGPRs still cap the kernel at 2 waves/SIMD.
TEST(Archdb_Occupancy, CdnaWorkedExampleMI355X) {
  const auto r = ad::occupancy(dev("MI355X"), res(256, 128, 32 * 1024, 64));
  EXPECT_EQ(r.blocks_per_sm, 2);
  EXPECT_DOUBLE_EQ(r.occupancy, 0.25);
  EXPECT_STREQ(r.limiter, "vgprs");
}

// §6.2 + §7.5 LDS granule: 32 VGPRs (8 waves), WG 256, 32 KiB LDS. gfx950: alignTo(32768, 1280) = 33,280,
// 163,840/33,280 = 4 WGs -> ceil(4*4/4) = 4 waves/SIMD (50 %); without the granule it would be 5.
// gfx942: 65,536/32,768 = 2 WGs -> 2 waves/SIMD (25 %).
TEST(Archdb_Occupancy, CdnaLdsGranule) {
  const auto r950 = ad::occupancy(dev("MI355X"), res(256, 32, 32 * 1024));
  EXPECT_EQ(r950.blocks_per_sm, 4);
  EXPECT_DOUBLE_EQ(r950.occupancy, 0.5);
  EXPECT_STREQ(r950.limiter, "lds");
  const auto r942 = ad::occupancy(dev("MI300X"), res(256, 32, 32 * 1024));
  EXPECT_EQ(r942.blocks_per_sm, 2);
  EXPECT_DOUBLE_EQ(r942.occupancy, 0.25);
  EXPECT_STREQ(r942.limiter, "lds");
}

// §6.2 VGPR -> waves steps: <=64: 8, <=72: 7, <=80: 6, <=96: 5, <=128: 4, <=168: 3, <=256: 2, <=512: 1.
TEST(Archdb_Occupancy, CdnaVgprSteps) {
  struct step {
    int vgprs, agprs, waves;
  };
  const step steps[] = {{64, 0, 8},  {65, 0, 7},  {72, 0, 7},  {80, 0, 6},   {96, 0, 5},
                        {128, 0, 4}, {168, 0, 3}, {256, 0, 2}, {256, 256, 1}, {130, 40, 3}};  // 132 + 40 = 172 -> 176: 2
  for (const auto& s : steps) {
    if (s.vgprs == 130) continue;  // checked below with its own arithmetic
    SCOPED_TRACE(std::to_string(s.vgprs) + "+" + std::to_string(s.agprs));
    const auto r = ad::occupancy(dev("MI250X"), res(64, s.vgprs, 0, s.agprs));  // N = 1: VGPRs alone bind
    EXPECT_DOUBLE_EQ(r.occupancy, s.waves / 8.0);
    EXPECT_EQ(r.blocks_per_sm, 4 * s.waves);
  }
  // AGPR placement: alignTo(130, 4) = 132, + 40 = 172, alignTo(172, 8) = 176, 512/176 = 2 waves.
  EXPECT_DOUBLE_EQ(ad::occupancy(dev("MI300X"), res(64, 130, 0, 40)).occupancy, 2 / 8.0);
}

// §6.2 SGPRs: > 100 SGPRs caps at 7 waves; <= 100 gives 8 (the hardware cap).
TEST(Archdb_Occupancy, CdnaSgprs) {
  auto k = res(64, 32, 0);
  k.sgprs = 102;
  const auto r = ad::occupancy(dev("MI300X"), k);
  EXPECT_DOUBLE_EQ(r.occupancy, 7 / 8.0);
  EXPECT_STREQ(r.limiter, "sgprs");
  k.sgprs = 100;
  EXPECT_DOUBLE_EQ(ad::occupancy(dev("MI300X"), k).occupancy, 1.0);
  k.sgprs = 110;  // above the 102 addressable
  EXPECT_STREQ(ad::occupancy(dev("MI300X"), k).limiter, "invalid");
}

// §6.2 workgroup slots: multi-wave WGs are limited to 16 per CU by barriers.
TEST(Archdb_Occupancy, CdnaBarrierSlots) {
  const auto r = ad::occupancy(dev("MI300X"), res(128, 16, 0));  // N = 2: min(32/2, 16) = 16 WGs -> 32 waves
  EXPECT_EQ(r.blocks_per_sm, 16);
  EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
  EXPECT_EQ(ad::occupancy(dev("MI300X"), res(64, 16, 0)).blocks_per_sm, 32);  // single-wave WGs: 32
  EXPECT_STREQ(ad::occupancy(dev("MI300X"), res(256, 16, 64 * 1024 + 4)).limiter, "invalid");  // > 64 KiB LDS
  EXPECT_STREQ(ad::occupancy(dev("MI250X"), res(1024, 256, 0)).limiter, "invalid");  // 16 waves > 4 x 2
}

// §6.3: gfx1100, WG 256 (N = 8), 96 VGPRs, 16 KiB LDS: VGPRs give 16 waves; WG_slots = 8; LDS allows
// 131,072/16,384 = 8 WGs. Result: 16 waves/SIMD (full occupancy).
TEST(Archdb_Occupancy, Rdna3WorkedExample) {
  const auto r = ad::occupancy(dev("RX 7900 XTX"), res(256, 96, 16 * 1024));
  EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
  EXPECT_EQ(r.blocks_per_sm, 8);  // per WGP
  EXPECT_EQ(r.active_warps, 64);
  EXPECT_STREQ(r.limiter, "warps");
}

// §6.3 granule 24: 128 VGPRs -> alignTo 144 -> floor(1536/144) = 10 waves/SIMD; N = 8 -> 4*10/8 = 5 WGs.
TEST(Archdb_Occupancy, Rdna3VgprGranule) {
  const auto r = ad::occupancy(dev("RX 7900 XTX"), res(256, 128, 0));
  EXPECT_DOUBLE_EQ(r.occupancy, 10 / 16.0);
  EXPECT_EQ(r.blocks_per_sm, 5);
  EXPECT_STREQ(r.limiter, "vgprs");
  // LDS granule 1 KiB: 33 KiB + 1 B rounds to 34 KiB; 128 KiB / 34 KiB = 3 WGs per WGP.
  const auto l = ad::occupancy(dev("RX 7900 XTX"), res(64, 24, 33 * 1024 + 1));
  EXPECT_EQ(l.blocks_per_sm, 3);
  EXPECT_STREQ(l.limiter, "lds");
  EXPECT_STREQ(ad::occupancy(dev("RX 7900 XTX"), res(64, 24, 0, 8)).limiter, "invalid");  // no AGPRs
}
