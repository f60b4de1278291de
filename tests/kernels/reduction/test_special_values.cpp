// The documented special values of the row operations and of mean/variance (norm.hpp, reduce.hpp),
// each stated exactly, on every backend: +-inf, NaN (also where a NaN is the only value one thread
// of the row group sees), -0, subnormals, constant and zero rows with eps = 0, empty rows; and fp32
// mean/variance of data with a large offset (device-wide and per row, layer_norm's statistics).
//
// Tolerances of the large-offset cases, by rule: the statistics are computed on x - K (K the first
// element of the input or row: exact in fp32 for data within a factor of 2 of K), with Welford per
// thread and Chan's merge across the group (streamed rows and device-wide), or two exact passes over a
// row held on chip (tighter). With u the unit roundoff of the accumulator and
// kappa = sqrt(1 + (mean - K)^2 / var) the condition of the shifted data, the rule is
//   |var - ref| <= 8 (log2 n + 1) u kappa var,   |mean - ref| <= u |ref| + 8 (log2 n + 1) u (|ref - K| + sd).
#include "reduce_test_util.hpp"

#include <bit>

namespace pk::test {
namespace {
using namespace red;

class SpecialValues : public ::testing::TestWithParam<backend_param> {};

enum class row_fn { softmax, log_softmax, layer_norm, rms_norm };

// The row policy the row operations run under (null: the planner's). Every row test runs under the
// planner's choice and under a streaming candidate of each group kind (a warp, a block) forced, so that
// both strategies meet every special value; test_norm.cpp runs every candidate, each on-chip one at its
// capacity.
const char* forced_row_policy = nullptr;

template <class F>
void for_each_row_policy(F&& f) {
  forced_row_policy = nullptr;
  f();
  bool warp_done = false, block_done = false;
  for (const reduction::row_policy& p : reduction::row_candidates) {
    if (reduction::on_chip(p) || ::testing::Test::HasFatalFailure()) continue;
    bool& done = p.group_threads < p.block_threads ? warp_done : block_done;
    if (done) continue;
    done = true;
    const std::string name = reduction::name_of(p);
    SCOPED_TRACE("policy " + name);
    forced_row_policy = name.c_str();
    f();
    forced_row_policy = nullptr;
  }
}

//! Runs a row operation under forced_row_policy.
template <class Call>
status run_row_call(rows_desc& d, Call&& call) {
  d.policy = forced_row_policy;
  return call();
}

template <class T>
struct row_result {
  std::vector<T> y;
  std::vector<float> mean, rstd;
};

//! Runs `fn` on rows x[rows, cols] (contiguous) with weight w and bias b (empty: none); y, mean and
//! rstd are poisoned first and every element of them must be written.
template <class T>
row_result<T> run_rows(const stream& s, row_fn fn, std::int64_t rows, std::int64_t cols, const std::vector<T>& x,
                       const std::vector<T>& w, const std::vector<T>& b, double eps) {
  row_result<T> r;
  auto xin = upload_padded(s, x);
  auto win = upload_padded(s, w.empty() ? std::vector<T>(1) : w);
  auto bin = upload_padded(s, b.empty() ? std::vector<T>(1) : b);
  device_buffer<T> y;
  device_buffer<float> mean, rstd;
  EXPECT_TRUE(y.allocate(s, x.size()));
  EXPECT_TRUE(y.upload(std::vector<T>(x.size(), poison<T>())));
  EXPECT_TRUE(mean.allocate(s, static_cast<std::size_t>(rows)));
  EXPECT_TRUE(rstd.allocate(s, static_cast<std::size_t>(rows)));
  EXPECT_TRUE(mean.upload(std::vector<float>(static_cast<std::size_t>(rows), -1234.5f)));
  EXPECT_TRUE(rstd.upload(std::vector<float>(static_cast<std::size_t>(rows), -1234.5f)));
  rows_desc d{reduction::dtype_of<T>, xin.data(), y.data(), rows, cols};
  norm_args a;
  a.rows = d;
  a.weight = win.data();
  a.bias = b.empty() ? nullptr : bin.data();
  a.eps = eps;
  a.mean = fn == row_fn::layer_norm ? mean.data() : nullptr;
  a.rstd = rstd.data();
  const status st = run_row_call(a.rows, [&] {
    d.policy = a.rows.policy;
    switch (fn) {
      case row_fn::softmax: return softmax(s, d);
      case row_fn::log_softmax: return log_softmax(s, d);
      case row_fn::layer_norm: return layer_norm(s, a);
      case row_fn::rms_norm: return rms_norm(s, a);
    }
    return status{};
  });
  EXPECT_TRUE(st) << st.to_string();
  EXPECT_TRUE(synchronize(s));
  EXPECT_TRUE(y.download(r.y));
  EXPECT_TRUE(mean.download(r.mean));
  EXPECT_TRUE(rstd.download(r.rstd));
  r.y.resize(x.size());
  return r;
}

template <class T>
T val(double d) {
  return from_double<T>(d);
}

//! softmax and log_softmax: a row holding +inf or NaN is NaN everywhere (whichever thread of the row
//! group holds it, whatever the other values are: -inf included).
template <class T>
void softmax_non_finite(const stream& s) {
  const double inf = INFINITY, nan = NAN;
  for (std::int64_t cols : {1, 2, 3, 37, 1000}) {
    for (std::int64_t p : {std::int64_t{0}, cols / 2, cols - 1}) {
      SCOPED_TRACE(std::string(reduction::to_string(reduction::dtype_of<T>)) + " cols " + std::to_string(cols) +
                   " position " + std::to_string(p));
      // Rows: finite with +inf at p; finite with NaN at p; -inf with NaN at p; -inf with +inf at p;
      // finite with NaN at p and +inf at 0.
      const std::int64_t rows = 5;
      std::vector<T> x(static_cast<std::size_t>(rows * cols));
      for (std::int64_t j = 0; j < cols; ++j) {
        const double f = 0.25 * static_cast<double>(j % 7) - 0.5;
        x[static_cast<std::size_t>(j)] = val<T>(j == p ? inf : f);
        x[static_cast<std::size_t>(cols + j)] = val<T>(j == p ? nan : f);
        x[static_cast<std::size_t>(2 * cols + j)] = val<T>(j == p ? nan : -inf);
        x[static_cast<std::size_t>(3 * cols + j)] = val<T>(j == p ? inf : -inf);
        x[static_cast<std::size_t>(4 * cols + j)] = val<T>(j == p ? nan : j == 0 ? inf : f);
      }
      for (row_fn fn : {row_fn::softmax, row_fn::log_softmax}) {
        const auto r = run_rows<T>(s, fn, rows, cols, x, {}, {}, 0);
        for (std::size_t i = 0; i < x.size(); ++i)
          ASSERT_TRUE(is_nan(r.y[i])) << (fn == row_fn::softmax ? "softmax" : "log_softmax") << " row "
                                      << static_cast<std::int64_t>(i) / cols << " col "
                                      << static_cast<std::int64_t>(i) % cols << " = " << show(r.y[i]);
      }
    }
  }
}

//! -inf among finite values: softmax exactly 0, log_softmax exactly -inf there; an all -inf row: 0 and
//! -inf; a row of -0 (or of subnormals) is uniform.
template <class T>
void softmax_signed_zero_and_subnormal(const stream& s) {
  const std::int64_t cols = 37, rows = 3;
  const double sub = to_double(numeric_traits<T>::min_normal()) / 4;  // a subnormal of T
  std::vector<T> x(static_cast<std::size_t>(rows * cols));
  for (std::int64_t j = 0; j < cols; ++j) {
    x[static_cast<std::size_t>(j)] = val<T>(-0.0);
    x[static_cast<std::size_t>(cols + j)] = val<T>(j % 2 ? sub : -sub);
    x[static_cast<std::size_t>(2 * cols + j)] = val<T>(j == 5 ? -INFINITY : 0.5);
  }
  SCOPED_TRACE(reduction::to_string(reduction::dtype_of<T>));
  const double u = std::is_same_v<T, double> ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double ut = std::ldexp(1.0, -numeric_traits<T>::digits);
  const auto sm = run_rows<T>(s, row_fn::softmax, rows, cols, x, {}, {}, 0);
  const auto ls = run_rows<T>(s, row_fn::log_softmax, rows, cols, x, {}, {}, 0);
  // Uniform rows: y = 1/cols (sum of cols ones is exact; exp(0) = 1; one division), log y = -log(cols).
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * cols + j);
      EXPECT_LE(std::fabs(to_double(sm.y[k]) - 1.0 / cols), (4 * u + ut) / cols) << "row " << i << " col " << j;
      EXPECT_LE(std::fabs(to_double(ls.y[k]) + std::log(static_cast<double>(cols))), 8 * u * std::log(cols) + 4 * ut)
          << "row " << i << " col " << j;
    }
  EXPECT_EQ(to_double(sm.y[static_cast<std::size_t>(2 * cols + 5)]), 0.0);
  EXPECT_EQ(to_double(ls.y[static_cast<std::size_t>(2 * cols + 5)]), -INFINITY);
}

