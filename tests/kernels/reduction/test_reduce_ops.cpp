// Device-wide pk::reduce: every op x dtype on every backend at ragged sizes, exact comparisons (the
// inputs make every order of evaluation exact, reduce_test_util.hpp), identities, NaN/Inf, first index
// on ties, misaligned input, every compiled policy, run-to-run bits, mean/variance, bad arguments.
#include "reduce_test_util.hpp"

#include <pk/archdb/family_plan.hpp>

namespace pk::test {
namespace {
using namespace red;

class ReduceOps : public ::testing::TestWithParam<backend_param> {};

constexpr reduce_op all_ops[] = {reduce_op::sum, reduce_op::prod, reduce_op::min,
                                 reduce_op::max, reduce_op::argmin, reduce_op::argmax};

// Ragged sizes around warp (32/64), block (128..1024) and tile boundaries, and primes.
const std::vector<std::size_t> small_sizes = {0, 1, 31, 32, 33, 63, 64, 65, 127, 255, 256, 257, 1023, 1025, 4099};

template <class T>
void check_device(const stream& s, reduce_op op, std::size_t n, std::uint64_t sd, std::size_t offset = 0,
                  int policy = -1) {
  SCOPED_TRACE(std::string(to_string(op)) + " " + reduction::to_string(reduction::dtype_of<T>) + " n " +
               std::to_string(n) + " offset " + std::to_string(offset) + " policy " + std::to_string(policy));
  const auto h = gen<T>(op, n, sd);
  auto in = upload_padded(s, h, offset);
  reduce_options opt;
  const std::string forced = policy < 0 ? "" : reduction::name_of(reduction::reduce_candidates[static_cast<std::size_t>(policy)]);
  if (policy >= 0) opt.policy = forced.c_str();
  const std::int64_t nn = static_cast<std::int64_t>(n);
  if (op == reduce_op::argmin || op == reduce_op::argmax) {
    device_buffer<std::int64_t> out;
    ASSERT_TRUE(out.allocate(s, 1));
    ASSERT_TRUE(out.upload({-7}));  // poison
    const status st = reduce(s, op, reduction::dtype_of<T>, in.data() + offset, nn, out.data(), opt);
    ASSERT_TRUE(st) << st.to_string();
    ASSERT_TRUE(synchronize(s));
    std::vector<std::int64_t> r;
    ASSERT_TRUE(out.download(r));
    ASSERT_EQ(r[0], ref_index(op, h.data(), nn));
  } else {
    device_buffer<T> out;
    ASSERT_TRUE(out.allocate(s, 1));
    ASSERT_TRUE(out.upload({poison<T>()}));
    const status st = reduce(s, op, reduction::dtype_of<T>, in.data() + offset, nn, out.data(), opt);
    ASSERT_TRUE(st) << st.to_string();
    ASSERT_TRUE(synchronize(s));
    std::vector<T> r;
    ASSERT_TRUE(out.download(r));
    const T want = ref_value(op, h.data(), nn);
    ASSERT_TRUE(same(r[0], want)) << "got " << show(r[0]) << " want " << show(want);
  }
}

template <class T>
void all_ops_small(const stream& s, std::uint64_t sd, bool gpu) {
  for (reduce_op op : all_ops) {
    if (!arith(reduction::dtype_of<T>) && (op == reduce_op::sum || op == reduce_op::prod)) continue;
    for (std::size_t n : small_sizes) {
      check_device<T>(s, op, n, sd + n);
      if (::testing::Test::HasFatalFailure()) return;
    }
    // 2^20 + 3 elements: every op on the GPU. On the emulator (about 1e6 thread-items per second per
    // core) four cases: the f64 and bf16 sums and the f32 and i8 argmax cover multi-block grids and the
    // last-block combination for 8/4/2/1-byte elements and both accumulator shapes.
    const bool large = gpu || (op == reduce_op::sum && (std::is_same_v<T, double> || std::is_same_v<T, bf16>)) ||
                       (op == reduce_op::argmax && (std::is_same_v<T, float> || std::is_same_v<T, std::int8_t>));
    if (large) check_device<T>(s, op, (std::size_t{1} << 20) + 3, sd);
  }
}

TEST_P(ReduceOps, EveryOpEveryTypeRaggedSizes) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const bool gpu = GetParam().gpu;
  all_ops_small<double>(s, sd, gpu);
  all_ops_small<float>(s, sd, gpu);
  all_ops_small<fp16>(s, sd, gpu);
  all_ops_small<bf16>(s, sd, gpu);
  all_ops_small<std::int32_t>(s, sd, gpu);
  all_ops_small<std::int64_t>(s, sd, gpu);
  all_ops_small<std::int8_t>(s, sd, gpu);
  all_ops_small<std::uint8_t>(s, sd, gpu);
}

TEST_P(ReduceOps, SixteenBitTypesEveryOpMidSize) {
  // The emulator runs the large case for few types; here every op of the 16-bit types at a size
  // that still spans several blocks of every policy.
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (reduce_op op : all_ops) {
    check_device<fp16>(s, op, 65521, sd);
    check_device<bf16>(s, op, 65521, sd + 1);
  }
}

//! Every block of every policy folds two full tiles and block 0 then the input's partial last tile:
//! n = (2 grid + 1/2) tiles, the policy's grid being one resident wave on the stream's device. The f32 sum
//! counts every element (exact inputs); the bf16 argmax finds a unique maximum planted in a block's second
//! tile, then in the partial tile.
TEST_P(ReduceOps, EveryBlockFoldsSeveralTiles) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  struct shape {
    std::int64_t tile, grid, n;
  };
  const auto shape_of = [&](int policy, int bytes) {
    const auto& pol = reduction::reduce_candidates[static_cast<std::size_t>(policy)];
    const std::int64_t tile = std::int64_t{pol.block_threads} * reduction::scaled_items(pol, static_cast<std::size_t>(bytes));
    const std::int64_t huge = std::int64_t{1} << 40;
    const archdb::plan p = archdb::with_choice(reduction::plan_reduce(s.device(), huge, bytes), policy);
    const std::int64_t grid = reduction::reduce_grid(s.device(), p, huge, bytes);
    const std::int64_t n = 2 * grid * tile + tile / 2 + 3;
    EXPECT_EQ(reduction::reduce_grid(s.device(), p, n, bytes), grid) << "one resident wave";
    return shape{tile, grid, n};
  };
  for (int policy = 0; policy < static_cast<int>(reduction::reduce_candidates.size()); ++policy) {
    const shape f = shape_of(policy, sizeof(float));
    check_device<float>(s, reduce_op::sum, static_cast<std::size_t>(f.n), sd, 0, policy);
    if (HasFatalFailure()) return;
    const shape b = shape_of(policy, sizeof(bf16));
    const std::vector<bf16> h = gen<bf16>(reduce_op::argmax, static_cast<std::size_t>(b.n), sd + 1);
    const std::string forced = reduction::name_of(reduction::reduce_candidates[static_cast<std::size_t>(policy)]);
    reduce_options opt;
    opt.policy = forced.c_str();
    for (const std::int64_t at : {(b.grid + b.grid / 2) * b.tile + 17, 2 * b.grid * b.tile + b.tile / 4}) {
      SCOPED_TRACE("policy " + forced + " n " + std::to_string(b.n) + " maximum at " + std::to_string(at));
      std::vector<bf16> g = h;
      g[static_cast<std::size_t>(at)] = from_double<bf16>(7.0);
      auto in = upload_padded(s, g);
      device_buffer<std::int64_t> out;
      ASSERT_TRUE(out.allocate(s, 1) && out.upload({-7}));
      const status st = reduce(s, reduce_op::argmax, reduction::dtype_of<bf16>, in.data(), b.n, out.data(), opt);
      ASSERT_TRUE(st) << st.to_string();
      std::vector<std::int64_t> r;
      ASSERT_TRUE(synchronize(s) && out.download(r));
      ASSERT_EQ(r[0], at);
    }
  }
}

