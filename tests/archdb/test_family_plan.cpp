// The planning path every family shares: plan cache, tuning-cache adoption, forced policy by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "pk/archdb/family_plan.hpp"

namespace ad = pk::archdb;

namespace {
const ad::device_desc& dev(const char* name) {
  const ad::device_desc* d = ad::find_device(name);
  if (d == nullptr) throw std::runtime_error(std::string("missing device ") + name);
  return *d;
}
// Two candidates that fit every device and one that fits none (more shared memory than any device has
// per block): the cost makes "b" the model's choice.
ad::plan make_plan(const ad::device_desc& d) {
  std::vector<ad::candidate> c(3);
  c[0].name = "a";
  c[1].name = "b";
  c[2].name = "huge";
  for (auto& x : c) {
    x.res.threads_per_block = 128;
    x.res.regs_per_thread = 32;
  }
  c[2].res.dynamic_smem = std::int64_t{1} << 30;
  return ad::choose(d, c, [&](const ad::candidate& x, const ad::occupancy_result&) {
    return ad::cost_estimate{x.name == "b" ? 1.0 : 2.0, "test cost"};
  });
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST(Archdb_FamilyPlan, PlansOncePerExactKey) {
  ad::clear_plan_cache();
  const auto& d = dev("H200");
  int calls = 0;
  auto make = [&] {
    ++calls;
    return make_plan(d);
  };
  const std::int64_t k1[] = {1000, 4};
  const std::int64_t k2[] = {1001, 4};
  const auto p1 = ad::cached_plan(d, "test_family", k1, "", make);
  const auto p1b = ad::cached_plan(d, "test_family", k1, "", make);
  EXPECT_EQ(p1.get(), p1b.get());
  EXPECT_EQ(calls, 1);
  (void)ad::cached_plan(d, "test_family", k2, "", make);
  EXPECT_EQ(calls, 2);
  (void)ad::cached_plan(d, "other_family", k1, "", make);  // the family is part of the key
  EXPECT_EQ(calls, 3);
  (void)ad::cached_plan(dev("RTX 3090"), "test_family", k1, "", make);  // and the device
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(p1->name, "b");
}

TEST(Archdb_FamilyPlan, ForcedPolicyOneRule) {
  const ad::plan p = make_plan(dev("A100-SXM4-80GB"));
  int index = -1;
  ASSERT_TRUE(ad::select_policy(p, nullptr, "fam", index));
  EXPECT_EQ(index, 1);  // the model's choice
  ASSERT_TRUE(ad::select_policy(p, "", "fam", index));
  EXPECT_EQ(index, 1);
  ASSERT_TRUE(ad::select_policy(p, "a", "fam", index));
  EXPECT_EQ(index, 0);

  index = -7;
  const pk::status unknown = ad::select_policy(p, "nope", "fam", index);
  EXPECT_EQ(unknown.code(), pk::errc::invalid_argument);
  EXPECT_TRUE(contains(unknown.message(), "fam: policy nope is not a compiled candidate")) << unknown.message();
  EXPECT_TRUE(contains(unknown.message(), "candidates: a, b, huge")) << unknown.message();
  EXPECT_EQ(index, -7);  // untouched on error

  const pk::status big = ad::select_policy(p, "huge", "fam", index);
  EXPECT_EQ(big.code(), pk::errc::unsupported);
  EXPECT_TRUE(contains(big.message(), "fam: policy huge does not fit this device: shared memory")) << big.message();
  EXPECT_EQ(index, -7);
}

TEST(Archdb_FamilyPlan, WithChoiceCarriesTheCandidatesOccupancy) {
  const ad::plan p = make_plan(dev("A100-SXM4-80GB"));
  const ad::plan q = ad::with_choice(p, 0);
  EXPECT_EQ(q.index, 0);
  EXPECT_EQ(q.name, "a");
  EXPECT_EQ(q.occ.blocks_per_sm, p.all[0].occ.blocks_per_sm);
  EXPECT_GT(q.occ.blocks_per_sm, 0);
  EXPECT_DOUBLE_EQ(q.predicted_us, p.all[0].predicted_us);
}

TEST(Archdb_FamilyPlan, NothingFitsIsUnsupportedWithReasons) {
  ad::plan none;
  none.index = -1;
  none.why = "every candidate too large";
  int index = 0;
  const pk::status s = ad::select_policy(none, nullptr, "fam", index);
  EXPECT_EQ(s.code(), pk::errc::unsupported);
  EXPECT_TRUE(contains(s.message(), "every candidate too large")) << s.message();
}

TEST(Archdb_FamilyPlan, AdoptsTheTuningCacheWinner) {
  ad::clear_plan_cache();
  // The same file as Archdb_TuningHook.ApplyThroughTheProcessCache: the process-wide cache binds to the
  // first path it sees, and both tests run in one process when the binary is run directly (other keys).
  const auto dir = std::filesystem::temp_directory_path() / ("pk_tuning_hook_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tuning.json").string();
  ::setenv("PK_TUNING_CACHE", path.c_str(), 1);
  ::unsetenv("PK_TUNING");  // the default mode: cached
  const auto& d = dev("H200");
  const ad::plan model = make_plan(d);
  ASSERT_EQ(model.name, "b");
  ad::tuning_cache& tc = ad::tuning_cache::instance();
  if (tc.path() != path) GTEST_SKIP() << "the process-wide tuning cache was bound to " << tc.path() << " before this test";
  std::string err;
  ASSERT_TRUE(tc.store(ad::tuning_key_of(d, "test_tuned", model, "bucket0"), {"a", 3.5, ""}, &err)) << err;
  const std::int64_t k[] = {7};
  const auto p = ad::cached_plan(d, "test_tuned", k, "bucket0", [&] { return make_plan(d); });
  EXPECT_EQ(p->name, "a");
  EXPECT_TRUE(p->from_tuning_cache);
  // Without a bucket the family does not take part in tuning: the model's choice stays.
  const std::int64_t k2[] = {8};
  EXPECT_EQ(ad::cached_plan(d, "test_tuned", k2, "", [&] { return make_plan(d); })->name, "b");
}
