// pk/timing.hpp on a GPU (skipped with a message where the build or the machine has none): the device's
// time is measured, not the host's. A run whose host side takes 300 us before a 4 KiB copy is timed as
// the copy (the stream is held while a chunk of runs is enqueued); every repetition of every work is
// timed, over several chunks; a run that waits for its own stream cannot deadlock the held stream (the
// watchdog opens it) and the timing says it ran ungated.
#include <pk/runtime.hpp>
#include <pk/timing.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

namespace {

bool gpu_stream(pk::stream& s, std::string& why) {
  const pk::status st = pk::stream::cuda(nullptr, 0, s);
  if (!st) why = "no CUDA stream: " + st.message();
  return static_cast<bool>(st);
}

constexpr std::size_t copy_bytes = 4096;
constexpr auto host_side = std::chrono::microseconds(300);

TEST(TimingGpu, HostTimeBeforeALaunchIsNotTimed) {
  pk::stream s;
  std::string why;
  if (!gpu_stream(s, why)) GTEST_SKIP() << why;
  pk::device_buffer<unsigned char> a, b;
  ASSERT_TRUE(a.allocate(s, copy_bytes));
  ASSERT_TRUE(b.allocate(s, copy_bytes));
  const auto slow_host = [&]() -> pk::status {
    std::this_thread::sleep_for(host_side);
    return pk::copy_async(s, b.data(), a.data(), copy_bytes, pk::copy_kind::device_to_device);
  };
  const auto fast_host = [&]() -> pk::status {
    return pk::copy_async(s, a.data(), b.data(), copy_bytes, pk::copy_kind::device_to_device);
  };
  // 300 repetitions of two works: 64 rounds a chunk, so five chunks, the last one partial.
  constexpr int reps = 300;
  std::vector<pk::timing> t;
  ASSERT_TRUE(pk::time_interleaved(s, 2, reps, {slow_host, fast_host}, t));
  ASSERT_EQ(t.size(), 2u);
  if (t[0].clock.find("could not be set up") != std::string::npos) GTEST_SKIP() << "no stream gate here: " << t[0].clock;
  for (const auto& x : t) {
    EXPECT_EQ(x.us.size(), static_cast<std::size_t>(reps));
    EXPECT_EQ(x.clock.find("not held"), std::string::npos) << x.clock;
  }
  // A 4 KiB device copy takes a few microseconds; the host's 300 us must not be in its time.
  const double limit_us = 0.25 * std::chrono::duration<double, std::micro>(host_side).count();
  EXPECT_LT(t[0].median_us, limit_us) << "the slow-host run was timed with its host side (" << t[0].clock << ")";
  EXPECT_LT(t[1].median_us, limit_us) << "the run after a slow-host run was timed with its neighbour's host side";
}

TEST(TimingGpu, RunThatWaitsForItsStreamDoesNotDeadlock) {
  pk::stream s;
  std::string why;
  if (!gpu_stream(s, why)) GTEST_SKIP() << why;
  pk::device_buffer<unsigned char> a, b;
  ASSERT_TRUE(a.allocate(s, copy_bytes));
  ASSERT_TRUE(b.allocate(s, copy_bytes));
  const auto waits = [&]() -> pk::status {
    PK_TRY(pk::copy_async(s, b.data(), a.data(), copy_bytes, pk::copy_kind::device_to_device));
    return pk::synchronize(s);
  };
  pk::timing t;
  const pk::status st = pk::time_work(s, 1, 3, waits, t);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(t.us.size(), 3u);
  EXPECT_NE(t.clock.find("not held"), std::string::npos) << t.clock;
}

}  // namespace