TEST_P(ReduceOps, EveryPolicyAndMisalignedInput) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int policy = 0; policy < static_cast<int>(reduction::reduce_candidates.size()); ++policy) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
      check_device<float>(s, reduce_op::sum, 40009, sd, offset, policy);
      check_device<bf16>(s, reduce_op::argmax, 40009, sd, offset, policy);
      check_device<std::int8_t>(s, reduce_op::min, 9001, sd, offset, policy);
      check_device<double>(s, reduce_op::argmin, 9001, sd, offset, policy);
    }
  }
}

template <class T>
T run_value(const stream& s, reduce_op op, const std::vector<T>& h) {
  auto in = upload_padded(s, h);
  device_buffer<T> out;
  EXPECT_TRUE(out.allocate(s, 1));
  EXPECT_TRUE(out.upload({poison<T>()}));
  const status st = reduce(s, op, reduction::dtype_of<T>, in.data(), static_cast<std::int64_t>(h.size()), out.data());
  EXPECT_TRUE(st) << st.to_string();
  EXPECT_TRUE(synchronize(s));
  std::vector<T> r;
  EXPECT_TRUE(out.download(r));
  return r[0];
}
template <class T>
std::int64_t run_index(const stream& s, reduce_op op, const std::vector<T>& h) {
  auto in = upload_padded(s, h);
  device_buffer<std::int64_t> out;
  EXPECT_TRUE(out.allocate(s, 1));
  EXPECT_TRUE(out.upload({-7}));
  const status st = reduce(s, op, reduction::dtype_of<T>, in.data(), static_cast<std::int64_t>(h.size()), out.data());
  EXPECT_TRUE(st) << st.to_string();
  EXPECT_TRUE(synchronize(s));
  std::vector<std::int64_t> r;
  EXPECT_TRUE(out.download(r));
  return r[0];
}

