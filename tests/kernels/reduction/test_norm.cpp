// Row operations on every backend: softmax, log_softmax, layer_norm, rms_norm, row mean/variance for
// f32, f64, f16, bf16 at ragged widths, under every per-row policy; padded row strides with poisoned
// padding (nothing outside the rows is written); all -inf rows, NaN rows, constant rows; bad input.
//
// References in double. Tolerances by rule, with u the unit roundoff of the accumulator (2^-24 fp32,
// 2^-53 fp64) and uT that of the output type (half an ulp: 2^-24 f32, 2^-11 f16, 2^-8 bf16):
//  - softmax y = exp(x - m) / s: the row sum s has relative error <= (cols - 1) u (Higham, positive
//    terms), exp and the division a few ulp each, and x - m is rounded (relative u of |x - m| in the
//    exponent): |y - ref| <= ref ((cols + 8 + |x - m|) u + uT) + min_normal(T).
//  - log_softmax y = x - (m + log s): |y - ref| <= (cols + 8) u + 4 (|m| + |log s| + |y|) u + |y| uT.
//  - layer_norm y = (x - mean) rstd w + b: the mean has absolute error <= cols u mean|x| and the variance
//    relative error <= (2 cols + 8) u (Welford/Chan on unshifted data of condition ~1); first order:
//    |y - ref| <= |w| rstd (cols u mean|x| + 8 u |x - mean|) + |w xhat| (cols + 8) u + 4 u |b| + |y| uT.
//  - rms_norm y = x rstd w: rstd relative error <= (cols + 8) u, so |y - ref| <= |y| ((cols + 10) u + uT).
//  - every rule adds half the subnormal spacing of T (min_normal(T) uT) for results that round there; 16-bit
//    softmax adds 2^-126, below which its exponentials flush to 0 (bf16's subnormals).
#include "reduce_test_util.hpp"

