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

}  // namespace
}  // namespace pk::test
