// pk::archdb tuning cache: round trip, corrupt and foreign files, concurrent writers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "pk/archdb/tuning_cache.hpp"

namespace ad = pk::archdb;
namespace fs = std::filesystem;

namespace {

class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("pk_tuning_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "tuning.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static ad::tuning_key key(int i) {
    return {"H200 SXM/sm132/cc9.0", "attention_fwd", "v1:6", "bucket_" + std::to_string(i)};
  }
  void write(const std::string& text) const { std::ofstream(path_) << text; }
  [[nodiscard]] std::string read() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static int count(const std::string& s, const std::string& part) {
    int n = 0;
    for (auto p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
    return n;
  }

  fs::path dir_;
  std::string path_;
};

}  // namespace

TEST_F(TuningCacheTest, RoundTrip) {
  {
    ad::tuning_cache c(path_);
    EXPECT_FALSE(c.lookup(key(1)).has_value());
    std::string err;
    ASSERT_TRUE(c.store(key(1), {"b128x64_w4", 123.5, ""}, &err)) << err;
    ASSERT_TRUE(c.store(key(2), {"b64x64_w4", 7.25, "2025-01-02T03:04:05Z"}, &err)) << err;
    ASSERT_TRUE(c.store(key(1), {"b128x128_w8", 99.0, ""}, &err)) << err;  // replaces
  }
  ad::tuning_cache c(path_);
  const auto e1 = c.lookup(key(1));
  ASSERT_TRUE(e1.has_value());
  EXPECT_EQ(e1->winner, "b128x128_w8");
  EXPECT_DOUBLE_EQ(e1->measured_us, 99.0);
  EXPECT_EQ(e1->date.size(), 20u) << e1->date;  // filled: YYYY-MM-DDTHH:MM:SSZ
  const auto e2 = c.lookup(key(2));
  ASSERT_TRUE(e2.has_value());
  EXPECT_EQ(e2->date, "2025-01-02T03:04:05Z");
  EXPECT_EQ(c.size(), 2u);
  ad::tuning_key other = key(1);
  other.candidate_set = "v2:7";  // a new build's candidate set misses
  EXPECT_FALSE(c.lookup(other).has_value());
  EXPECT_FALSE(fs::exists(path_ + ".tmp")) << "no temporary file left behind";
  for (const auto& f : fs::directory_iterator(dir_))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << f.path();
}

TEST_F(TuningCacheTest, CreatesMissingDirectories) {
  const std::string nested = (dir_ / "a" / "b" / "tuning.json").string();
  ad::tuning_cache c(nested);
  std::string err;
  EXPECT_TRUE(c.store(key(1), {"w", 1.0, ""}, &err)) << err;
  EXPECT_TRUE(fs::exists(nested));
}

TEST_F(TuningCacheTest, CorruptFileWarnsOnceAndIsReplaced) {
  write("{\"schema\": \"pk.tuning_cache\", \"version\": 1, \"entries\": [ {{{ truncated");
  ad::tuning_cache c(path_);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(c.lookup(key(1)).has_value());
  EXPECT_FALSE(c.lookup(key(2)).has_value());
  std::string err;
  EXPECT_TRUE(c.store(key(3), {"w3", 3.0, ""}, &err)) << err;  // a corrupt file is replaced by a valid one
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(out, "warning"), 1) << out;
  EXPECT_TRUE(out.find("corrupt") != std::string::npos) << out;
  ad::tuning_cache fresh(path_);
  EXPECT_TRUE(fresh.lookup(key(3)).has_value());
}

TEST_F(TuningCacheTest, MalformedEntriesAreCorruptNotExceptions) {
  for (const char* text : {R"({"schema": "pk.tuning_cache", "version": 1, "entries": [{"device": 5}]})",
                           R"({"schema": "pk.tuning_cache", "version": 1, "entries": {"x": 1}})",
                           R"({"schema": "pk.tuning_cache", "version": 1})", "", "[1, 2, 3]"}) {
    SCOPED_TRACE(text);
    write(text);
    ad::tuning_cache c(path_);
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(c.lookup(key(1)).has_value());
    std::string err;
    EXPECT_FALSE(c.reload(&err));
    EXPECT_FALSE(err.empty());
    const std::string out = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(out, "warning"), 1) << out;
  }
}