#include <pk/archdb/device.hpp>
#include <pk/archdb/family_plan.hpp>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace pk::test {
namespace {
using namespace red;

class Norm : public ::testing::TestWithParam<backend_param> {};

template <class T>
double unit_out() {
  return std::ldexp(1.0, -numeric_traits<T>::digits);
}
template <class T>
double unit_acc() {
  return std::is_same_v<T, double> ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
}

struct shape {
  std::int64_t rows, cols;
};
// Widths around warp and vector boundaries, block sizes, primes; strides padded by 3 elements so
// that rows start misaligned.
const std::vector<shape> shapes = {{1, 1}, {3, 31}, {5, 32}, {4, 33}, {2, 257}, {3, 1025}, {2, 4099}, {33, 8}};

enum class which { softmax, log_softmax, layer_norm, layer_norm_nobias, rms_norm };
const char* name(which w) {
  switch (w) {
    case which::softmax: return "softmax";
    case which::log_softmax: return "log_softmax";
    case which::layer_norm: return "layer_norm";
    case which::layer_norm_nobias: return "layer_norm (no bias)";
    case which::rms_norm: return "rms_norm";
  }
  return "?";
}

//! Row stride: padded by 3 elements (rows start misaligned: element loads), or rounded up to 16 bytes
//! (`aligned`: every row start aligned, the on-chip kernel's vector path).
template <class T>
std::int64_t row_stride(std::int64_t cols, bool aligned) {
  constexpr std::int64_t v = 16 / sizeof(T);
  return aligned ? (cols + v - 1) / v * v : cols + 3;
}

template <class T>
void check_rows(const stream& s, which w, shape sh, const std::vector<T>& x, const std::vector<T>& wt,
                const std::vector<T>& bs, int policy = -1, bool aligned = false) {
  const std::int64_t stride = row_stride<T>(sh.cols, aligned);
  const std::size_t total = static_cast<std::size_t>(sh.rows * stride);
  SCOPED_TRACE(std::string(name(w)) + " " + reduction::to_string(reduction::dtype_of<T>) + " " +
               std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " policy " + std::to_string(policy) +
               (aligned ? " aligned rows" : ""));
  auto xin = upload_padded(s, x);
  auto win = upload_padded(s, wt);
  auto bin = upload_padded(s, bs);
  device_buffer<T> y;
  ASSERT_TRUE(y.allocate(s, total));
  ASSERT_TRUE(y.upload(std::vector<T>(total, poison<T>())));
  device_buffer<float> mean, rstd;
  ASSERT_TRUE(mean.allocate(s, static_cast<std::size_t>(sh.rows)));
  ASSERT_TRUE(rstd.allocate(s, static_cast<std::size_t>(sh.rows)));
  rows_desc r;
  r.type = reduction::dtype_of<T>;
  r.x = xin.data();
  r.y = y.data();
  r.rows = sh.rows;
  r.cols = sh.cols;
  r.x_row_stride = stride;
  r.y_row_stride = stride;
  const std::string forced = policy < 0 ? "" : reduction::name_of(reduction::row_candidates[static_cast<std::size_t>(policy)]);
  if (policy >= 0) r.policy = forced.c_str();
  norm_args a;
  a.rows = r;
  a.weight = win.data();
  a.bias = w == which::layer_norm ? bin.data() : nullptr;
  a.eps = 1e-5;
  a.mean = w == which::rms_norm ? nullptr : mean.data();
  a.rstd = rstd.data();
  status st;
  switch (w) {
    case which::softmax: st = softmax(s, r); break;
    case which::log_softmax: st = log_softmax(s, r); break;
    case which::layer_norm:
    case which::layer_norm_nobias: st = layer_norm(s, a); break;
    case which::rms_norm: st = rms_norm(s, a); break;
  }
  if (policy >= 0) {
    // A candidate the planner rules out for the device (a staged one without asynchronous copies) or for the
    // operation (16-bit layer_norm on the 128-thread block) is refused with the planner's reason; a forced
    // on-chip candidate holds rows up to its capacity and refuses wider ones, naming it.
    const reduction::row_policy& p = reduction::row_candidates[static_cast<std::size_t>(policy)];
    const reduction::row_op op = w == which::softmax       ? reduction::row_op::softmax
                                 : w == which::log_softmax ? reduction::row_op::log_softmax
                                 : w == which::rms_norm    ? reduction::row_op::rms_norm
                                                           : reduction::row_op::layer_norm;
    const archdb::plan pl = reduction::plan_rows(s.device(), op, sh.rows, sh.cols, static_cast<int>(sizeof(T)));
    const archdb::plan::considered& c = pl.all[static_cast<std::size_t>(policy)];
    const bool holds = !reduction::on_chip(p) || sh.cols <= reduction::row_capacity(p, static_cast<int>(sizeof(T)));
    ASSERT_TRUE(holds || !c.fits) << "the planner admits a row wider than " << reduction::name_of(p) << " holds";
    if (!c.fits) {
      // Too wide where nothing else rules it out: the capacity is the reason given.
      if (!holds && c.reason.find("stag") == std::string::npos)
        ASSERT_NE(st.message().find("on chip"), std::string::npos) << st.message();
      ASSERT_EQ(st.code(), errc::unsupported) << st.to_string();
      ASSERT_NE(st.message().find(c.reason.substr(0, 40)), std::string::npos) << st.message() << " / " << c.reason;
      return;
    }
  }
  ASSERT_TRUE(st) << st.to_string();
  ASSERT_TRUE(synchronize(s));
  std::vector<T> got;
  ASSERT_TRUE(y.download(got));
  std::vector<float> gm, gr;
  ASSERT_TRUE(mean.download(gm));
  ASSERT_TRUE(rstd.download(gr));
  const double u = unit_acc<T>(), ut = unit_out<T>();
  // Half the spacing of T's subnormals: the absolute rounding error of a result below min_normal.
  const double sub = to_double(numeric_traits<T>::min_normal()) * ut;
  // 16-bit softmax: the exponentials flush results below 2^-126 to 0 (term_exp in rows_agent.hpp).
  const double flushed = sizeof(T) == 2 ? std::ldexp(1.0, -126) : 0.0;
  const double n = static_cast<double>(sh.cols);
  for (std::int64_t i = 0; i < sh.rows; ++i) {
    const T* xr = x.data() + i * stride;
    double m = -INFINITY, mean_d = 0, abs_mean = 0, abs_dev = 0, ss = 0;
    bool nan = false;
    for (std::int64_t j = 0; j < sh.cols; ++j) {
      const double v = to_double(xr[j]);
      nan = nan || std::isnan(v);
      m = std::max(m, v);
      mean_d += v;
      abs_mean += std::fabs(v);
      abs_dev += std::fabs(v - to_double(xr[0]));
      ss += v * v;
    }
    mean_d /= n;
    abs_mean /= n;
    abs_dev /= n;
    // The kernels average x - x[0] (the row's first element is their Welford pivot, rows_agent.hpp) and
    // add x[0] back: n terms summed or merged err by up to about (n + 2) u times the terms' mean magnitude,
    // that of x - x[0] (up to twice that of x: a layer_norm f32 row of 8 erred 6.97e-7 where n u mean|x|
    // + 2^-24 |mean| allowed 6.65e-7, seed 20522162199274), and the result is rounded to float.
    const double mean_err = (n + 2) * u * std::max(abs_mean, abs_dev) + std::ldexp(std::fabs(mean_d), -24);
    double var = 0, se = 0;
    for (std::int64_t j = 0; j < sh.cols; ++j) {
      const double v = to_double(xr[j]);
      var += (v - mean_d) * (v - mean_d);
      if (m != -INFINITY) se += std::exp(v - m);
    }
    var /= n;
    const double rs_ln = 1.0 / std::sqrt(var + 1e-5), rs_rms = 1.0 / std::sqrt(ss / n + 1e-5);
    for (std::int64_t j = 0; j < stride; ++j) {
      const T g = got[static_cast<std::size_t>(i * stride + j)];
      if (j >= sh.cols) {
        ASSERT_TRUE(is_nan(g)) << "row " << i << ": wrote into the stride padding at " << j;
        continue;
      }
      const double v = to_double(xr[j]), gv = to_double(g);
      double ref = 0, tol = 0;
      switch (w) {
        case which::softmax:
          ref = m == -INFINITY ? 0.0 : std::exp(v - m) / se;
          tol = m == -INFINITY || ref == 0 ? sub : ref * ((n + 8 + std::fabs(v - m)) * u + ut) + sub + flushed;
          break;
        case which::log_softmax:
          ref = m == -INFINITY ? -INFINITY : v - m - std::log(se);
          tol = (n + 8) * u + 4 * (std::fabs(m) + std::fabs(std::log(se)) + std::fabs(ref)) * u + std::fabs(ref) * ut;
          if (m == -INFINITY) tol = 0;
          break;
        case which::layer_norm:
        case which::layer_norm_nobias: {
          const double wj = to_double(wt[static_cast<std::size_t>(j)]);
          const double bj = w == which::layer_norm ? to_double(bs[static_cast<std::size_t>(j)]) : 0.0;
          const double xhat = (v - mean_d) * rs_ln;
          ref = xhat * wj + bj;
          tol = std::fabs(wj) * rs_ln * (mean_err + 8 * u * std::fabs(v - mean_d)) +
                std::fabs(wj * xhat) * (n + 8) * u + 4 * u * std::fabs(bj) + std::fabs(ref) * ut;
          break;
        }
        case which::rms_norm: {
          const double wj = to_double(wt[static_cast<std::size_t>(j)]);
          ref = v * rs_rms * wj;
          tol = std::fabs(ref) * ((n + 10) * u + ut);
          break;
        }
      }
      if (w != which::softmax) tol += sub;
      if (nan || std::isnan(ref)) {
        ASSERT_TRUE(is_nan(g)) << "row " << i << " col " << j << ": a NaN row must give NaN";
      } else if (std::isinf(ref)) {
        ASSERT_EQ(gv, ref) << "row " << i << " col " << j;
      } else {
        ASSERT_LE(std::fabs(gv - ref), tol) << "row " << i << " col " << j << " got " << gv << " want " << ref;
      }
    }
    if (!nan && std::isfinite(mean_d) && (w == which::layer_norm || w == which::layer_norm_nobias)) {
      EXPECT_LE(std::fabs(gm[static_cast<std::size_t>(i)] - mean_d), mean_err);
      EXPECT_LE(std::fabs(gr[static_cast<std::size_t>(i)] - rs_ln), rs_ln * ((2 * n + 8) * u + std::ldexp(1.0, -23)));
    }
    if (!nan && std::isfinite(rs_rms) && w == which::rms_norm)
      EXPECT_LE(std::fabs(gr[static_cast<std::size_t>(i)] - rs_rms), rs_rms * ((n + 10) * u + std::ldexp(1.0, -23)));
  }
}

template <class T>
std::vector<T> random_rows(shape sh, std::uint64_t sd, double scale) {
  std::mt19937_64 rng(sd);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<T> v(static_cast<std::size_t>(sh.rows * (sh.cols + 8)) + 1);
  for (auto& x : v) x = from_double<T>(d(rng));
  return v;
}

template <class T>
void all_ops_type(const stream& s, std::uint64_t sd) {
  for (const shape& sh : shapes) {
    auto x = random_rows<T>(sh, sd + static_cast<std::uint64_t>(sh.cols), 2.0);
    std::vector<T> w = random_rows<T>({1, sh.cols}, sd + 7, 1.0), b = random_rows<T>({1, sh.cols}, sd + 8, 1.0);
    for (which wh : {which::softmax, which::log_softmax, which::layer_norm, which::layer_norm_nobias, which::rms_norm})
      for (int policy = 0; policy < static_cast<int>(reduction::row_candidates.size()); ++policy)
        for (bool aligned : {false, true}) {
          check_rows<T>(s, wh, sh, x, w, b, policy, aligned);
          if (::testing::Test::HasFatalFailure()) return;
        }
  }
}

//! Each on-chip candidate at its capacity (in elements of T) minus one, at it, and one past it (refused
//! when forced; the planner then streams or takes a larger group), rows misaligned and aligned.
template <class T>
void capacity_edges(const stream& s, std::uint64_t sd) {
  for (int policy = 0; policy < static_cast<int>(reduction::row_candidates.size()); ++policy) {
    const reduction::row_policy& p = reduction::row_candidates[static_cast<std::size_t>(policy)];
    if (!reduction::on_chip(p)) continue;
    const std::int64_t cap = reduction::row_capacity(p, static_cast<int>(sizeof(T)));
    for (std::int64_t cols : {cap - 1, cap, cap + 1}) {
      const shape sh{3, cols};
      auto x = random_rows<T>(sh, sd + static_cast<std::uint64_t>(cols), 2.0);
      std::vector<T> w = random_rows<T>({1, cols}, sd + 7, 1.0), b = random_rows<T>({1, cols}, sd + 8, 1.0);
      for (which wh : {which::softmax, which::log_softmax, which::layer_norm, which::rms_norm})
        for (bool aligned : {false, true}) {
          check_rows<T>(s, wh, sh, x, w, b, policy, aligned);
          check_rows<T>(s, wh, sh, x, w, b, -1, aligned);
          if (::testing::Test::HasFatalFailure()) return;
        }
    }
  }
}

TEST_P(Norm, OnChipCapacityEdges) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  capacity_edges<float>(s, sd);
  capacity_edges<bf16>(s, sd);
  capacity_edges<double>(s, sd);
}

