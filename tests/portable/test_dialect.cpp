// The portable dialect on every backend: shuffles, ballot, any/all, warp and block reductions,
// barriers and shared memory; on the emulator also the planted divergence and deadlock reports.
// Also the swizzled tiles' MMA descriptor arithmetic (host-side, no kernel).
// References are computed here from CUDA's documented semantics, independently of the code under test.
#include "../common/backends.hpp"
#include "dialect_kernels.hpp"

#include <pk/backend/host/launch.hpp>
#include <pk/portable/numeric.hpp>
#include <pk/portable/swizzle.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#define PK_DETAIL_DECLARE_RUN(t) \
  namespace pk::t::test_impl {   \
  status run(const stream&, const test::dialect_call&); \
  }
PK_DETAIL_FOR_EACH_TARGET(PK_DETAIL_DECLARE_RUN)
#undef PK_DETAIL_DECLARE_RUN

namespace pk::test {

status run_dialect(const stream& s, const dialect_call& c) {
  switch (s.code_target()) {
#define PK_DETAIL_DISPATCH(t) \
  case target::t: return t::test_impl::run(s, c);
    PK_DETAIL_FOR_EACH_TARGET(PK_DETAIL_DISPATCH)
#undef PK_DETAIL_DISPATCH
    default: return unsupported("target not built");
  }
}

namespace {

constexpr std::int64_t poison = static_cast<std::int64_t>(0x5a5a5a5a5a5a5a5aULL);

class Dialect : public ::testing::TestWithParam<backend_param> {
 protected:
  // Runs `op` over blocks*threads random inputs; returns the outputs (every element checked written).
  std::vector<std::int64_t> run(const stream& s, dialect_op op, int width, int arg, unsigned blocks, unsigned threads,
                                const std::vector<std::int64_t>& in, status* st_out = nullptr) {
    device_buffer<std::int64_t> din, dout;
    EXPECT_TRUE(din.allocate(s, in.size()));
    EXPECT_TRUE(dout.allocate(s, in.size()));
    EXPECT_TRUE(din.upload(in));
    EXPECT_TRUE(dout.upload(std::vector<std::int64_t>(in.size(), poison)));
    dialect_call c{op, width, arg, blocks, threads, din.data(), dout.data()};
    status st = run_dialect(s, c);
    if (st) st = synchronize(s);
    if (st_out) {
      *st_out = st;
    } else {
      EXPECT_TRUE(st) << st.to_string();
    }
    std::vector<std::int64_t> out;
    EXPECT_TRUE(dout.download(out));
    return out;
  }
  std::vector<std::int64_t> random_inputs(std::size_t n) {
    std::mt19937_64 rng(seed());
    std::vector<std::int64_t> v(n);
    // Never zero, and below 2^52: block sums of up to 2^11 of them fit int64 (a wrapped signed sum is
    // undefined behaviour, which the host-asan build's UBSan reports).
    for (auto& x : v) x = static_cast<std::int64_t>(rng() >> 12) + 1;
    return v;
  }
  int device_warp(const stream& s) {
    std::vector<std::int64_t> in(64, 1);
    return static_cast<int>(run(s, dialect_op::warp_size, 0, 0, 1, 64, in)[0]);
  }
};

int seg_of(int width) { return static_cast<int>(std::bit_ceil(static_cast<unsigned>(width))); }

TEST_P(Dialect, WarpSizeMatchesArch) {
  PK_TEST_STREAM(GetParam(), s);
  EXPECT_EQ(device_warp(s), s.device().warp_size) << s.describe();
}

TEST_P(Dialect, Shuffles) {
  PK_TEST_STREAM(GetParam(), s);
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const int ws = device_warp(s);
  constexpr unsigned blocks = 3, threads = 128;
  const auto in = random_inputs(blocks * threads);
  for (int width : {1, 2, 4, 8, 16, 32, 64}) {
    if (width > ws) continue;
    const int P = width;
    for (int arg : {0, 1, 3, 5, width - 1, width}) {
      if (arg < 0) continue;
      SCOPED_TRACE("width " + std::to_string(width) + " arg " + std::to_string(arg));
      const auto idx = run(s, dialect_op::shfl_idx, width, arg, blocks, threads, in);
      const auto up = run(s, dialect_op::shfl_up, width, arg, blocks, threads, in);
      const auto down = run(s, dialect_op::shfl_down, width, arg, blocks, threads, in);
      const auto xr = run(s, dialect_op::shfl_xor, width, std::min(arg, ws - 1), blocks, threads, in);
      for (std::size_t g = 0; g < in.size(); ++g) {
        const int lane = static_cast<int>(g % static_cast<std::size_t>(ws));
        const std::size_t warp_base = g - static_cast<std::size_t>(lane);
        const int in_seg = lane % P, base = lane - in_seg;
        const int src_idx = base + (in_seg * arg + 1) % P;
        ASSERT_EQ(idx[g], in[warp_base + static_cast<std::size_t>(src_idx)]) << "shfl at " << g;
        ASSERT_EQ(up[g], in_seg >= arg ? in[g - static_cast<std::size_t>(arg)] : in[g]) << "shfl_up at " << g;
        ASSERT_EQ(down[g], in_seg + arg < P ? in[g + static_cast<std::size_t>(arg)] : in[g]) << "shfl_down at " << g;
        const int m = std::min(arg, ws - 1);
        const int src_x = lane ^ m;
        ASSERT_EQ(xr[g], src_x >= base + P ? in[g] : in[warp_base + static_cast<std::size_t>(src_x)]) << "shfl_xor at " << g;
      }
    }
  }
}

TEST_P(Dialect, BallotAnyAll) {
  PK_TEST_STREAM(GetParam(), s);
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const int ws = device_warp(s);
  constexpr unsigned blocks = 2, threads = 128;
  auto in = random_inputs(blocks * threads);
  // Make lane 63 (wave64) / lane 31 set, and one warp all-ones and one all-zeros for any/all.
  for (std::size_t g = 0; g < in.size(); ++g) {
    if (static_cast<int>(g % static_cast<std::size_t>(ws)) == ws - 1) in[g] |= 1;
    if (g < static_cast<std::size_t>(ws)) in[g] |= 1;
    if (g >= static_cast<std::size_t>(ws) && g < 2 * static_cast<std::size_t>(ws)) in[g] &= ~std::int64_t{1};
  }
  for (int width : {1, 7, 9, 16, 32, 64}) {
    if (width > ws) continue;
    SCOPED_TRACE("width " + std::to_string(width));
    const int P = seg_of(width);
    const auto bal = run(s, dialect_op::ballot, width, 0, blocks, threads, in);
    const auto any = run(s, dialect_op::any, width, 0, blocks, threads, in);
    const auto all = run(s, dialect_op::all, width, 0, blocks, threads, in);
    for (std::size_t g = 0; g < in.size(); ++g) {
      const int lane = static_cast<int>(g % static_cast<std::size_t>(ws));
      const std::size_t seg_base = g - static_cast<std::size_t>(lane % P);
      std::uint64_t expect = 0;
      for (int i = 0; i < width; ++i)
        if (in[seg_base + static_cast<std::size_t>(i)] & 1) expect |= std::uint64_t{1} << i;
      ASSERT_EQ(static_cast<std::uint64_t>(bal[g]), expect) << "ballot at " << g;
      const std::uint64_t full = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
      ASSERT_EQ(any[g], expect != 0 ? 1 : 0) << "any at " << g;
      ASSERT_EQ(all[g], expect == full ? 1 : 0) << "all at " << g;
    }
    if (width == 64) {
      const std::uint64_t lane63 = std::uint64_t{1} << 63;
      EXPECT_TRUE(static_cast<std::uint64_t>(bal[0]) & lane63) << "lane 63 must appear in a wave64 ballot";
    }
  }
}

TEST_P(Dialect, WarpReduceEveryWidth) {
  PK_TEST_STREAM(GetParam(), s);
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const int ws = device_warp(s);
  constexpr unsigned blocks = 2, threads = 128;
  const auto in = random_inputs(blocks * threads);
  auto compose = [](std::int64_t f, std::int64_t g) {
    const auto fa = static_cast<std::uint32_t>(static_cast<std::uint64_t>(f) >> 32), fb = static_cast<std::uint32_t>(f);
    const auto ga = static_cast<std::uint32_t>(static_cast<std::uint64_t>(g) >> 32), gb = static_cast<std::uint32_t>(g);
    const std::uint32_t a = ga * fa, b = ga * fb + gb;
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(a) << 32) | b);
  };
  for (int width : {1, 7, 9, 16, 32, 64}) {
    if (width > ws) continue;
    SCOPED_TRACE("width " + std::to_string(width));
    const int P = seg_of(width);
    const auto sum = run(s, dialect_op::reduce, width, 0, blocks, threads, in);
    const auto ord = run(s, dialect_op::reduce_order, width, 0, blocks, threads, in);
    for (std::size_t g = 0; g < in.size(); ++g) {
      const int lane = static_cast<int>(g % static_cast<std::size_t>(ws));
      const std::size_t seg_base = g - static_cast<std::size_t>(lane % P);
      std::int64_t e = 0, f = in[seg_base];
      for (int i = 0; i < width; ++i) e += in[seg_base + static_cast<std::size_t>(i)];
      for (int i = 1; i < width; ++i) f = compose(f, in[seg_base + static_cast<std::size_t>(i)]);
      ASSERT_EQ(sum[g], e) << "sum at " << g;
      ASSERT_EQ(ord[g], f) << "ordered reduce at " << g;
    }
  }
}

