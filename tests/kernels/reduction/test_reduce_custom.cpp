// The header-only user-operator path (reduce_custom.hpp) on every backend: a struct accumulator and an
// integer operator, exact results, every policy, the empty input, and a stream of another target.
#include "custom_op_kernels.hpp"
#include "reduce_test_util.hpp"

namespace pk::test {
namespace {

class ReduceCustom : public ::testing::TestWithParam<backend_param> {};

status minmax_on(const stream& s, const minmax* in, std::int64_t n, minmax* out, int policy) {
  switch (s.code_target()) {
#define PK_TEST_DISPATCH(t) \
  case target::t: return t::test_custom::minmax_reduce(s, in, n, out, policy);
    PK_DETAIL_FOR_EACH_TARGET(PK_TEST_DISPATCH)
#undef PK_TEST_DISPATCH
    default: return unsupported("target not built");
  }
}
status xor_on(const stream& s, const std::uint32_t* in, std::int64_t n, std::uint32_t* out) {
  switch (s.code_target()) {
#define PK_TEST_DISPATCH(t) \
  case target::t: return t::test_custom::xor_reduce(s, in, n, out);
    PK_DETAIL_FOR_EACH_TARGET(PK_TEST_DISPATCH)
#undef PK_TEST_DISPATCH
    default: return unsupported("target not built");
  }
}

TEST_P(ReduceCustom, StructAndIntegerOperatorsExact) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  std::mt19937_64 rng(sd);
  std::uniform_real_distribution<float> d(-100.0f, 100.0f);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{1025}, std::size_t{100003}}) {
    for (int policy = 0; policy < static_cast<int>(reduction::reduce_candidates.size()); ++policy) {
      SCOPED_TRACE("n " + std::to_string(n) + " policy " + std::to_string(policy));
      std::vector<minmax> h(n);
      minmax want{3.0e38f, -3.0e38f};
      for (auto& x : h) {
        const float v = d(rng);
        x = {v, v};
        want.lo = std::min(want.lo, v);
        want.hi = std::max(want.hi, v);
      }
      device_buffer<minmax> in, out;
      ASSERT_TRUE(in.allocate(s, n + 1));
      h.push_back({0, 0});
      ASSERT_TRUE(in.upload(h));
      ASSERT_TRUE(out.allocate(s, 1));
      ASSERT_TRUE(out.upload({{NAN, NAN}}));
      const status st = minmax_on(s, in.data(), static_cast<std::int64_t>(n), out.data(), policy);
      ASSERT_TRUE(st) << st.to_string();
      std::vector<minmax> r;
      ASSERT_TRUE(out.download(r));
      EXPECT_EQ(r[0].lo, want.lo);
      EXPECT_EQ(r[0].hi, want.hi);
    }
    std::vector<std::uint32_t> hx(n + 1);
    std::uint32_t want = 0;
    for (std::size_t i = 0; i < n; ++i) want ^= (hx[i] = static_cast<std::uint32_t>(rng()));
    device_buffer<std::uint32_t> in, out;
    ASSERT_TRUE(in.allocate(s, n + 1));
    ASSERT_TRUE(in.upload(hx));
    ASSERT_TRUE(out.allocate(s, 1));
    ASSERT_TRUE(out.upload({0xdeadbeefu}));
    ASSERT_TRUE(xor_on(s, in.data(), static_cast<std::int64_t>(n), out.data()));
    std::vector<std::uint32_t> r;
    ASSERT_TRUE(out.download(r));
    EXPECT_EQ(r[0], want);
  }
}

TEST_P(ReduceCustom, CountWhoseBytesOverflowIsRejected) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<std::uint32_t> in, out;
  ASSERT_TRUE(in.allocate(s, 4));
  ASSERT_TRUE(out.allocate(s, 1));
  ASSERT_TRUE(out.upload({0xdeadbeefu}));
  // 2^62 four-byte elements are 2^64 bytes.
  const status st = xor_on(s, in.data(), std::int64_t{1} << 62, out.data());
  EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
  EXPECT_NE(st.message().find("n = 4611686018427387904"), std::string::npos) << st.message();
  std::vector<std::uint32_t> r;
  ASSERT_TRUE(out.download(r));
  EXPECT_EQ(r[0], 0xdeadbeefu) << "nothing may be written";
}

TEST_P(ReduceCustom, StreamOfAnotherTargetIsRejected) {
  PK_TEST_STREAM(GetParam(), s);
  if (!target_built(target::host_gfx942) || s.code_target() == target::host_gfx942) GTEST_SKIP() << "needs two targets";
  stream other;
  ASSERT_TRUE(stream::host("MI300X", other));
  std::uint32_t dummy = 0;
  // The sm80/cuda instance called with a gfx942 stream: refused with both targets named.
  status st;
  switch (s.code_target()) {
#define PK_TEST_DISPATCH(t) \
  case target::t: st = t::test_custom::xor_reduce(other, &dummy, 0, &dummy); break;
    PK_DETAIL_FOR_EACH_TARGET(PK_TEST_DISPATCH)
#undef PK_TEST_DISPATCH
    default: break;
  }
  EXPECT_EQ(st.code(), errc::unsupported) << st.to_string();
  EXPECT_NE(st.message().find("host_gfx942"), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceCustom, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