//! Each staged candidate the device runs, over more rows than its one wave of groups holds at once: every group
//! walks several rows through its ring (the ring wraps around at least once), with a ragged last round, a scalar
//! tail in each row, and rows misaligned (no copies staged) and aligned.
template <class T>
void staged_rings(const stream& s, std::uint64_t sd, std::int64_t cols, int& ran) {
  for (int policy = 0; policy < static_cast<int>(reduction::row_candidates.size()); ++policy) {
    const reduction::row_policy& p = reduction::row_candidates[static_cast<std::size_t>(policy)];
    if (!reduction::staged(p)) continue;
    const archdb::plan pl = reduction::plan_rows(s.device(), reduction::row_op::softmax, 1, cols, static_cast<int>(sizeof(T)));
    if (!pl.all[static_cast<std::size_t>(policy)].fits) continue;
    const std::int64_t per_block = p.block_threads / p.group_threads;
    const std::int64_t groups = std::int64_t{reduction::row_grid(s.device(), archdb::with_choice(pl, policy), INT64_C(1) << 40)} * per_block;
    const shape sh{(p.stages + 1) * groups + 5, cols};
    auto x = random_rows<T>(sh, sd + static_cast<std::uint64_t>(policy), 2.0);
    std::vector<T> w = random_rows<T>({1, cols}, sd + 7, 1.0), b = random_rows<T>({1, cols}, sd + 8, 1.0);
    for (which wh : {which::softmax, which::layer_norm, which::rms_norm})
      for (bool aligned : {false, true}) {
        check_rows<T>(s, wh, sh, x, w, b, policy, aligned);
        if (::testing::Test::HasFatalFailure()) return;
      }
    ++ran;
  }
}