TEST_F(TuningCacheTest, ForeignSchemaIsIgnoredAndNotOverwritten) {
  for (const char* text : {R"({"schema": "someone.else", "version": 1, "entries": []})",
                           R"({"schema": "pk.tuning_cache", "version": 99, "entries": []})"}) {
    SCOPED_TRACE(text);
    write(text);
    ad::tuning_cache c(path_);
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(c.lookup(key(1)).has_value());
    std::string err;
    EXPECT_FALSE(c.store(key(1), {"w", 1.0, ""}, &err));
    const std::string out = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(out, "warning"), 1) << out;
    EXPECT_NE(err.find("foreign"), std::string::npos) << err;
    EXPECT_EQ(read(), text) << "a foreign file must be left untouched";
  }
}

TEST_F(TuningCacheTest, ConcurrentThreadsWithSeparateInstances) {
  constexpr int threads = 8, per_thread = 12;
  std::vector<std::thread> ts;
  std::vector<int> failures(threads, 0);
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      ad::tuning_cache c(path_);
      for (int i = 0; i < per_thread; ++i)
        if (!c.store(key(t * 1000 + i), {"w" + std::to_string(t), double(i), ""}, nullptr)) ++failures[t];
    });
  for (auto& t : ts) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
  ad::tuning_cache c(path_);
  EXPECT_EQ(c.size(), static_cast<std::size_t>(threads * per_thread));
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < per_thread; ++i) {
      const auto e = c.lookup(key(t * 1000 + i));
      ASSERT_TRUE(e.has_value()) << t << "/" << i;
      EXPECT_EQ(e->winner, "w" + std::to_string(t));
    }
}

TEST_F(TuningCacheTest, ConcurrentProcesses) {
  constexpr int procs = 4, per_proc = 10;
  std::vector<pid_t> pids;
  for (int p = 0; p < procs; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ad::tuning_cache c(path_);
      int bad = 0;
      for (int i = 0; i < per_proc; ++i)
        if (!c.store(key(p * 1000 + i), {"p" + std::to_string(p), 1.0, ""}, nullptr)) ++bad;
      ::_exit(bad == 0 ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ad::tuning_cache c(path_);
  EXPECT_EQ(c.size(), static_cast<std::size_t>(procs * per_proc));
}

TEST_F(TuningCacheTest, DefaultPathAndMode) {
  struct saved_env {
    std::string name;
    std::optional<std::string> value;
  };
  std::vector<saved_env> saved;
  for (const char* n : {"PK_TUNING_CACHE", "XDG_CACHE_HOME", "HOME", "PK_TUNING"}) {
    const char* v = std::getenv(n);
    saved.push_back({n, v ? std::optional<std::string>(v) : std::nullopt});
  }
  ::setenv("PK_TUNING_CACHE", path_.c_str(), 1);
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(ad::tuning_cache::default_path(), path_);
  ::unsetenv("PK_TUNING_CACHE");
  EXPECT_EQ(ad::tuning_cache::default_path(), "/xdg/pk/tuning.json");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(ad::tuning_cache::default_path(), "/home/u/.cache/pk/tuning.json");

  ::unsetenv("PK_TUNING");
  EXPECT_EQ(ad::tuning_mode_from_env(), ad::tuning_mode::cached);
  ::setenv("PK_TUNING", "TUNE", 1);
  EXPECT_EQ(ad::tuning_mode_from_env(), ad::tuning_mode::tune);
  ::setenv("PK_TUNING", "off", 1);
  EXPECT_EQ(ad::tuning_mode_from_env(), ad::tuning_mode::off);
  ::setenv("PK_TUNING", "bogus", 1);
  EXPECT_EQ(ad::tuning_mode_from_env(), ad::tuning_mode::cached);
  ad::tuning_mode m = ad::tuning_mode::off;
  EXPECT_FALSE(ad::parse_tuning_mode("sometimes", m));
  EXPECT_EQ(m, ad::tuning_mode::off);
  EXPECT_STREQ(ad::to_string(ad::tuning_mode::tune), "tune");

  for (const auto& s : saved) {
    if (s.value) ::setenv(s.name.c_str(), s.value->c_str(), 1);
    else ::unsetenv(s.name.c_str());
  }
}

TEST(Archdb_TuningCache, DeviceIdentity) {
  const auto* h200 = pk::archdb::find_device("H200 SXM");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(ad::device_identity(*h200), "H200 SXM/sm132/cc9.0");
  EXPECT_EQ(ad::device_identity(*pk::archdb::find_device("MI300X")), "MI300X/cu304/gfx942");
}
