// The planner's tuning-cache hook: candidate-set identity, size buckets, keys, adopting a cached winner
// (only when it names a fitting candidate), and apply_tuning_cache through the process-wide cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "pk/archdb/planner.hpp"

namespace ad = pk::archdb;
namespace fs = std::filesystem;

namespace {

std::vector<ad::candidate> three() {
  // 128 threads; 48 KiB, 96 KiB and 160 KiB of dynamic shared memory: all fit an A100 (163 KB per
  // block) but the largest does not fit an RTX 3090 (99 KB per block).
  return {{"small", {128, 32, 0, 48 * 1024}}, {"medium", {128, 32, 0, 96 * 1024}}, {"large", {128, 32, 0, 160 * 1024}}};
}

ad::plan plan_on(const char* device) {
  const auto c = three();
  return ad::choose(*ad::find_device(device), c, [](const ad::candidate& x, const ad::occupancy_result&) {
    // Larger tiles predicted faster: the model prefers the largest candidate that fits.
    return ad::cost_estimate{1000.0 / static_cast<double>(x.res.dynamic_smem), "test"};
  });
}

TEST(Archdb_TuningHook, CandidateSetIdentity) {
  const std::vector<std::string> a = {"ab", "c"}, b = {"a", "bc"}, c = {"c", "ab"};
  EXPECT_NE(ad::candidate_set_id(a), ad::candidate_set_id(b));  // names are delimited
  EXPECT_NE(ad::candidate_set_id(a), ad::candidate_set_id(c));  // order matters (indices are policies)
  EXPECT_EQ(ad::candidate_set_id(a), ad::candidate_set_id(std::vector<std::string>{"ab", "c"}));
  EXPECT_EQ(ad::candidate_set_id(a).rfind("2x", 0), 0u);
}

TEST(Archdb_TuningHook, SizeBucket) {
  EXPECT_EQ(ad::size_bucket(0, 4), "log2n0_e4");
  EXPECT_EQ(ad::size_bucket(1, 4), "log2n0_e4");
  EXPECT_EQ(ad::size_bucket(100000000, 4), "log2n26_e4");
  EXPECT_EQ(ad::size_bucket(std::int64_t{1} << 26, 2), "log2n26_e2");
  EXPECT_EQ(ad::size_bucket((std::int64_t{1} << 26) - 1, 8), "log2n25_e8");
}

TEST(Archdb_TuningHook, PlanRecordsResourcesAndOccupancy) {
  const ad::plan p = plan_on("RTX 3090");
  ASSERT_EQ(p.all.size(), 3u);
  EXPECT_EQ(p.name, "medium");
  EXPECT_EQ(p.all[1].res.dynamic_smem, 96 * 1024);
  EXPECT_EQ(p.all[1].occ.blocks_per_sm, 1);
  EXPECT_FALSE(p.all[2].fits);
  EXPECT_EQ(p.all[2].occ.blocks_per_sm, 0);
  EXPECT_FALSE(p.from_tuning_cache);
}

TEST(Archdb_TuningHook, KeyOfPlan) {
  const auto* d = ad::find_device("A100-SXM4-80GB");
  const ad::tuning_key k = ad::tuning_key_of(*d, "fam", plan_on("A100-SXM4-80GB"), "b");
  EXPECT_EQ(k.device, ad::device_identity(*d));
  EXPECT_EQ(k.family, "fam");
  EXPECT_EQ(k.candidate_set, ad::candidate_set_id(std::vector<std::string>{"small", "medium", "large"}));
  EXPECT_EQ(k.bucket, "b");
}

TEST(Archdb_TuningHook, AdoptsOnlyFittingKnownWinners) {
  const auto* rtx = ad::find_device("RTX 3090");
  ad::plan p = plan_on("RTX 3090");
  ad::plan q = p;
  EXPECT_FALSE(ad::adopt_cached_winner(*rtx, {"large", 1.0, ""}, q)) << "a winner that does not fit is ignored";
  EXPECT_FALSE(ad::adopt_cached_winner(*rtx, {"renamed", 1.0, ""}, q)) << "an unknown winner is ignored";
  EXPECT_EQ(q.name, p.name);
  EXPECT_FALSE(q.from_tuning_cache);
  ASSERT_TRUE(ad::adopt_cached_winner(*rtx, {"small", 12.5, "2026-11-30T00:00:00Z"}, q));
  EXPECT_EQ(q.index, 0);
  EXPECT_EQ(q.name, "small");
  EXPECT_TRUE(q.from_tuning_cache);
  EXPECT_DOUBLE_EQ(q.predicted_us, 12.5);
  EXPECT_EQ(q.occ.blocks_per_sm, p.all[0].occ.blocks_per_sm);
  EXPECT_EQ(q.why.rfind("from tuning cache: small", 0), 0u) << q.why;
}

TEST(Archdb_TuningHook, ApplyThroughTheProcessCache) {
  const fs::path dir = fs::temp_directory_path() / ("pk_tuning_hook_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = (dir / "tuning.json").string();
  ::setenv("PK_TUNING_CACHE", path.c_str(), 1);
  ::unsetenv("PK_TUNING");
  auto& cache = ad::tuning_cache::instance();
  if (cache.path() != path) GTEST_SKIP() << "the process-wide cache was bound earlier to " << cache.path();
  const auto* d = ad::find_device("A100-SXM4-80GB");
  ad::plan p = plan_on("A100-SXM4-80GB");
  EXPECT_EQ(p.name, "large");
  EXPECT_FALSE(ad::apply_tuning_cache(*d, "fam", "b", p)) << "empty cache";
  ASSERT_TRUE(cache.store(ad::tuning_key_of(*d, "fam", p, "b"), {"medium", 3.0, ""}));
  ad::plan off = p;
  ::setenv("PK_TUNING", "off", 1);
  EXPECT_FALSE(ad::apply_tuning_cache(*d, "fam", "b", off));
  ::unsetenv("PK_TUNING");
  ad::plan other_bucket = p;
  EXPECT_FALSE(ad::apply_tuning_cache(*d, "fam", "other", other_bucket));
  ASSERT_TRUE(ad::apply_tuning_cache(*d, "fam", "b", p));
  EXPECT_EQ(p.name, "medium");
  EXPECT_TRUE(p.from_tuning_cache);
  ::unsetenv("PK_TUNING_CACHE");
  fs::remove_all(dir);
}

}  // namespace