TEST_P(Norm, StagedRingsWalkSeveralRows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  int ran = 0;
  staged_rings<bf16>(s, sd, 43, ran);
  staged_rings<fp16>(s, sd, 38, ran);  // 38 + 3: aligned rows the other way round
  if (ran == 0) GTEST_SKIP() << "no staged row candidate runs on " << s.device().name << " (no asynchronous copies)";
}

//! A twin of the stream's (emulated) device with 2 SMs and a 256 KB L2, added to the database under its own
//! name, so that a few rows of a few hundred KB are more than half of L2 in flight: the streaming kernels then
//! keep each row's head in shared memory between their passes (row_cache_vectors).
bool small_l2_twin(const archdb::device_desc& d, std::string& name) {
  name = d.name + " (2 SMs, 256 KB L2: row cache test)";
  if (archdb::find_device(name) != nullptr) return true;
  for (const auto& e : std::filesystem::directory_iterator(PK_ARCHDB_DEVICES_DIR)) {
    std::ifstream in(e.path());
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("name", "") != d.name) continue;
    j["name"] = name;
    j["aliases"] = nlohmann::json::array();
    j["match"]["name_patterns"] = nlohmann::json::array();
    j["sm_count"] = {{"value", 2}, {"source", "test twin"}};
    j["l2_bytes"] = {{"value", 256 * 1024}, {"source", "test twin"}};
    const auto path = std::filesystem::temp_directory_path() / ("pk_rows_twin_" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << j.dump();
    std::string err;
    const bool ok = archdb::load_user_devices(path.string(), &err);
    std::filesystem::remove(path);
    EXPECT_TRUE(ok) << err;
    return ok;
  }
  return false;
}

