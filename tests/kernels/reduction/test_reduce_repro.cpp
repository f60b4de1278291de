// The reproducible fp32/fp64 sum: on every backend and under every compiled policy the result has
// exactly the bits of the CPU evaluation of the fixed order (pk/reduction/reference.hpp). Host wave32
// (sm80, gfx1100), host wave64 (gfx942) and the GPU all compare against the same reference bits, so
// they agree with each other. Data spans 40 binades so that any change of order changes the bits.
#include "reduce_test_util.hpp"

#include <pk/reduction/reference.hpp>

#include <bit>
#include <limits>

namespace pk::test {
namespace {
using namespace red;

class ReduceReproducible : public ::testing::TestWithParam<backend_param> {};

template <class T>
std::vector<T> wide_data(std::size_t n, std::uint64_t sd) {
  std::mt19937_64 rng(sd);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::uniform_int_distribution<int> e(-20, 20);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(std::ldexp(d(rng), e(rng)));
  return v;
}

template <class T>
T run_repro(const stream& s, const std::vector<T>& h, std::size_t offset, int policy) {
  auto in = upload_padded(s, h, offset);
  device_buffer<T> out;
  EXPECT_TRUE(out.allocate(s, 1));
  EXPECT_TRUE(out.upload({poison<T>()}));
  reduce_options o;
  o.reproducible = true;
  const std::string forced =
      policy < 0 ? "" : reduction::reproducible_name(reduction::reproducible_candidates[static_cast<std::size_t>(policy)]);
  if (policy >= 0) o.policy = forced.c_str();
  const status st = reduce_sum<T>(s, in.data() + offset, static_cast<std::int64_t>(h.size()), out.data(), o);
  EXPECT_TRUE(st) << st.to_string();
  EXPECT_TRUE(synchronize(s));
  std::vector<T> r;
  EXPECT_TRUE(out.download(r));
  return r[0];
}

template <class T>
void check(const stream& s, std::size_t n, std::size_t offset, int policy, std::uint64_t sd) {
  SCOPED_TRACE(std::string(reduction::to_string(reduction::dtype_of<T>)) + " n " + std::to_string(n) + " offset " +
               std::to_string(offset) + " policy " + std::to_string(policy));
  const auto h = wide_data<T>(n, sd + n);
  const T want = reduction::reference::reproducible_sum(h.data(), static_cast<std::int64_t>(n));
  const T got = run_repro(s, h, offset, policy);
  ASSERT_TRUE(same(got, want)) << "got " << show(got) << " want " << show(want);
  // Sanity of the order itself: within the Higham bound of the exact sum.
  double ref = 0, abs_sum = 0;
  for (T x : h) {
    ref += static_cast<double>(x);
    abs_sum += std::fabs(static_cast<double>(x));
  }
  const double u = std::ldexp(1.0, -numeric_traits<T>::digits);
  EXPECT_LE(std::fabs(static_cast<double>(got) - ref), static_cast<double>(n ? n - 1 : 0) * u * abs_sum + 1e-300);
}

TEST_P(ReduceReproducible, SameBitsAsTheFixedOrderUnderEveryPolicy) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const int policies = static_cast<int>(reduction::reproducible_candidates.size());
  // Chunk (2048 fp32 / 1024 fp64 elements) and group (256 chunks) boundaries, ragged tails.
  for (int policy = -1; policy < policies; ++policy) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{1023}, std::size_t{1024},
                          std::size_t{2047}, std::size_t{2049}, std::size_t{65537}}) {
      check<float>(s, n, 0, policy, sd);
      check<double>(s, n, policy < 0 ? 1 : 0, policy, sd);
    }
  }
  // More than one group (several group tickets, the top-level tree): 256 fp64 chunks are 262144
  // elements. The policy rotates with the backend so that each policy meets a multi-group case.
  const int policy = static_cast<int>(GetParam().label.size()) % policies;
  check<double>(s, 262144 * 2 + 1001, 0, policy, sd);
  check<float>(s, 524288 + 77, 1, policy, sd);
  if (GetParam().gpu) {
    // On the GPU: more than 256 groups (two levels of the top tree), every policy.
    for (int p = 0; p < policies; ++p) check<float>(s, (std::size_t{1} << 27) + (std::size_t{1} << 19) + 7, 0, p, sd);
  }
}

TEST_P(ReduceReproducible, RunToRunAndAgainstTheDefaultSum) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  const auto h = wide_data<float>(100000, sd);
  const float a = run_repro(s, h, 0, -1), b = run_repro(s, h, 0, -1);
  EXPECT_TRUE(same(a, b));
  // Values whose sum is exact in any order give the default sum's result too.
  std::vector<float> ex(100000);
  for (std::size_t i = 0; i < ex.size(); ++i) ex[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 16.0f;
  double ref = 0;
  for (float x : ex) ref += x;
  EXPECT_EQ(static_cast<double>(run_repro(s, ex, 0, -1)), ref);
}

//! NaN results of the reproducible sum: whatever the NaN inputs' signs and payloads (quiet or
//! signaling), and for inf + -inf, the result is the one canonical quiet NaN (f32 0x7fc00000, f64
//! 0x7ff8000000000000), bit for bit, on every backend and policy, as the CPU reference.
template <class T, class Bits>
void canonical_nan_case(const stream& s, std::uint64_t sd) {
  const Bits canonical = sizeof(T) == 4 ? Bits(0x7fc00000u) : Bits(0x7ff8000000000000ull);
  const T inf = std::numeric_limits<T>::infinity();
  // NaNs with a sign bit, payloads, a signaling NaN.
  const Bits payloads[] = {sizeof(T) == 4 ? Bits(0xffc00000u) : Bits(0xfff8000000000000ull),
                           sizeof(T) == 4 ? Bits(0x7fc12345u) : Bits(0x7ff8000012345678ull),
                           sizeof(T) == 4 ? Bits(0x7fa00001u) : Bits(0x7ff4000000000001ull),
                           sizeof(T) == 4 ? Bits(0xffbfffffu) : Bits(0xfff7ffffffffffffull)};
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{4099}, std::size_t{1} << 20}) {
    for (int kind = 0; kind < 6; ++kind) {
      auto h = wide_data<T>(n, sd + n);
      if (kind < 4) {
        h[n / 2] = std::bit_cast<T>(payloads[kind]);
      } else if (n >= 2) {
        h[kind == 4 ? 0 : n / 3] = inf;  // inf + -inf, in the same chunk or far apart
        h[n - 1] = -inf;
      } else {
        continue;
      }
      SCOPED_TRACE(std::string(reduction::to_string(reduction::dtype_of<T>)) + " n " + std::to_string(n) + " kind " +
                   std::to_string(kind));
      const T want = reduction::reference::reproducible_sum(h.data(), static_cast<std::int64_t>(n));
      ASSERT_EQ(std::bit_cast<Bits>(want), canonical) << "the CPU reference";
      for (int policy = 0; policy < static_cast<int>(reduction::reproducible_candidates.size()); ++policy) {
        const T got = run_repro(s, h, 0, policy);
        ASSERT_EQ(std::bit_cast<Bits>(got), canonical) << "policy " << policy << " got " << std::hex
                                                       << std::bit_cast<Bits>(got);
      }
    }
  }
}

TEST_P(ReduceReproducible, NaNResultIsTheCanonicalQuietNaN) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  canonical_nan_case<float, std::uint32_t>(s, sd);
  canonical_nan_case<double, std::uint64_t>(s, sd);
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceReproducible, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