TEST_P(SpecialValues, SoftmaxRowsWithInfinitiesNaNSignedZerosSubnormals) {
  PK_TEST_STREAM(GetParam(), s);
  for_each_row_policy([&] {
    softmax_non_finite<float>(s);
    softmax_non_finite<double>(s);
    softmax_non_finite<bf16>(s);
    softmax_non_finite<fp16>(s);
    softmax_signed_zero_and_subnormal<float>(s);
    softmax_signed_zero_and_subnormal<double>(s);
    softmax_signed_zero_and_subnormal<bf16>(s);
  });
}

//! eps = 0: a constant row normalizes to exactly the bias (0 without bias) with rstd = +inf; a zero
//! row under rms_norm gives 0 with rstd = +inf. Constants include -0, a subnormal and a large value.
template <class T>
void norms_eps_zero(const stream& s, std::uint64_t sd) {
  SCOPED_TRACE(reduction::to_string(reduction::dtype_of<T>));
  const std::vector<double> constants = {0.375, -0.0, 0.0, to_double(numeric_traits<T>::min_normal()) / 8,
                                         to_double(numeric_traits<T>::max()) / 4, -3.0};
  for (std::int64_t cols : {1, 3, 37, 1000}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const std::int64_t rows = static_cast<std::int64_t>(constants.size());
    std::vector<T> x(static_cast<std::size_t>(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) x[static_cast<std::size_t>(i * cols + j)] = val<T>(constants[static_cast<std::size_t>(i)]);
    std::mt19937_64 rng(sd + static_cast<std::uint64_t>(cols));
    std::normal_distribution<double> d(0.0, 1.0);
    std::vector<T> w(static_cast<std::size_t>(cols)), b(static_cast<std::size_t>(cols));
    for (auto& v : w) v = val<T>(d(rng));
    for (auto& v : b) v = val<T>(d(rng));
    const auto ln = run_rows<T>(s, row_fn::layer_norm, rows, cols, x, w, b, 0.0);
    const auto ln0 = run_rows<T>(s, row_fn::layer_norm, rows, cols, x, w, {}, 0.0);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t k = static_cast<std::size_t>(i * cols + j);
        ASSERT_TRUE(same(ln.y[k], b[static_cast<std::size_t>(j)]))
            << "constant " << constants[static_cast<std::size_t>(i)] << " col " << j << ": " << show(ln.y[k]);
        ASSERT_EQ(to_double(ln0.y[k]), 0.0) << "constant " << constants[static_cast<std::size_t>(i)] << " col " << j;
      }
      EXPECT_EQ(ln.rstd[static_cast<std::size_t>(i)], INFINITY) << "row " << i;
      EXPECT_EQ(static_cast<double>(ln.mean[static_cast<std::size_t>(i)]),
                static_cast<double>(static_cast<float>(constants[static_cast<std::size_t>(i)])))
          << "row " << i;
    }
    // rms_norm: rows 1 and 2 (-0 and +0) are zero rows.
    const auto rn = run_rows<T>(s, row_fn::rms_norm, rows, cols, x, w, {}, 0.0);
    for (std::int64_t i : {1, 2}) {
      for (std::int64_t j = 0; j < cols; ++j)
        ASSERT_EQ(to_double(rn.y[static_cast<std::size_t>(i * cols + j)]), 0.0) << "row " << i << " col " << j;
      EXPECT_EQ(rn.rstd[static_cast<std::size_t>(i)], INFINITY);
    }
  }
}