//! Each streaming block-per-row candidate with the row head kept in shared memory (a warp per row keeps none):
//! rows half as long again as what its group keeps (the rest read from global memory in the second pass), rows
//! misaligned and aligned, and more rows than are resident (`reuse`, the emulator's 2-SM twin: more than the
//! launch has groups, so that each group's cache serves several rows; a GPU's grid is too large for that).
//! The test fails where the plan does not engage the cache.
template <class T>
void cached_stream_rows(const stream& s, std::uint64_t sd, bool reuse) {
  constexpr int eb = static_cast<int>(sizeof(T));
  for (int policy = 0; policy < static_cast<int>(reduction::row_candidates.size()); ++policy) {
    const reduction::row_policy& p = reduction::row_candidates[static_cast<std::size_t>(policy)];
    if (!reduction::row_cacheable(p, false)) continue;
    // What a group keeps of a row longer than any cache, and how many groups run at once.
    const std::int64_t wide = INT64_C(1) << 24;
    const archdb::plan wp =
        archdb::with_choice(reduction::plan_rows(s.device(), reduction::row_op::softmax, INT64_C(1) << 20, wide, eb), policy);
    const std::int64_t keep = reduction::row_cache_vectors(s.device(), wp, reduction::row_op::softmax, INT64_C(1) << 20, wide, eb);
    // reuse: more rows than the launch has groups (its grid is up to 16 waves), else more than are resident.
    const std::int64_t blocks = reuse ? std::int64_t{reduction::row_grid(s.device(), wp, INT64_C(1) << 40)}
                                      : std::int64_t{wp.occ.blocks_per_sm} * s.device().sm_count;
    const std::int64_t groups = blocks * (p.block_threads / p.group_threads);
    const shape sh{2 * groups + 3, keep * (16 / eb) * 3 / 2 + 5};
    SCOPED_TRACE(reduction::name_of(p) + " keeps " + std::to_string(keep) + " vectors of a row; " + std::to_string(sh.rows) +
                 " x " + std::to_string(sh.cols));
    const archdb::plan pl =
        archdb::with_choice(reduction::plan_rows(s.device(), reduction::row_op::softmax, sh.rows, sh.cols, eb), policy);
    ASSERT_GT(reduction::row_cache_vectors(s.device(), pl, reduction::row_op::softmax, sh.rows, sh.cols, eb), 0)
        << "the plan keeps nothing of these rows on chip";
    auto x = random_rows<T>(sh, sd + static_cast<std::uint64_t>(policy), 2.0);
    std::vector<T> w = random_rows<T>({1, sh.cols}, sd + 7, 1.0), b = random_rows<T>({1, sh.cols}, sd + 8, 1.0);
    for (which wh : {which::softmax, which::log_softmax, which::layer_norm, which::rms_norm})
      for (bool aligned : {false, true}) {
        check_rows<T>(s, wh, sh, x, w, b, policy, aligned);
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

TEST_P(Norm, StreamingRowsKeepTheirHeadOnChip) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  pk::stream run = s;
  if (!GetParam().gpu) {
    std::string twin;
    ASSERT_TRUE(small_l2_twin(s.device(), twin)) << "no database file names " << s.device().name;
    ASSERT_TRUE(stream::host(twin, run));
  }
  cached_stream_rows<float>(run, sd, !GetParam().gpu);
  cached_stream_rows<bf16>(run, sd, !GetParam().gpu);
}

TEST_P(Norm, EveryOpEveryTypeRaggedWidths) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  all_ops_type<float>(s, sd);
  all_ops_type<double>(s, sd);
  all_ops_type<fp16>(s, sd);
  all_ops_type<bf16>(s, sd);
}

TEST_P(Norm, SpecialRows) {
  PK_TEST_STREAM(GetParam(), s);
  const shape sh{4, 1000};
  const std::int64_t stride = sh.cols + 3;
  std::vector<float> x = random_rows<float>(sh, 3, 1.0);
  std::vector<float> w = random_rows<float>({1, sh.cols}, 4, 1.0), b = random_rows<float>({1, sh.cols}, 5, 1.0);
  for (std::int64_t j = 0; j < sh.cols; ++j) {
    x[static_cast<std::size_t>(j)] = -INFINITY;                   // row 0: all -inf
    x[static_cast<std::size_t>(2 * stride + j)] = 0.375f;         // row 2: constant (exact sums)
  }
  x[static_cast<std::size_t>(stride + 17)] = NAN;                 // row 1: one NaN
  x[static_cast<std::size_t>(3 * stride + 5)] = -INFINITY;        // row 3: one -inf among finite values
  for (which wh : {which::softmax, which::log_softmax, which::layer_norm, which::rms_norm}) check_rows<float>(s, wh, sh, x, w, b);
  // The defined results, stated exactly: softmax of the all -inf row is 0, log_softmax -inf; a constant
  // row normalizes to exactly the bias (x - mean == 0).
  auto xin = upload_padded(s, x);
  device_buffer<float> y;
  ASSERT_TRUE(y.allocate(s, x.size()));
  rows_desc r{dtype::f32, xin.data(), y.data(), sh.rows, sh.cols, stride, stride};
  ASSERT_TRUE(softmax(s, r));
  std::vector<float> got;
  ASSERT_TRUE(y.download(got));
  for (std::int64_t j = 0; j < sh.cols; ++j) ASSERT_EQ(got[static_cast<std::size_t>(j)], 0.0f);
  EXPECT_EQ(got[static_cast<std::size_t>(3 * stride + 5)], 0.0f);
  ASSERT_TRUE(log_softmax(s, r));
  ASSERT_TRUE(y.download(got));
  for (std::int64_t j = 0; j < sh.cols; ++j) ASSERT_EQ(got[static_cast<std::size_t>(j)], -INFINITY);
  auto win = upload_padded(s, w), bin = upload_padded(s, b);
  norm_args a;
  a.rows = r;
  a.weight = win.data();
  a.bias = bin.data();
  ASSERT_TRUE(layer_norm(s, a));
  ASSERT_TRUE(y.download(got));
  for (std::int64_t j = 0; j < sh.cols; ++j) ASSERT_EQ(got[static_cast<std::size_t>(2 * stride + j)], b[static_cast<std::size_t>(j)]);
}

TEST_P(Norm, RowMeanVarianceWithLargeOffset) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  std::mt19937_64 rng(sd);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  const std::int64_t rows = 5, cols = 3001;
  std::vector<double> x(static_cast<std::size_t>(rows * cols));
  for (auto& v : x) v = 1e8 + d(rng);
  auto xin = upload_padded(s, x);
  device_buffer<double> m, v;
  ASSERT_TRUE(m.allocate(s, rows));
  ASSERT_TRUE(v.allocate(s, rows));
  rows_desc r{dtype::f64, xin.data(), nullptr, rows, cols};
  ASSERT_TRUE(row_mean_var(s, r, m.data(), v.data(), 1));
  std::vector<double> gm, gv;
  ASSERT_TRUE(m.download(gm));
  ASSERT_TRUE(v.download(gv));
  for (std::int64_t i = 0; i < rows; ++i) {
    double mean = 0, m2 = 0;
    for (std::int64_t j = 0; j < cols; ++j) mean += x[static_cast<std::size_t>(i * cols + j)];
    mean /= cols;
    for (std::int64_t j = 0; j < cols; ++j) m2 += std::pow(x[static_cast<std::size_t>(i * cols + j)] - mean, 2);
    const double var = m2 / (cols - 1), u = std::ldexp(1.0, -53);
    // Chan/Golub/LeVeque: relative error <= c n u kappa, kappa = sqrt(1 + mean^2/var); rule c = 2.
    const double kappa = std::sqrt(1 + mean * mean / var);
    EXPECT_LE(std::fabs(gv[static_cast<std::size_t>(i)] - var), 2 * cols * u * kappa * var) << "row " << i;
    EXPECT_LE(std::fabs(gm[static_cast<std::size_t>(i)] - mean), 2 * cols * u * mean) << "row " << i;
  }
}

