// Row operations (norm.hpp): validation, planning and dispatch to the per-target instances. Compiled once.
#include "alignment.hpp"

#include <pk/config.hpp>
#include <pk/reduction/detail/reduce_call.hpp>
#include <pk/reduction/norm.hpp>
#include <pk/archdb/family_plan.hpp>
#include <pk/reduction/reduce_policy.hpp>
#include <pk/reduction/rows_instances.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace pk {
namespace {
using reduction::dtype;
using reduction::row_kind;
using reduction::row_op;
// One order for both: the pk tool's manifest (tools/pk/family_reduce.cpp) names a row kernel's row_kind by the
// operation's row_op.
static_assert(static_cast<int>(row_kind::softmax) == static_cast<int>(row_op::softmax) &&
                  static_cast<int>(row_kind::log_softmax) == static_cast<int>(row_op::log_softmax) &&
                  static_cast<int>(row_kind::layer_norm) == static_cast<int>(row_op::layer_norm) &&
                  static_cast<int>(row_kind::rms_norm) == static_cast<int>(row_op::rms_norm) &&
                  static_cast<int>(row_kind::mean_var) == static_cast<int>(row_op::mean_var),
              "row_kind and row_op in the same order");

// Byte offsets are pointer differences: they must fit std::ptrdiff_t (int64 on every supported target).
constexpr std::int64_t max_byte_offset = PTRDIFF_MAX;

status check_rows(const char* fn, const stream& s, const rows_desc& r, bool needs_y) {
  const std::string f(fn);
  if (!s.valid()) return invalid_argument(f + ": stream: not initialized (use pk::default_stream)");
  if (static_cast<unsigned>(r.type) > static_cast<unsigned>(dtype::f8e4m3fnuz))
    return invalid_argument(f + ": rows.type: not a pk::reduction::dtype value");
  if (r.type != dtype::f64 && r.type != dtype::f32 && r.type != dtype::f16 && r.type != dtype::bf16)
    return unsupported(f + ": rows.type " + reduction::to_string(r.type) + ": supported types are f64, f32, f16, bf16");
  if (r.rows < 0) return invalid_argument(f + ": rows.rows = " + std::to_string(r.rows) + ": must be >= 0");
  if (r.cols < 0) return invalid_argument(f + ": rows.cols = " + std::to_string(r.cols) + ": must be >= 0");
  // -1 (only -1) stands for cols; any other negative stride would otherwise read as contiguous rows.
  if (r.x_row_stride < -1)
    return invalid_argument(f + ": rows.x_row_stride = " + std::to_string(r.x_row_stride) + ": must be >= cols (or -1)");
  if (needs_y && r.y_row_stride < -1)
    return invalid_argument(f + ": rows.y_row_stride = " + std::to_string(r.y_row_stride) + ": must be >= cols (or -1)");
  const std::int64_t xs = r.x_row_stride < 0 ? r.cols : r.x_row_stride;
  const std::int64_t ys = r.y_row_stride < 0 ? r.cols : r.y_row_stride;
  if (r.rows > 1 && xs < r.cols)
    return invalid_argument(f + ": rows.x_row_stride = " + std::to_string(xs) + ": must be >= cols = " +
                            std::to_string(r.cols) + " (or -1)");
  if (needs_y && r.rows > 1 && ys < r.cols)
    return invalid_argument(f + ": rows.y_row_stride = " + std::to_string(ys) + ": must be >= cols = " +
                            std::to_string(r.cols) + " (or -1)");
  // Extents in checked int64 arithmetic: the last element a view reaches, (rows - 1) * stride + cols,
  // in bytes, must fit a pointer difference; so must the per-row outputs (rows values of 8 bytes at
  // most).
  const int eb = reduction::size_of(r.type);
  const auto extent_fits = [&](std::int64_t stride) {
    std::int64_t last = 0, bytes = 0;
    return !__builtin_mul_overflow(r.rows - 1, stride, &last) && !__builtin_add_overflow(last, r.cols, &last) &&
           !__builtin_mul_overflow(last, std::int64_t{eb}, &bytes) && bytes <= max_byte_offset;
  };
  const auto too_large = [&](const char* stride_name, std::int64_t given) {
    return invalid_argument(f + ": rows.rows = " + std::to_string(r.rows) + ", rows.cols = " + std::to_string(r.cols) +
                            ", " + stride_name + " = " + std::to_string(given) +
                            ": (rows - 1) * row stride + cols elements of " + std::to_string(eb) +
                            " bytes exceed the largest byte offset (2^63 - 1 bytes)");
  };
  if (r.rows > 0 && r.cols > 0) {
    if (!extent_fits(xs)) return too_large("rows.x_row_stride", r.x_row_stride);
    if (needs_y && !extent_fits(ys)) return too_large("rows.y_row_stride", r.y_row_stride);
  }
  if (r.rows > max_byte_offset / static_cast<std::int64_t>(sizeof(double)))
    return invalid_argument(f + ": rows.rows = " + std::to_string(r.rows) + ": the per-row outputs (" +
                            std::to_string(sizeof(double)) + " bytes each at most) exceed the largest byte offset");
  if (r.rows > 0 && r.cols > 0) {
    if (r.x == nullptr) return invalid_argument(f + ": rows.x: must not be null");
    if (needs_y && r.y == nullptr) return invalid_argument(f + ": rows.y: must not be null");
    if (needs_y && r.x == r.y && xs != ys)
      return invalid_argument(f + ": rows.y: in place (y == x) needs equal row strides");
    PK_TRY(reduction::detail::check_aligned(f + ": rows.x", r.x, eb));
    if (needs_y) PK_TRY(reduction::detail::check_aligned(f + ": rows.y", r.y, eb));
  }
  return {};
}

status run(const stream& s, row_kind kind, row_op op, const char* fn, const rows_desc& r, const void* w,
           const void* b, void* stat0, void* stat1, double eps, int correction) {
  const int eb = reduction::size_of(r.type);
  const std::int64_t key[] = {r.rows, r.cols, static_cast<std::int64_t>(op), eb};
  const auto planned = archdb::cached_plan(s.device(), "rows", key, "",
                                           [&] { return reduction::plan_rows(s.device(), op, r.rows, r.cols, eb); });
  int index = 0;
  PK_TRY(archdb::select_policy(*planned, r.policy, fn, index));
  const archdb::plan p = archdb::with_choice(*planned, index);
  reduction::rows_call c;
  c.s = &s;
  c.kind = kind;
  c.policy = p.index;
  c.grid = reduction::row_grid(s.device(), p, r.rows);
  c.cache_vectors = static_cast<std::uint16_t>(
      std::min<std::int64_t>(reduction::row_cache_vectors(s.device(), p, op, r.rows, r.cols, eb), UINT16_MAX));
  c.x = r.x;
  c.y = r.y;
  c.weight = w;
  c.bias = b;
  c.stat0 = stat0;
  c.stat1 = stat1;
  c.rows = r.rows;
  c.cols = r.cols;
  // A stride is used only to reach a second row of some columns, so check_rows bounds it only then: where
  // there are no columns or only one row the call carries zero, so that neither the kernels' row offsets nor
  // the alignment test below can overflow.
  const bool strided = r.cols > 0 && r.rows > 1;
  c.x_stride = !strided ? 0 : r.x_row_stride < 0 ? r.cols : r.x_row_stride;
  c.y_stride = !strided ? 0 : r.y_row_stride < 0 ? r.cols : r.y_row_stride;
  // 16-byte vectors apply to every row when every row start and the per-column vectors are aligned.
  const auto aligned = [](const void* q) { return q == nullptr || reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  c.vectors = aligned(r.x) && aligned(r.y) && aligned(w) && aligned(b) && (c.x_stride * eb) % 16 == 0 &&
              (r.y == nullptr || (c.y_stride * eb) % 16 == 0);
  c.eps = eps;
  c.correction = correction;
  c.type_name = reduction::to_string(r.type);
  return instances::rows::dispatch(s.code_target(), r.type, c);
}

status norm(const stream& s, const norm_args& a, bool rms) {
  const char* fn = rms ? "rms_norm" : "layer_norm";
  const std::string f(fn);
  PK_TRY(check_rows(fn, s, a.rows, true));
  if (a.rows.rows == 0 || a.rows.cols == 0) return {};
  if (a.weight == nullptr) return invalid_argument(f + ": weight: must not be null (cols elements)");
  if (rms && a.bias != nullptr) return invalid_argument("rms_norm: bias: must be null (RMSNorm has no bias)");
  if (rms && a.mean != nullptr) return invalid_argument("rms_norm: mean: must be null (RMSNorm has no mean)");
  const int eb = reduction::size_of(a.rows.type);
  PK_TRY(reduction::detail::check_aligned(f + ": weight", a.weight, eb));
  PK_TRY(reduction::detail::check_aligned(f + ": bias", a.bias, eb));
  PK_TRY(reduction::detail::check_aligned(f + ": mean", a.mean, static_cast<int>(sizeof(float))));
  PK_TRY(reduction::detail::check_aligned(f + ": rstd", a.rstd, static_cast<int>(sizeof(float))));
  if (!(a.eps >= 0) || !std::isfinite(a.eps))
    return invalid_argument(f + ": eps = " + std::to_string(a.eps) + ": must be finite and >= 0");
  return run(s, rms ? row_kind::rms_norm : row_kind::layer_norm, rms ? row_op::rms_norm : row_op::layer_norm, fn,
             a.rows, a.weight, a.bias, a.mean, a.rstd, a.eps, 0);
}

}  // namespace

status softmax(const stream& s, const rows_desc& r) {
  PK_TRY(check_rows("softmax", s, r, true));
  if (r.rows == 0 || r.cols == 0) return {};
  return run(s, row_kind::softmax, row_op::softmax, "softmax", r, nullptr, nullptr, nullptr, nullptr, 0, 0);
}

status log_softmax(const stream& s, const rows_desc& r) {
  PK_TRY(check_rows("log_softmax", s, r, true));
  if (r.rows == 0 || r.cols == 0) return {};
  return run(s, row_kind::log_softmax, row_op::log_softmax, "log_softmax", r, nullptr, nullptr, nullptr, nullptr, 0, 0);
}

status layer_norm(const stream& s, const norm_args& a) { return norm(s, a, false); }
status rms_norm(const stream& s, const norm_args& a) { return norm(s, a, true); }

status row_mean_var(const stream& s, const rows_desc& r, void* mean, void* var, int correction) {
  PK_TRY(check_rows("row_mean_var", s, r, false));
  if (correction < 0)
    return invalid_argument("row_mean_var: correction = " + std::to_string(correction) + ": must be >= 0");
  if (r.rows == 0) return {};
  if (mean == nullptr) return invalid_argument("row_mean_var: mean: must not be null");
  if (var == nullptr) return invalid_argument("row_mean_var: var: must not be null");
  const int acc_bytes = r.type == dtype::f64 ? 8 : 4;  // the accumulator: f64, or f32 for the others
  PK_TRY(reduction::detail::check_aligned("row_mean_var: mean", mean, acc_bytes));
  PK_TRY(reduction::detail::check_aligned("row_mean_var: var", var, acc_bytes));
  return run(s, row_kind::mean_var, row_op::mean_var, "row_mean_var", r, nullptr, nullptr, mean, var, 0, correction);
}

}  // namespace pk
