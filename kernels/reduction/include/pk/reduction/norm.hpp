// Row operations over the last axis of a [rows, cols] tensor (row strides in elements, last axis
// contiguous): softmax, log_softmax, LayerNorm and RMSNorm forward, row mean/variance.
// Types: f64, f32, f16, bf16 (16-bit types compute in fp32, f64 in fp64); output type = input type.
//
//   pk::rows_desc r{pk::reduction::dtype::bf16, x, y, rows, cols};   // row strides default to cols
//   pk::softmax(s, r);
//   pk::norm_args n;  n.rows = r;  n.weight = w;  n.bias = b;  n.eps = 1e-5;
//   pk::layer_norm(s, n);
//
// Defined results, for every type and backend (special values included):
//  - softmax / log_softmax: a row that is all -inf gives 0 / -inf everywhere. A -inf among other
//    values gives exactly 0 / -inf there. A row holding a NaN or a +inf is NaN everywhere (as PyTorch:
//    exp(x - max) is NaN at the +inf, so is the row sum). -0 counts as 0; a row of subnormals (or of
//    -0) is uniform: 1 / cols, log_softmax -log(cols). bf16/f16 softmax outputs below 2^-126 are 0
//    (the exponentials flush there; bf16 subnormal probabilities are not produced).
//  - layer_norm: y = (x - mean) * rstd * weight (+ bias), rstd = 1 / sqrt(var + eps), var the
//    population variance. The statistics are those of x - K, K the row's first element (exact for
//    data within a factor of 2 of K; Welford per thread, Chan's merge), and x - mean is evaluated as
//    (x - K) - mean(x - K): a large common offset costs no accuracy. A constant row gives exactly
//    y = bias (0 without bias), also with eps = 0 (rstd = +inf then: x - mean == 0 contributes 0). A
//    row holding a NaN or +-inf gives NaN everywhere (mean and rstd NaN).
//  - rms_norm: y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps). A row of zeros gives y = 0,
//    also with eps = 0 (rstd = +inf). A NaN makes the row NaN; +-inf (and no NaN) gives rstd = 0, so
//    y = 0 where x is finite and NaN at the infinities (IEEE: inf * 0).
//  - eps = 0 with a row whose variance (layer_norm) or mean square (rms_norm) underflows to 0 in the
//    accumulator without the row being constant (zero): rstd = +inf and y = +-inf where x != mean (x != 0).
//  - row_mean_var: as reduce_mean_var per row (pivot K the row's first element): mean and var NaN for
//    a row holding a NaN or +-inf, and for cols == 0; var NaN when cols <= correction.
//  - rows == 0 or cols == 0: softmax, log_softmax, layer_norm and rms_norm write nothing (mean and
//    rstd included).
//  - optional fp32 outputs: mean (layer_norm) and rstd (both), one per row.
//  - Limits: (rows - 1) * row stride + cols elements (x and y), in bytes, must fit 2^63 - 1, computed
//    in checked int64 arithmetic; otherwise invalid_argument naming rows.rows and the row stride.
// One group of threads per row (a warp for short rows, a block for long ones: the planner decides);
// the statistics pass and the output pass each read the row (the second read mostly hits L2).
// Deterministic run to run for a given plan.
#pragma once
#include <pk/reduction/reduce.hpp>

namespace pk {

struct rows_desc {
  reduction::dtype type = reduction::dtype::f32;
  const void* x = nullptr;
  void* y = nullptr;  //!< may alias x (in place) when the strides are equal
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t x_row_stride = -1;  //!< elements between rows; -1: cols
  std::int64_t y_row_stride = -1;  //!< -1: cols
  const char* policy = nullptr;    //!< null: the planner chooses; else a candidate's name (row_onchip_b256_g32_v8)
};

status softmax(const stream& s, const rows_desc& r);
status log_softmax(const stream& s, const rows_desc& r);

struct norm_args {
  rows_desc rows;
  const void* weight = nullptr;  //!< cols elements of rows.type (required)
  const void* bias = nullptr;    //!< cols elements of rows.type, or null (layer_norm only)
  double eps = 1e-5;             //!< >= 0
  float* mean = nullptr;         //!< optional: rows fp32 means (layer_norm only)
  float* rstd = nullptr;         //!< optional: rows fp32 reciprocal standard deviations
};

status layer_norm(const stream& s, const norm_args& a);
status rms_norm(const stream& s, const norm_args& a);

//! Per row: mean[r] and var[r] = M2 / (cols - correction) in the accumulator type (fp32 for
//! f16/bf16/f32, fp64 for f64); NaN when cols <= correction. `y` of the descriptor is unused.
status row_mean_var(const stream& s, const rows_desc& r, void* mean, void* var, int correction = 0);

namespace reduction {
enum class row_op : std::uint8_t { softmax, log_softmax, layer_norm, rms_norm, mean_var };
//! Whether the operation's row statistics are a Welford state (mean and M2), as layer_norm's and mean_var's are.
constexpr bool welford_state(row_op op) { return op == row_op::layer_norm || op == row_op::mean_var; }
//! The plan of a row operation on `device`: the strategy and policy among row_candidates (a row held
//! on chip by a warp or a block, or streamed twice when wider than any group holds), with the reasons.
archdb::plan plan_rows(const archdb::device_desc& device, row_op op, std::int64_t rows, std::int64_t cols,
                       int elem_bytes);
//! Blocks the row kernels launch for a plan of plan_rows: enough for every row, at most 16 waves of
//! resident blocks (the kernels loop over the rest).
unsigned row_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t rows);
//! 16-byte vectors of each row's head the kernel of a plan of plan_rows keeps in shared memory between its passes
//! (row_cacheable policies whose rows in flight would re-read from DRAM; 0 otherwise).
std::int64_t row_cache_vectors(const archdb::device_desc& device, const archdb::plan& p, row_op op, std::int64_t rows,
                               std::int64_t cols, int elem_bytes);
}  // namespace reduction

}  // namespace pk