TEST_P(Norm, BadArgumentsNameTheArgument) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<float> buf;
  ASSERT_TRUE(buf.allocate(s, 64));
  const auto expect = [](const status& st, errc code, const char* needle) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  rows_desc r{dtype::f32, buf.data(), buf.data(), 4, 8};
  rows_desc bad = r;
  bad.x = nullptr;
  expect(softmax(s, bad), errc::invalid_argument, "rows.x");
  bad = r;
  bad.y = nullptr;
  expect(log_softmax(s, bad), errc::invalid_argument, "rows.y");
  bad = r;
  bad.x_row_stride = 4;
  expect(softmax(s, bad), errc::invalid_argument, "rows.x_row_stride = 4");
  bad = r;
  bad.type = dtype::i32;
  expect(softmax(s, bad), errc::unsupported, "rows.type i32");
  bad = r;
  bad.cols = -1;
  expect(softmax(s, bad), errc::invalid_argument, "rows.cols = -1");
  bad = r;
  bad.policy = "seg_b9";
  expect(softmax(s, bad), errc::invalid_argument, "softmax: policy seg_b9 is not a compiled candidate");
  norm_args a;
  a.rows = r;
  expect(layer_norm(s, a), errc::invalid_argument, "weight");
  a.weight = buf.data();
  a.bias = buf.data();
  expect(rms_norm(s, a), errc::invalid_argument, "bias");
  a.bias = nullptr;
  a.eps = -1;
  expect(layer_norm(s, a), errc::invalid_argument, "eps");
  expect(row_mean_var(s, r, nullptr, buf.data()), errc::invalid_argument, "mean");
  expect(softmax(stream{}, r), errc::invalid_argument, "stream");
}

INSTANTIATE_TEST_SUITE_P(Backends, Norm, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
