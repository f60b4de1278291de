// pk::archdb resource fit and planner framework.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "pk/archdb/planner.hpp"

namespace ad = pk::archdb;

namespace {
const ad::device_desc& dev(const char* name) {
  const ad::device_desc* d = ad::find_device(name);
  if (d == nullptr) throw std::runtime_error(std::string("missing device ") + name);
  return *d;
}
ad::candidate cand(std::string name, int threads, int regs, std::int64_t dyn_smem, int agprs = 0) {
  ad::candidate c;
  c.name = std::move(name);
  c.res.threads_per_block = threads;
  c.res.regs_per_thread = regs;
  c.res.dynamic_smem = dyn_smem;
  c.res.agprs = agprs;
  return c;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

// 132 KiB of shared memory: 135,168 + 1,024 = 136,192 B <= 166,912 + 1,024 on A100, > 101,376 + 1,024 on RTX 3090.
TEST(Archdb_Fit, SharedMemoryA100VersusRtx3090) {
  const auto c = cand("attn_b128x128_s3", 128, 128, 132 * 1024);
  const auto a = ad::check_fit(dev("A100-SXM4-80GB"), c);
  EXPECT_TRUE(a.fits) << a.reason;
  const auto r = ad::check_fit(dev("RTX 3090"), c);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.reason, "shared memory 135168 B (+1024 reserved, granularity 128) > 101376 B per block on RTX 3090");
}

TEST(Archdb_Fit, OtherLimits) {
  const auto& a100 = dev("A100-SXM4-80GB");
  auto big = cand("t2048", 2048, 32, 0);
  EXPECT_TRUE(contains(ad::check_fit(a100, big).reason, "threads per block 2048 > 1024"));
  auto regs = cand("r300", 128, 300, 0);
  EXPECT_TRUE(contains(ad::check_fit(a100, regs).reason, "registers 300 per thread > 255"));
  auto regs_block = cand("r72x1024", 1024, 72, 0);
  const auto rb = ad::check_fit(a100, regs_block);
  EXPECT_FALSE(rb.fits);
  EXPECT_TRUE(contains(rb.reason, "73728 per block")) << rb.reason;
  auto st = cand("static", 128, 32, 0);
  st.res.static_smem = 64 * 1024;
  EXPECT_TRUE(contains(ad::check_fit(a100, st).reason, "static shared memory 65536 B > 49152 B")) << ad::check_fit(a100, st).reason;

  auto spill = cand("spilly", 128, 255, 0);
  spill.spill_bytes = 64;
  const auto s = ad::check_fit(a100, spill);
  EXPECT_FALSE(s.fits);
  EXPECT_TRUE(contains(s.reason, "spills 64 B")) << s.reason;
  spill.declares_spills = true;
  EXPECT_TRUE(ad::check_fit(a100, spill).fits);

  // AMD: 96 KiB LDS exceeds gfx942's 64 KiB per workgroup but fits gfx950's 160 KiB.
  const auto lds = cand("lds96k", 256, 64, 96 * 1024);
  const auto mi300 = ad::check_fit(dev("MI300X"), lds);
  EXPECT_FALSE(mi300.fits);
  EXPECT_EQ(mi300.reason, "LDS 98304 B (+0 reserved, granularity 512) > 65536 B per block on MI300X");
  EXPECT_TRUE(ad::check_fit(dev("MI355X"), lds).fits);
  const auto agpr = cand("agpr", 256, 128, 0, 300);
  EXPECT_TRUE(contains(ad::check_fit(dev("MI300X"), agpr).reason, "AGPRs 300 > 256"));
  EXPECT_TRUE(contains(ad::check_fit(dev("RX 7900 XTX"), cand("agpr", 256, 64, 0, 8)).reason, "AGPRs 8 > 0"));
}

TEST(Archdb_Planner, PicksCheapestFittingCandidate) {
  const std::vector<ad::candidate> cs = {cand("b128x128_s3", 128, 128, 132 * 1024), cand("b128x64_s2", 128, 128, 64 * 1024),
                                         cand("b64x64_s2", 128, 96, 32 * 1024)};
  const auto cost = [](const ad::candidate& c, const ad::occupancy_result&) {
    const double us = c.name == "b128x128_s3" ? 10.0 : c.name == "b128x64_s2" ? 20.0 : 30.0;
    return ad::cost_estimate{us, "test cost"};
  };
  const auto on_a100 = ad::choose(dev("A100-SXM4-80GB"), cs, cost);
  EXPECT_EQ(on_a100.index, 0);
  EXPECT_EQ(on_a100.name, "b128x128_s3");
  EXPECT_DOUBLE_EQ(on_a100.predicted_us, 10.0);

  const auto p = ad::choose(dev("RTX 3090"), cs, cost);
  EXPECT_EQ(p.index, 1);
  EXPECT_EQ(p.name, "b128x64_s2");
  ASSERT_EQ(p.all.size(), 3u);
  EXPECT_FALSE(p.all[0].fits);
  EXPECT_TRUE(p.all[1].fits);
  EXPECT_TRUE(p.all[2].fits);
  // 64 KiB + 1 KiB = 66,560 B; 102,400 / 66,560 = 1 block/SM: shared memory binds.
  EXPECT_EQ(p.occ.blocks_per_sm, 1);
  EXPECT_STREQ(p.occ.limiter, "shared memory");
  EXPECT_TRUE(contains(p.why, "chose b128x64_s2 on RTX 3090")) << p.why;
  EXPECT_TRUE(contains(p.why, "limited by shared memory")) << p.why;
  EXPECT_TRUE(contains(p.why, "b128x128_s3: rejected, shared memory 135168 B")) << p.why;
  EXPECT_TRUE(contains(p.why, "b64x64_s2: slower")) << p.why;
  EXPECT_TRUE(contains(p.why, "test cost")) << p.why;
}

TEST(Archdb_Planner, CostSeesOccupancyAndTiesKeepOrder) {
  const std::vector<ad::candidate> cs = {cand("a", 256, 168, 64 * 1024), cand("b", 256, 64, 64 * 1024), cand("c", 256, 64, 64 * 1024)};
  const auto cost = [](const ad::candidate&, const ad::occupancy_result& o) {
    return ad::cost_estimate{100.0 / o.blocks_per_sm, "100 / blocks"};
  };
  const auto p = ad::choose(dev("H100 SXM"), cs, cost);  // a: 1 block (registers); b, c: 3 blocks (smem)
  EXPECT_EQ(p.index, 1);
  EXPECT_EQ(p.occ.blocks_per_sm, 3);
  EXPECT_STREQ(p.occ.limiter, "shared memory");
}

TEST(Archdb_Planner, NothingFits) {
  const std::vector<ad::candidate> cs = {cand("huge", 128, 32, 200 * 1024)};
  const auto p = ad::choose(dev("RTX 4090"), cs, [](const ad::candidate&, const ad::occupancy_result&) {
    return ad::cost_estimate{1.0, ""};
  });
  EXPECT_EQ(p.index, -1);
  EXPECT_TRUE(contains(p.why, "no candidate fits RTX 4090")) << p.why;
  EXPECT_TRUE(contains(p.why, "huge: shared memory")) << p.why;
  EXPECT_EQ(ad::choose(dev("RTX 4090"), {}, nullptr).index, -1);
}

// Forcing and the tuning cache select by name: a repeated name would run the first candidate under the second's
// name. The repeat is rejected with the reason, whatever its cost.
TEST(Archdb_Planner, RepeatedNameDoesNotFit) {
  const std::vector<ad::candidate> cs = {cand("a", 128, 32, 0), cand("b", 256, 32, 0), cand("a", 64, 32, 0)};
  const auto p = ad::choose(dev("H100 SXM"), cs, [](const ad::candidate& c, const ad::occupancy_result&) {
    return ad::cost_estimate{c.res.threads_per_block == 64 ? 1.0 : 2.0, ""};
  });
  ASSERT_EQ(p.all.size(), 3u);
  EXPECT_EQ(p.index, 0);
  EXPECT_TRUE(p.all[0].fits);
  EXPECT_TRUE(p.all[1].fits);
  EXPECT_FALSE(p.all[2].fits);
  EXPECT_TRUE(contains(p.all[2].reason, "repeats an earlier candidate")) << p.all[2].reason;
}

TEST(Archdb_Planner, RooflineAndWaves) {
  const auto& h100 = dev("H100 SXM");  // 3,350 GB/s, 989.4 TFLOPS bf16
  EXPECT_NEAR(ad::roofline_us(h100, 3.35e9, 0, h100.peak_bf16_tflops), 1000.0, 1e-9);
  EXPECT_NEAR(ad::roofline_us(h100, 0, 989.4e9, h100.peak_bf16_tflops), 1000.0, 1e-9);
  EXPECT_NEAR(ad::roofline_us(h100, 3.35e9, 2 * 989.4e9, h100.peak_bf16_tflops), 2000.0, 1e-9);
  EXPECT_NEAR(ad::roofline_us(h100, 3.35e9, 1e20, 0), 1000.0, 1e-9);  // unknown peak: memory term only
  ad::occupancy_result o;
  o.blocks_per_sm = 2;  // 132 SMs x 2 = 264 slots per wave
  EXPECT_EQ(ad::waves(h100, 264, o), 1);
  EXPECT_EQ(ad::waves(h100, 265, o), 2);
  EXPECT_DOUBLE_EQ(ad::wave_efficiency(h100, 265, o), 265.0 / 528.0);
  const auto& xtx = dev("RX 7900 XTX");  // 96 CUs = 48 WGPs in WGP mode
  EXPECT_EQ(xtx.occupancy_units(), 48);
  EXPECT_EQ(ad::waves(xtx, 97, o), 2);
  o.blocks_per_sm = 0;
  EXPECT_EQ(ad::waves(h100, 10, o), 0);
}