template <class T>
void nan_inf_cases(const stream& s) {
  SCOPED_TRACE(reduction::to_string(reduction::dtype_of<T>));
  const T inf = numeric_traits<T>::infinity(), nan = numeric_traits<T>::quiet_nan();
  const T ninf = from_double<T>(-std::numeric_limits<double>::infinity());
  for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{5000}}) {
    for (std::size_t pos : {std::size_t{0}, n / 2, n - 1}) {
      SCOPED_TRACE("n " + std::to_string(n) + " pos " + std::to_string(pos));
      std::vector<T> h(n, from_double<T>(1.0));
      h[pos] = nan;
      if (n > 2) h[(pos + 1) % n] = nan;  // two NaNs: argmin/argmax give the first
      const std::size_t first = n > 2 ? std::min(pos, (pos + 1) % n) : pos;
      EXPECT_TRUE(is_nan(run_value(s, reduce_op::sum, h)));
      EXPECT_TRUE(is_nan(run_value(s, reduce_op::prod, h)));
      EXPECT_TRUE(is_nan(run_value(s, reduce_op::min, h)));
      EXPECT_TRUE(is_nan(run_value(s, reduce_op::max, h)));
      EXPECT_EQ(run_index(s, reduce_op::argmin, h), static_cast<std::int64_t>(first));
      EXPECT_EQ(run_index(s, reduce_op::argmax, h), static_cast<std::int64_t>(first));
      std::vector<T> g(n, from_double<T>(0.5));
      g[pos] = inf;
      EXPECT_TRUE(same(run_value(s, reduce_op::sum, g), inf));
      EXPECT_TRUE(same(run_value(s, reduce_op::max, g), inf));
      EXPECT_EQ(run_index(s, reduce_op::argmax, g), static_cast<std::int64_t>(pos));
      g[pos] = ninf;
      EXPECT_TRUE(same(run_value(s, reduce_op::min, g), ninf));
      EXPECT_EQ(run_index(s, reduce_op::argmin, g), static_cast<std::int64_t>(pos));
      if (n > 1) {
        g[(pos + 1) % n] = inf;  // +inf + -inf
        EXPECT_TRUE(is_nan(run_value(s, reduce_op::sum, g)));
      }
    }
  }
}

TEST_P(ReduceOps, NanAndInfPropagate) {
  PK_TEST_STREAM(GetParam(), s);
  nan_inf_cases<float>(s);
  nan_inf_cases<double>(s);
  nan_inf_cases<fp16>(s);
  nan_inf_cases<bf16>(s);
}