//! NaN and +-inf in norm rows: layer_norm gives NaN everywhere (the mean and variance are NaN);
//! rms_norm gives NaN everywhere for a NaN, and for +-inf rstd = 0: y = x * 0 * w (0 where x is
//! finite, NaN at the infinity).
template <class T>
void norms_non_finite(const stream& s) {
  SCOPED_TRACE(reduction::to_string(reduction::dtype_of<T>));
  for (std::int64_t cols : {1, 3, 37, 1000}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const std::int64_t p = cols / 2, rows = 4;
    std::vector<T> x(static_cast<std::size_t>(rows * cols)), w(static_cast<std::size_t>(cols), val<T>(1.5));
    std::vector<T> b(static_cast<std::size_t>(cols), val<T>(-0.25));
    const double specials[rows] = {NAN, INFINITY, -INFINITY, NAN};
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        x[static_cast<std::size_t>(i * cols + j)] =
            val<T>(j == p ? specials[i] : (i == 3 ? -INFINITY : 0.5 * static_cast<double>(j % 5) - 1.0));
    const auto ln = run_rows<T>(s, row_fn::layer_norm, rows, cols, x, w, b, 1e-5);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_TRUE(is_nan(ln.y[k])) << "layer_norm element " << k;
    for (std::int64_t i = 0; i < rows; ++i) {
      EXPECT_TRUE(std::isnan(ln.mean[static_cast<std::size_t>(i)])) << "row " << i;
      EXPECT_TRUE(std::isnan(ln.rstd[static_cast<std::size_t>(i)])) << "row " << i;
    }
    const auto rn = run_rows<T>(s, row_fn::rms_norm, rows, cols, x, w, {}, 1e-5);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t k = static_cast<std::size_t>(i * cols + j);
        const double xv = to_double(x[k]);
        if (i == 0 || i == 3 || std::isinf(xv)) {
          ASSERT_TRUE(is_nan(rn.y[k])) << "rms_norm row " << i << " col " << j << ": " << show(rn.y[k]);
        } else {
          ASSERT_EQ(to_double(rn.y[k]), 0.0) << "rms_norm row " << i << " col " << j;
        }
      }
    EXPECT_EQ(rn.rstd[1], 0.0f);
  }
}

