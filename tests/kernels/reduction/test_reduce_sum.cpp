// pk::reduce_sum on every backend: exact arithmetic (inputs are small multiples of 2^-4, so every fp32
// partial sum is exact for n < 2^20 * 16 / 8) compared bit for bit with a double reference, ragged
// sizes, misaligned input, the empty input, and bad arguments.
#include "../../common/backends.hpp"

#include <pk/reduction/reduce.hpp>

#include <cmath>

namespace pk::test {
namespace {

class ReduceSum : public ::testing::TestWithParam<backend_param> {};

// Values k/16 with k in [-8, 8] \ {0}: never zero, exactly representable, and every partial sum of
// up to 2^21 of them is an integer multiple of 2^-4 below 2^20 in magnitude: exact in fp32.
std::vector<float> exact_inputs(std::size_t n, std::uint64_t s) {
  std::mt19937_64 rng(s);
  std::uniform_int_distribution<int> d(-8, 7);
  std::vector<float> v(n);
  for (auto& x : v) {
    int k = d(rng);
    if (k >= 0) ++k;
    x = static_cast<float>(k) / 16.0f;
  }
  return v;
}

float run_sum(const stream& s, const std::vector<float>& h, std::size_t offset, status& st) {
  device_buffer<float> in, out;
  EXPECT_TRUE(in.allocate(s, h.size() + offset + 1));
  EXPECT_TRUE(out.allocate(s, 1));
  std::vector<float> padded(h.size() + offset + 1, std::nanf(""));
  std::copy(h.begin(), h.end(), padded.begin() + static_cast<std::ptrdiff_t>(offset));
  EXPECT_TRUE(in.upload(padded));
  EXPECT_TRUE(out.upload({std::nanf("")}));  // poison
  st = reduce_sum(s, in.data() + offset, static_cast<std::int64_t>(h.size()), out.data());
  if (st) st = synchronize(s);
  std::vector<float> r;
  EXPECT_TRUE(out.download(r));
  return r[0];
}

TEST_P(ReduceSum, ExactAtRaggedSizes) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (std::size_t n : {std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{33}, std::size_t{63},
                        std::size_t{64}, std::size_t{65}, std::size_t{255}, std::size_t{256}, std::size_t{257},
                        std::size_t{1023}, std::size_t{1024}, std::size_t{1025}, std::size_t{4099},
                        std::size_t{65521}, (std::size_t{1} << 20) + 3}) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
      SCOPED_TRACE("n " + std::to_string(n) + " offset " + std::to_string(offset));
      const auto h = exact_inputs(n, sd + n);
      double ref = 0;
      for (float x : h) ref += x;
      status st;
      const float got = run_sum(s, h, offset, st);
      ASSERT_TRUE(st) << st.to_string();
      ASSERT_EQ(static_cast<double>(got), ref);
    }
  }
}

TEST_P(ReduceSum, EmptyGivesIdentity) {
  PK_TEST_STREAM(GetParam(), s);
  status st;
  const float got = run_sum(s, {}, 0, st);
  ASSERT_TRUE(st) << st.to_string();
  EXPECT_EQ(got, 0.0f);
}

TEST_P(ReduceSum, RunToRunDeterministic) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  std::mt19937_64 rng(sd);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> h(300007);
  for (auto& x : h) x = d(rng) + 1e-3f;
  status st;
  const float a = run_sum(s, h, 0, st);
  ASSERT_TRUE(st) << st.to_string();
  const float b = run_sum(s, h, 0, st);
  ASSERT_TRUE(st) << st.to_string();
  EXPECT_EQ(std::bit_cast<std::uint32_t>(a), std::bit_cast<std::uint32_t>(b));
  // Forward error of any summation order is at most (n-1) u sum|x| (Higham, Accuracy and Stability
  // of Numerical Algorithms, 2nd ed., eq. 4.4); u = 2^-24 for fp32.
  double ref = 0, abs_sum = 0;
  for (float x : h) {
    ref += x;
    abs_sum += std::fabs(x);
  }
  EXPECT_LE(std::fabs(a - ref), static_cast<double>(h.size() - 1) * std::ldexp(1.0, -24) * abs_sum);
}

TEST_P(ReduceSum, BadArgumentsNameTheArgument) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<float> out;
  ASSERT_TRUE(out.allocate(s, 1));
  status st = reduce_sum(s, nullptr, 10, out.data());
  EXPECT_EQ(st.code(), errc::invalid_argument);
  EXPECT_NE(st.message().find("in:"), std::string::npos) << st.message();
  st = reduce_sum(s, out.data(), 1, nullptr);
  EXPECT_EQ(st.code(), errc::invalid_argument);
  EXPECT_NE(st.message().find("out:"), std::string::npos) << st.message();
  st = reduce_sum(s, out.data(), -1, out.data());
  EXPECT_EQ(st.code(), errc::invalid_argument);
  EXPECT_NE(st.message().find("n = -1"), std::string::npos) << st.message();
  st = reduce_sum(stream{}, out.data(), 1, out.data());
  EXPECT_EQ(st.code(), errc::invalid_argument);
  EXPECT_NE(st.message().find("stream"), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceSum, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