TEST_P(Dialect, BlockReduceAndBarrier) {
  PK_TEST_STREAM(GetParam(), s);
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (unsigned threads : {64u, 128u, 256u, 1024u}) {
    constexpr unsigned blocks = 3;
    SCOPED_TRACE("threads " + std::to_string(threads));
    const auto in = random_inputs(blocks * threads);
    const auto sum = run(s, dialect_op::block_sum, 0, 0, blocks, threads, in);
    const auto rot = run(s, dialect_op::barrier, 0, 37, blocks, threads, in);
    for (unsigned b = 0; b < blocks; ++b) {
      std::int64_t e = 0;
      for (unsigned t = 0; t < threads; ++t) e += in[b * threads + t];
      for (unsigned t = 0; t < threads; ++t) {
        ASSERT_EQ(sum[b * threads + t], e) << "block " << b << " thread " << t;
        ASSERT_EQ(rot[b * threads + t], in[b * threads + (t + 37) % threads]) << "block " << b << " thread " << t;
      }
    }
  }
}

TEST_P(Dialect, SharedMemoryIsPerBlock) {
  PK_TEST_STREAM(GetParam(), s);
  constexpr unsigned blocks = 64, threads = 256;
  const auto in = random_inputs(blocks * threads);
  const auto bad = run(s, dialect_op::shared_isolation, 0, 0, blocks, threads, in);
  for (std::size_t g = 0; g < bad.size(); ++g) ASSERT_EQ(bad[g], 0) << "block saw another block's shared memory at " << g;
}