TEST_P(SpecialValues, NormsOfConstantZeroAndNonFiniteRows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for_each_row_policy([&] {
    norms_eps_zero<float>(s, sd);
    norms_eps_zero<double>(s, sd);
    norms_eps_zero<bf16>(s, sd);
    norms_eps_zero<fp16>(s, sd);
    norms_non_finite<float>(s);
    norms_non_finite<double>(s);
    norms_non_finite<bf16>(s);
  });
}

//! Mean and variance (device-wide and per row): NaN for both when any element is NaN or +-inf, NaN
//! for both when empty; the variance alone is NaN when n <= correction.
template <class T>
void mean_var_special(const stream& s) {
  using A = typename numeric_traits<T>::accum_type;
  SCOPED_TRACE(reduction::to_string(reduction::dtype_of<T>));
  const double inf = INFINITY, nan = NAN;
  const std::vector<std::vector<double>> cases = {
      {1, 2, nan, 4}, {1, 2, inf, 4}, {inf, 2, 3}, {-inf, 1}, {inf, -inf}, {inf, inf, inf}, {nan}, {}, {2.5}};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    std::vector<T> h;
    for (double v : cases[c]) h.push_back(val<T>(v));
    for (std::size_t rep = 0; rep < 3; ++rep) {  // also long inputs: the value repeated around a block
      SCOPED_TRACE("case " + std::to_string(c) + " repeat " + std::to_string(rep));
      std::vector<T> x;
      const std::size_t times = rep == 0 ? 1 : rep == 1 ? 97 : 3001;
      for (std::size_t t = 0; t < times; ++t) x.insert(x.end(), h.begin(), h.end());
      const bool finite_nonempty = !x.empty() && (c == 8);
      for (int correction : {0, 1}) {
        auto in = upload_padded(s, x);
        device_buffer<A> m, v;
        ASSERT_TRUE(m.allocate(s, 1));
        ASSERT_TRUE(v.allocate(s, 1));
        ASSERT_TRUE(m.upload({A(-1234.5)}));
        ASSERT_TRUE(v.upload({A(-1234.5)}));
        ASSERT_TRUE(reduce_mean_var(s, reduction::dtype_of<T>, in.data(), static_cast<std::int64_t>(x.size()), m.data(),
                                    v.data(), correction));
        // Per row: the same values as one row (and a second identical row).
        device_buffer<A> rm, rv;
        ASSERT_TRUE(rm.allocate(s, 2));
        ASSERT_TRUE(rv.allocate(s, 2));
        ASSERT_TRUE(rm.upload({A(-1234.5), A(-1234.5)}));
        ASSERT_TRUE(rv.upload({A(-1234.5), A(-1234.5)}));
        std::vector<T> two(x);
        two.insert(two.end(), x.begin(), x.end());
        auto in2 = upload_padded(s, two);
        rows_desc r{reduction::dtype_of<T>, in2.data(), nullptr, 2, static_cast<std::int64_t>(x.size())};
        if (x.empty()) {
          // Empty rows: x may be null, whatever the row stride (the kernel must not offset it).
          r.x = nullptr;
          r.x_row_stride = 7;
        }
        ASSERT_TRUE(run_row_call(r, [&] { return row_mean_var(s, r, rm.data(), rv.data(), correction); }));
        ASSERT_TRUE(synchronize(s));
        std::vector<A> gm, gv, grm, grv;
        ASSERT_TRUE(m.download(gm));
        ASSERT_TRUE(v.download(gv));
        ASSERT_TRUE(rm.download(grm));
        ASSERT_TRUE(rv.download(grv));
        for (const auto& [mean, var, what] : {std::tuple{gm[0], gv[0], "device-wide"}, std::tuple{grm[0], grv[0], "row 0"},
                                              std::tuple{grm[1], grv[1], "row 1"}}) {
          SCOPED_TRACE(std::string(what) + " correction " + std::to_string(correction));
          if (finite_nonempty) {
            EXPECT_EQ(static_cast<double>(mean), 2.5);
            if (static_cast<std::int64_t>(x.size()) > correction) {
              EXPECT_EQ(static_cast<double>(var), 0.0);
            } else {
              EXPECT_TRUE(std::isnan(var)) << var;
            }
          } else {
            EXPECT_TRUE(std::isnan(mean)) << mean;
            EXPECT_TRUE(std::isnan(var)) << var;
          }
        }
      }
      if (x.empty()) break;
    }
  }
}

