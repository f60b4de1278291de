// plan_attention: per-device plans from archdb alone (no backend): every plan fits its device, and the
// four reference devices get different tiles, each with a readable reason.
#include <pk/archdb/device.hpp>
#include <pk/attention/attention.hpp>
#include <pk/attention/attention_policy.hpp>

#include <gtest/gtest.h>

#include <set>

namespace pk::test {
namespace {

attention::attention_problem bench_problem(int d, bool causal) {
  attention::attention_problem p;
  p.batch = 4;
  p.heads_q = p.heads_kv = 2048 / d;
  p.head_dim = d;
  p.seqlen_q = p.seqlen_k = 4096;
  p.causal = causal;
  return p;
}

TEST(AttentionPlan, FitsEveryDeviceAndEveryHeadDim) {
  for (const auto& dev : archdb::all_devices())
    for (int d : attention::head_dims)
      for (bool causal : {false, true}) {
        const auto pl = attention::plan(dev, bench_problem(d, causal));
        ASSERT_GE(pl.choice.index, 0) << dev.name << " d" << d << ": " << pl.choice.why;
        EXPECT_LE(pl.smem_bytes, dev.smem_per_block_optin) << dev.name << " d" << d;
        EXPECT_GT(pl.choice.occ.blocks_per_sm, 0) << dev.name << " d" << d;
        EXPECT_FALSE(pl.choice.why.empty());
        if (d == 128 && !causal) std::cout << "[plan] " << dev.name << ": " << pl.choice.name << "\n";
      }
}

TEST(AttentionPlan, ReferenceDevicesGetDifferentTiles) {
  std::set<std::string> names;
  for (const char* n : {"A100-SXM4-80GB", "RTX 3090", "H200 SXM", "MI300X"}) {
    const auto* dev = archdb::find_device(n);
    ASSERT_NE(dev, nullptr) << n;
    const auto pl = attention::plan(*dev, bench_problem(128, false));
    ASSERT_GE(pl.choice.index, 0) << n << ": " << pl.choice.why;
    std::cout << "[plan] " << n << ": " << pl.choice.name << " grid " << pl.grid_x << "x" << pl.grid_y << "x" << pl.grid_z
              << ", " << pl.smem_bytes << " B shared\n"
              << pl.choice.why << "\n";
    names.insert(pl.choice.name);
  }
  EXPECT_EQ(names.size(), 4u) << "A100, RTX 3090, H200 and MI300X should get different tiles";
}

// The strategy is chosen per device and says why: the warp-specialized one on sm_90a where it has
// instances, the tiled one elsewhere, naming what keeps the other out.
TEST(AttentionPlan, StrategyPerDeviceWithTheReason) {
  const auto plan_on = [](const char* n, int d, bool ws_compiled = true) {
    const auto* dev = archdb::find_device(n);
    EXPECT_NE(dev, nullptr) << n;
    auto pr = bench_problem(d, false);
    pr.ws_compiled = ws_compiled;
    const auto pl = attention::plan(*dev, pr);
    EXPECT_GE(pl.choice.index, 0) << n << ": " << pl.choice.why;
    std::cout << "[plan] " << n << " d" << d << (ws_compiled ? "" : " (no sm_90a code)") << ": " << pl.choice.name << "\n";
    return pl;
  };
  for (const char* n : {"H200 SXM", "H100 SXM"})
    for (int d : {64, 128, 256}) {
      const auto pl = plan_on(n, d);
      EXPECT_EQ(pl.strat, attention::strategy::ws_wgmma_tma) << n << " d" << d << ": " << pl.choice.why;
      EXPECT_EQ(pl.choice.why.rfind("strategy ws_wgmma_tma: ", 0), 0u) << pl.choice.why;
      // a warp-specialized instance: one block per item (_ws_) or a persistent grid (_wsp_)
      EXPECT_TRUE(pl.choice.name.find("_ws_") != std::string::npos || pl.choice.name.find("_wsp_") != std::string::npos)
          << pl.choice.name;
    }
  for (const char* n : {"A100-SXM4-80GB", "RTX 3090", "MI300X"}) {
    const auto pl = plan_on(n, 128);
    EXPECT_EQ(pl.strat, attention::strategy::tiled_mma) << n;
    if (archdb::find_device(n)->vendor_id == archdb::vendor::nvidia) {
      EXPECT_NE(pl.choice.why.find("has no warpgroup MMA / tensor copies"), std::string::npos) << pl.choice.why;
      // The sm_90a candidates are listed (a fat binary with sm_90a code has them) and rejected by name.
      EXPECT_NE(pl.choice.why.find("needs warpgroup MMA and tensor copies (sm_90a)"), std::string::npos) << pl.choice.why;
    }
  }
  const auto d96 = plan_on("H200 SXM", 96);
  EXPECT_EQ(d96.strat, attention::strategy::tiled_mma);
  EXPECT_NE(d96.choice.why.find("no instance at head_dim 96"), std::string::npos) << d96.choice.why;
  const auto no_code = plan_on("H200 SXM", 128, false);
  EXPECT_EQ(no_code.strat, attention::strategy::tiled_mma);
  EXPECT_NE(no_code.choice.why.find("no sm_90a code"), std::string::npos) << no_code.choice.why;
}

}  // namespace
}  // namespace pk::test