// exp2_poly (math.hpp: 2^x on the FMA units) against exp2 in double: within 2^-17 relative where the result is
// a normal float (its measured maximum is 2^-18.07), exact at integers, 0 for x < -126.5 and -inf (a masked
// score's probability), NaN for NaN of any payload. Inputs: every 4099th float bit pattern that lies in
// [-140, 10] (540980 of them, both signs), the integers -140 .. 10, their halves and the halves' neighbours.
TEST_P(Dialect, Exp2OnTheFmaUnitsWithinItsBound) {
  PK_TEST_STREAM(GetParam(), s);
  std::vector<float> xs;
  for (std::uint32_t b = 0; b < 0xffffffffu - 4099; b += 4099) {
    const float x = std::bit_cast<float>(b);
    if (x >= -140.0f && x <= 10.0f) xs.push_back(x);
  }
  for (int k = -140; k <= 10; ++k)
    for (float x : {static_cast<float>(k), k + 0.5f, std::nextafter(k + 0.5f, -1e9f), std::nextafter(k + 0.5f, 1e9f)})
      xs.push_back(x);
  xs.push_back(-std::numeric_limits<float>::infinity());
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  xs.push_back(std::bit_cast<float>(0x7fa00001u));  // a signalling NaN's payload
  xs.push_back(std::bit_cast<float>(0xffc12345u));  // a negative NaN with a payload
  constexpr unsigned threads = 256;
  const std::size_t n = (xs.size() + threads - 1) / threads * threads;
  std::vector<std::int64_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = std::bit_cast<std::uint32_t>(xs[i < xs.size() ? i : 0]);
  const auto out = run(s, dialect_op::exp2_poly, 0, 0, static_cast<unsigned>(n / threads), threads, in);
  ASSERT_EQ(out.size(), n);
  int bad = 0;
  for (std::size_t i = 0; i < xs.size() && bad < 10; ++i) {
    const float x = xs[i];
    ASSERT_LE(static_cast<std::uint64_t>(out[i]), 0xffffffffu) << "x = " << x << ": not written";
    const float r = std::bit_cast<float>(static_cast<std::uint32_t>(out[i]));
    const double ref = std::exp2(static_cast<double>(x));
    bool ok;
    if (std::isnan(x)) ok = std::isnan(r);
    else if (x < -126.5f) ok = r == 0.0f;
    else if (x == std::floor(x)) ok = static_cast<double>(r) == ref;
    else if (ref < 0x1p-126) ok = std::fabs(r - ref) <= 0x1p-143 + 0x1p-149;  // a subnormal result: 2^-17 of 2^-126
    else ok = std::fabs(r - ref) <= 0x1p-17 * ref;
    if (!ok) {
      ++bad;
      ADD_FAILURE() << "exp2_poly(" << x << ") = " << r << ", exp2 = " << ref << " (" << s.describe() << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Dialect, ::testing::ValuesIn(all_backends()), param_name);

// ---------------------------------------------------------------------------------------------
// Emulator-only: what hardware hides, the emulator reports.
class Emulator : public Dialect {};

int count(const std::string& hay, const std::string& needle) {
  int c = 0;
  for (std::size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++c;
  return c;
}

TEST_P(Emulator, PlantedDivergentShuffleIsReported) {
  PK_TEST_STREAM(GetParam(), s);
  const auto in = random_inputs(128);
  status st;
  run(s, dialect_op::divergent_shfl, 0, 0, 1, 128, in, &st);
  ASSERT_EQ(st.code(), errc::emulation_error) << st.to_string();
  EXPECT_NE(st.message().find("divergent shfl"), std::string::npos) << st.message();
  EXPECT_EQ(count(st.message(), "dialect_kernels.cpp:"), 2) << "both call sites must be named: " << st.message();
  EXPECT_NE(st.message().find("lanes 0-15"), std::string::npos) << st.message();
}

TEST_P(Emulator, PlantedBarrierDeadlockIsReported) {
  PK_TEST_STREAM(GetParam(), s);
  const auto in = random_inputs(128);
  status st;
  run(s, dialect_op::divergent_barrier, 0, 0, 1, 128, in, &st);
  ASSERT_EQ(st.code(), errc::emulation_error) << st.to_string();
  EXPECT_NE(st.message().find("cannot complete"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("threads 64-127 have exited"), std::string::npos) << st.message();
  EXPECT_EQ(count(st.message(), "dialect_kernels.cpp:"), 1) << st.message();
}

TEST_P(Emulator, BarriersAtDifferentSitesAreReported) {
  PK_TEST_STREAM(GetParam(), s);
  const auto in = random_inputs(256);
  status st;
  run(s, dialect_op::split_barrier, 0, 0, 1, 256, in, &st);
  ASSERT_EQ(st.code(), errc::emulation_error) << st.to_string();
  EXPECT_NE(st.message().find("another barrier"), std::string::npos) << st.message();
  EXPECT_EQ(count(st.message(), "dialect_kernels.cpp:"), 2) << st.message();
}

TEST_P(Emulator, FreshSharedMemoryIsPoisoned) {
  PK_TEST_STREAM(GetParam(), s);
  const auto in = random_inputs(64);
  const auto out = run(s, dialect_op::shared_poison, 0, 0, 1, 64, in);
  for (auto v : out) ASSERT_EQ(v, 0xFFFFFFFFLL);
}

TEST_P(Emulator, LaunchLimitsOfTheImpersonatedDevice) {
  PK_TEST_STREAM(GetParam(), s);
  const auto in = random_inputs(64);
  status st;
  // 2048 threads per block exceeds every device's limit.
  device_buffer<std::int64_t> d;
  ASSERT_TRUE(d.allocate(s, 4096));
  backend::host::launch_config cfg;
  cfg.block = {2048, 1, 1};
  cfg.max_threads_per_block = s.device().max_threads_per_block;
  st = backend::host::launch(cfg, [] {});
  EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
  cfg.block = {64, 1, 1};
  cfg.dynamic_smem = static_cast<std::size_t>(s.device().smem_per_block_optin) + 1;
  cfg.smem_limit_per_block = s.device().smem_per_block_optin;
  st = backend::host::launch(cfg, [] {});
  EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
  EXPECT_NE(st.message().find("shared memory"), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Backends, Emulator, ::testing::ValuesIn(host_backends()), param_name);

status run_as(target code, const stream& s, const dialect_call& c) {
  switch (code) {
#define PK_DETAIL_DISPATCH(t) \
  case target::t: return t::test_impl::run(s, c);
    PK_DETAIL_FOR_EACH_TARGET(PK_DETAIL_DISPATCH)
#undef PK_DETAIL_DISPATCH
    default: return unsupported("target not built");
  }
}

// launch() runs code only on a stream of its own target; only a kernel of a PLAIN table (shape.plain,
// which the dialect kernels are not) also on the targets its code is plain code for (host_sm90a on
// host_sm80's). A stream of one host target handed code of every other built one is refused, naming both,
// and nothing is written.
TEST(Launch, CodeOfAnotherTargetIsRefused) {
  int pairs = 0;
  for (const code_target_info& stream_t : code_targets) {
    if (!stream_t.built || stream_t.backend != backend_kind::host) continue;
    stream s;
    ASSERT_TRUE(stream::host(stream_t.device, s));
    ASSERT_EQ(s.code_target(), stream_t.id);
    for (const code_target_info& code_t : code_targets) {
      if (!code_t.built || code_t.backend != backend_kind::host) continue;
      device_buffer<std::int64_t> din, dout;
      ASSERT_TRUE(din.allocate(s, 64));
      ASSERT_TRUE(dout.allocate(s, 64));
      ASSERT_TRUE(din.upload(std::vector<std::int64_t>(64, 7)));
      ASSERT_TRUE(dout.upload(std::vector<std::int64_t>(64, poison)));
      const status st = run_as(code_t.id, s, {dialect_op::block_sum, 32, 0, 1, 64, din.data(), dout.data()});
      std::vector<std::int64_t> out;
      ASSERT_TRUE(dout.download(out));
      if (code_t.id == stream_t.id) {
        EXPECT_TRUE(st) << st.to_string();
        EXPECT_EQ(out, std::vector<std::int64_t>(64, 7 * 64));
        continue;
      }
      ++pairs;
      EXPECT_EQ(st.code(), errc::internal) << stream_t.name << " stream, " << code_t.name << " code: " << st.to_string();
      EXPECT_NE(st.message().find(std::string("stream of target ") + stream_t.name), std::string::npos) << st.message();
      EXPECT_NE(st.message().find(std::string("code of target ") + code_t.name), std::string::npos) << st.message();
      EXPECT_EQ(out, std::vector<std::int64_t>(64, poison)) << stream_t.name << " stream ran " << code_t.name << " code";
    }
  }
  if (pairs == 0) GTEST_SKIP() << "one host target built: no pair of targets to check";
}

}  // namespace
}  // namespace pk::test

// A kernel builds one descriptor per tile and adds swizzled_tile::k_major_step / mn_major_step per K step
// (attention_ws.hpp): the sum must be the descriptor of that step, for every tile base a block can have.
template <class Tile>
void check_descriptor_steps() {
  constexpr int kk_steps = Tile::cols / 16;
  for (std::uint32_t base = 0; base + Tile::bytes <= Tile::max_window_bytes; base += Tile::alignment) {
    for (int row0 = 0; row0 < Tile::rows; row0 += 64)
      for (int kk = 0; kk < kk_steps; ++kk)
        ASSERT_EQ(Tile::k_major_desc(base, row0, 0) + Tile::k_major_step(kk), Tile::k_major_desc(base, row0, kk))
            << "base " << base << " row0 " << row0 << " kk " << kk;
    for (int kk = 0; kk < Tile::rows / 16; ++kk)
      ASSERT_EQ(Tile::mn_major_desc(base, 0) + Tile::mn_major_step(kk), Tile::mn_major_desc(base, kk))
          << "base " << base << " kk " << kk;
  }
}

TEST(SwizzledTile, StepsAddedToTheFirstDescriptorAreEachStepsDescriptor) {
  check_descriptor_steps<pk::swizzled_tile<pk::bf16, 128, 64>>();
  check_descriptor_steps<pk::swizzled_tile<pk::bf16, 192, 64>>();
  check_descriptor_steps<pk::swizzled_tile<pk::bf16, 128, 128>>();
  check_descriptor_steps<pk::swizzled_tile<pk::fp16, 80, 256>>();
  check_descriptor_steps<pk::swizzled_tile<pk::bf16, 128, 256>>();
}