TEST_P(ReduceOps, TiesGiveTheFirstIndexAndExtremesOfTheType) {
  PK_TEST_STREAM(GetParam(), s);
  // All equal: index 0 whatever the grid. The extreme values of the type are found (integer
  // identities are the type's own limits, so a vector of lowest() must still report index 0).
  std::vector<std::int32_t> eq(100003, 42);
  EXPECT_EQ(run_index(s, reduce_op::argmin, eq), 0);
  EXPECT_EQ(run_index(s, reduce_op::argmax, eq), 0);
  std::vector<std::int8_t> lo(777, std::int8_t{-128});
  EXPECT_EQ(run_index(s, reduce_op::argmin, lo), 0);
  EXPECT_EQ(run_index(s, reduce_op::argmax, lo), 0);
  EXPECT_EQ(run_value(s, reduce_op::min, lo), std::int8_t{-128});
  std::vector<std::uint8_t> hi(777, std::uint8_t{255});
  EXPECT_EQ(run_value(s, reduce_op::max, hi), std::uint8_t{255});
  EXPECT_EQ(run_index(s, reduce_op::argmin, hi), 0);
  // The extreme value twice, far apart (different blocks): the lower index.
  std::vector<float> f(200000, 0.0f);
  f[150001] = 3.0f;
  f[70001] = 3.0f;
  f[199999] = -2.0f;
  f[12] = -2.0f;
  EXPECT_EQ(run_index(s, reduce_op::argmax, f), 70001);
  EXPECT_EQ(run_index(s, reduce_op::argmin, f), 12);
  // -inf elements are found by argmax when they are all there is.
  std::vector<double> ninf(65, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(run_index(s, reduce_op::argmax, ninf), 0);
}

//! argmin/argmax over full tiles of 16-byte vectors (the vector-at-a-time fold): the first of two equal
//! extremes inside one vector and in two vectors of one thread, a NaN after the extreme, inputs of only
//! the identity's value (+-inf), and -0 against +0 (equal: the first index).
template <class T>
void arg_vector_cases(const stream& s) {
  SCOPED_TRACE(reduction::to_string(reduction::dtype_of<T>));
  const std::size_t n = (std::size_t{1} << 20) + 3;
  const T inf = numeric_traits<T>::infinity(), nan = numeric_traits<T>::quiet_nan();
  const T ninf = from_double<T>(-std::numeric_limits<double>::infinity());
  std::vector<T> h(n, from_double<T>(0.25));
  h[8003] = h[8006] = from_double<T>(3.0);  // one 16-byte vector of 16-bit elements
  h[8003 + 16 * 4096] = from_double<T>(3.0);
  h[8001] = h[8002] = from_double<T>(-3.0);
  EXPECT_EQ(run_index(s, reduce_op::argmax, h), 8003);
  EXPECT_EQ(run_index(s, reduce_op::argmin, h), 8001);
  h[500001] = nan;
  EXPECT_EQ(run_index(s, reduce_op::argmax, h), 500001);
  EXPECT_EQ(run_index(s, reduce_op::argmin, h), 500001);
  EXPECT_EQ(run_index(s, reduce_op::argmax, std::vector<T>(n, ninf)), 0);
  EXPECT_EQ(run_index(s, reduce_op::argmin, std::vector<T>(n, inf)), 0);
  std::vector<T> z(n, from_double<T>(0.0));
  z[5] = from_double<T>(-0.0);
  z[n - 2] = from_double<T>(-0.0);
  EXPECT_EQ(run_index(s, reduce_op::argmax, z), 0);
  EXPECT_EQ(run_index(s, reduce_op::argmin, z), 0);
}

TEST_P(ReduceOps, ArgExtremesInsideVectors) {
  PK_TEST_STREAM(GetParam(), s);
  arg_vector_cases<bf16>(s);
  arg_vector_cases<float>(s);
  arg_vector_cases<double>(s);
}

TEST_P(ReduceOps, EmptyInputGivesTheIdentity) {
  PK_TEST_STREAM(GetParam(), s);
  const std::vector<float> e;
  EXPECT_TRUE(same(run_value(s, reduce_op::sum, e), 0.0f));
  EXPECT_TRUE(same(run_value(s, reduce_op::prod, e), 1.0f));
  EXPECT_TRUE(same(run_value(s, reduce_op::min, e), std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(same(run_value(s, reduce_op::max, e), -std::numeric_limits<float>::infinity()));
  EXPECT_EQ(run_index(s, reduce_op::argmin, e), -1);
  EXPECT_EQ(run_index(s, reduce_op::argmax, e), -1);
  const std::vector<std::int32_t> ei;
  EXPECT_EQ(run_value(s, reduce_op::min, ei), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(run_value(s, reduce_op::max, ei), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(run_value(s, reduce_op::prod, ei), 1);
}

TEST_P(ReduceOps, RandomDataWithinHighamBoundAndRunToRunBits) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  std::mt19937_64 rng(sd);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> hd(200003);
  std::vector<bf16> hb(hd.size());
  for (std::size_t i = 0; i < hd.size(); ++i) {
    hd[i] = d(rng) * std::ldexp(1.0, static_cast<int>(i % 17) - 8);
    hb[i] = bf16(static_cast<float>(hd[i]));
  }
  // Forward error of any summation order <= (n-1) u sum|x| (Higham 2002, eq. 4.4), u of the
  // accumulator; bf16 adds the final rounding to bf16 (relative 2^-8).
  const double n1 = static_cast<double>(hd.size() - 1);
  double ref = 0, abs_sum = 0, ref_b = 0, abs_b = 0;
  for (std::size_t i = 0; i < hd.size(); ++i) {
    ref += hd[i];
    abs_sum += std::fabs(hd[i]);
    ref_b += to_double(hb[i]);
    abs_b += std::fabs(to_double(hb[i]));
  }
  const double a = run_value(s, reduce_op::sum, hd);
  EXPECT_LE(std::fabs(a - ref), n1 * std::ldexp(1.0, -53) * abs_sum);
  const double b = to_double(run_value(s, reduce_op::sum, hb));
  EXPECT_LE(std::fabs(b - ref_b), n1 * std::ldexp(1.0, -24) * abs_b + std::ldexp(std::fabs(ref_b), -8));
  EXPECT_TRUE(same(run_value(s, reduce_op::sum, hd), a));
  EXPECT_TRUE(same(to_double(run_value(s, reduce_op::sum, hb)), b));
}

template <class T>
void mean_var_case(const stream& s, const std::vector<T>& h, int correction, double tol_rel, const char* what) {
  SCOPED_TRACE(what);
  using A = typename numeric_traits<T>::accum_type;
  auto in = upload_padded(s, h);
  device_buffer<A> m, v;
  ASSERT_TRUE(m.allocate(s, 1));
  ASSERT_TRUE(v.allocate(s, 1));
  ASSERT_TRUE(m.upload({poison<A>()}));
  ASSERT_TRUE(v.upload({poison<A>()}));
  const status st = reduce_mean_var(s, reduction::dtype_of<T>, in.data(), static_cast<std::int64_t>(h.size()),
                                    m.data(), v.data(), correction);
  ASSERT_TRUE(st) << st.to_string();
  ASSERT_TRUE(synchronize(s));
  std::vector<A> rm, rv;
  ASSERT_TRUE(m.download(rm));
  ASSERT_TRUE(v.download(rv));
  // Two-pass reference in double.
  double mean = 0;
  for (T x : h) mean += to_double(x);
  mean /= static_cast<double>(h.size());
  double m2 = 0;
  for (T x : h) m2 += (to_double(x) - mean) * (to_double(x) - mean);
  const double var = m2 / static_cast<double>(static_cast<std::int64_t>(h.size()) - correction);
  // Welford/Chan (Chan, Golub, LeVeque 1983): relative error of the variance <= c n u kappa with
  // kappa = sqrt(1 + mean^2 / var) the condition number; the rule uses c = 2 (tol_rel = 2 n u).
  const double kappa = std::sqrt(1.0 + mean * mean / var);
  EXPECT_LE(std::fabs(static_cast<double>(rv[0]) - var), tol_rel * kappa * var) << "var " << var << " got " << rv[0];
  // The mean: (n-1) u sum|x| / n (Higham) with u of A.
  double abs_mean = 0;
  for (T x : h) abs_mean += std::fabs(to_double(x));
  abs_mean /= static_cast<double>(h.size());
  EXPECT_LE(std::fabs(static_cast<double>(rm[0]) - mean), tol_rel * abs_mean);
}

TEST_P(ReduceOps, MeanVarianceWelfordStableWithLargeOffset) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  std::mt19937_64 rng(sd);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  const std::size_t n = 100003;
  const double u64 = std::ldexp(1.0, -53), u32 = std::ldexp(1.0, -24);
  std::vector<double> off(n);
  for (auto& x : off) x = 1e8 + d(rng);  // offset 1e8, spread 1: a naive sum of squares loses everything
  mean_var_case(s, off, 0, 2.0 * n * u64, "f64 offset 1e8");
  mean_var_case(s, off, 1, 2.0 * n * u64, "f64 offset 1e8, correction 1");
  std::vector<float> offf(n);
  for (auto& x : offf) x = static_cast<float>(1e4 + d(rng));  // fp32 keeps 2^-10 resolution at 1e4
  mean_var_case(s, offf, 0, 2.0 * n * u32, "f32 offset 1e4");
  std::vector<bf16> b(4099);
  for (auto& x : b) x = bf16(static_cast<float>(d(rng)));
  mean_var_case(s, b, 0, 2.0 * 4099 * u32, "bf16");
  // One element with correction 1: NaN variance.
  auto one = upload_padded(s, std::vector<float>{2.5f});
  device_buffer<float> m, v;
  ASSERT_TRUE(m.allocate(s, 1));
  ASSERT_TRUE(v.allocate(s, 1));
  ASSERT_TRUE(reduce_mean_var(s, dtype::f32, one.data(), 1, m.data(), v.data(), 1));
  std::vector<float> rm, rv;
  ASSERT_TRUE(m.download(rm));
  ASSERT_TRUE(v.download(rv));
  EXPECT_EQ(rm[0], 2.5f);
  EXPECT_TRUE(std::isnan(rv[0]));
}

TEST_P(ReduceOps, BadArgumentsNameTheArgument) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<float> buf;
  ASSERT_TRUE(buf.allocate(s, 4));
  const auto expect = [](const status& st, errc code, const char* needle) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  expect(reduce(s, reduce_op::sum, dtype::f32, nullptr, 4, buf.data()), errc::invalid_argument, "in:");
  expect(reduce(s, reduce_op::max, dtype::f32, buf.data(), 4, nullptr), errc::invalid_argument, "out:");
  expect(reduce(s, reduce_op::min, dtype::f32, buf.data(), -2, buf.data()), errc::invalid_argument, "n = -2");
  expect(reduce(stream{}, reduce_op::sum, dtype::f32, buf.data(), 1, buf.data()), errc::invalid_argument, "stream");
  expect(reduce(s, reduce_op::sum, dtype::i8, buf.data(), 4, buf.data()), errc::unsupported, "type i8");
  expect(reduce(s, reduce_op::prod, dtype::u8, buf.data(), 4, buf.data()), errc::unsupported, "type u8");
  expect(reduce(s, reduce_op::sum, static_cast<dtype>(99), buf.data(), 4, buf.data()), errc::invalid_argument, "type");
  reduce_options o;
  o.policy = "reduce_b17";
  expect(reduce(s, reduce_op::sum, dtype::f32, buf.data(), 4, buf.data(), o), errc::invalid_argument,
         "reduce: policy reduce_b17 is not a compiled candidate");
  o.policy = "seg_b256_g32_u4";  // a candidate of another entry point
  expect(reduce(s, reduce_op::sum, dtype::f32, buf.data(), 4, buf.data(), o), errc::invalid_argument, "candidates: reduce_b");
  o = {};
  o.reproducible = true;
  expect(reduce(s, reduce_op::max, dtype::f32, buf.data(), 4, buf.data(), o), errc::unsupported, "reproducible");
  expect(reduce(s, reduce_op::sum, dtype::bf16, buf.data(), 4, buf.data(), o), errc::unsupported, "reproducible");
  expect(reduce_mean_var(s, dtype::i32, buf.data(), 4, buf.data(), buf.data()), errc::unsupported, "type i32");
  expect(reduce_mean_var(s, dtype::f32, buf.data(), 4, nullptr, buf.data()), errc::invalid_argument, "mean:");
  expect(reduce_mean_var(s, dtype::f32, buf.data(), 4, buf.data(), nullptr), errc::invalid_argument, "var:");
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceOps, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