TEST_P(SpecialValues, MeanVarianceOfNonFiniteAndEmptyInputs) {
  PK_TEST_STREAM(GetParam(), s);
  for_each_row_policy([&] {
    mean_var_special<float>(s);
    mean_var_special<double>(s);
    mean_var_special<bf16>(s);
  });
}

//! Reference statistics of x[0, n) in double and the large-offset tolerances of the file's rule.
struct ref_stats {
  double mean, var, tol_mean, tol_var, tol_mean_shift;
};
ref_stats reference_stats(const float* x, std::int64_t n, int correction) {
  double mean = 0;
  for (std::int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  double m2 = 0;
  for (std::int64_t i = 0; i < n; ++i) m2 += (x[i] - mean) * (x[i] - mean);
  const double var = m2 / static_cast<double>(n - correction);
  const double u = std::ldexp(1.0, -24), k = x[0];
  const double c = 8 * (std::log2(static_cast<double>(n)) + 1) * u;
  const double kappa = std::sqrt(1 + (mean - k) * (mean - k) / var);
  const double shift = c * (std::fabs(mean - k) + std::sqrt(var));
  return {mean, var, u * std::fabs(mean) + shift, c * kappa * var, shift};
}

std::vector<float> offset_data(std::size_t n, std::uint64_t sd, double offset, double spread) {
  std::mt19937_64 rng(sd);
  std::uniform_real_distribution<double> d(-spread, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(offset + d(rng));
  return v;
}

TEST_P(SpecialValues, Fp32MeanVarianceWithLargeOffset) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  // fp32 near 1e8 (spacing 8) with a spread of +-100, and near 1e4 with a spread of +-1.
  for (const auto& [offset, spread] : {std::pair{1e8, 100.0}, std::pair{1e4, 1.0}, std::pair{-3e7, 40.0}}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    for (std::int64_t n : {std::int64_t{1000}, std::int64_t{100003}, std::int64_t{1} << 20}) {
      SCOPED_TRACE("n " + std::to_string(n));
      const auto h = offset_data(static_cast<std::size_t>(n), sd + static_cast<std::uint64_t>(n), offset, spread);
      auto in = upload_padded(s, h);
      device_buffer<float> m, v;
      ASSERT_TRUE(m.allocate(s, 1));
      ASSERT_TRUE(v.allocate(s, 1));
      for (int correction : {0, 1}) {
        ASSERT_TRUE(reduce_mean_var(s, dtype::f32, in.data(), n, m.data(), v.data(), correction));
        ASSERT_TRUE(synchronize(s));
        std::vector<float> gm, gv;
        ASSERT_TRUE(m.download(gm));
        ASSERT_TRUE(v.download(gv));
        const ref_stats r = reference_stats(h.data(), n, correction);
        EXPECT_LE(std::fabs(gv[0] - r.var), r.tol_var) << "var " << r.var << " got " << gv[0];
        EXPECT_LE(std::fabs(gm[0] - r.mean), r.tol_mean) << "mean " << r.mean << " got " << gm[0];
      }
    }
    // Per row (row_mean_var) and layer_norm's statistics and output, under every row policy.
    for_each_row_policy([&] {
      const std::int64_t rows = 6, cols = 3001;
      const auto h = offset_data(static_cast<std::size_t>(rows * cols), sd + 1, offset, spread);
      auto in = upload_padded(s, h);
      device_buffer<float> m, v;
      ASSERT_TRUE(m.allocate(s, rows));
      ASSERT_TRUE(v.allocate(s, rows));
      rows_desc r{dtype::f32, in.data(), nullptr, rows, cols};
      ASSERT_TRUE(run_row_call(r, [&] { return row_mean_var(s, r, m.data(), v.data(), 0); }));
      ASSERT_TRUE(synchronize(s));
      std::vector<float> gm, gv;
      ASSERT_TRUE(m.download(gm));
      ASSERT_TRUE(v.download(gv));
      std::vector<float> w(static_cast<std::size_t>(cols), 1.25f), b(static_cast<std::size_t>(cols), 0.5f);
      const auto ln = run_rows<float>(s, row_fn::layer_norm, rows, cols, h, w, b, 1e-5);
      for (std::int64_t i = 0; i < rows; ++i) {
        const float* x = h.data() + i * cols;
        const ref_stats st = reference_stats(x, cols, 0);
        EXPECT_LE(std::fabs(gv[static_cast<std::size_t>(i)] - st.var), st.tol_var) << "row " << i;
        EXPECT_LE(std::fabs(gm[static_cast<std::size_t>(i)] - st.mean), st.tol_mean) << "row " << i;
        const double rstd = 1 / std::sqrt(st.var + 1e-5), u = std::ldexp(1.0, -24);
        // rstd: half the variance's relative error plus the square root and division (2 u).
        const double rel_rstd = st.tol_var / st.var / 2 + 2 * u;
        EXPECT_LE(std::fabs(ln.rstd[static_cast<std::size_t>(i)] - rstd), rel_rstd * rstd) << "row " << i;
        EXPECT_LE(std::fabs(ln.mean[static_cast<std::size_t>(i)] - st.mean), st.tol_mean) << "row " << i;
        for (std::int64_t j = 0; j < cols; ++j) {
          const double xhat = (x[j] - st.mean) * rstd, ref = 1.25 * xhat + 0.5;
          // (x - K) exact, minus the shifted mean (its error, plus u |x - mean|); times rstd; w, b.
          const double tol = 1.25 * rstd * (st.tol_mean_shift + 2 * u * std::fabs(x[j] - st.mean)) +
                             1.25 * std::fabs(xhat) * (rel_rstd + 2 * u) + 4 * u * 0.5 + std::fabs(ref) * u;
          ASSERT_LE(std::fabs(ln.y[static_cast<std::size_t>(i * cols + j)] - ref), tol) << "row " << i << " col " << j;
        }
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SpecialValues, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
