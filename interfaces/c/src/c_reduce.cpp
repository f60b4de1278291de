// The C API's reductions and row operations over pk/reduction/{reduce,norm}.hpp. Table-driven: the
// dtype, operation and row-operation tables below are the whole mapping; a new C++ operation or dtype
// is one row (plus, for a new entry point, its declaration in pk.h and one line at the end).
#include "c_api.hpp"

#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>

#include <array>
#include <string>
#include <string_view>

using namespace pk::capi;
using pk::status;
namespace red = pk::reduction;

namespace {

struct dtype_entry {
  std::int32_t c;
  red::dtype cpp;
};
constexpr std::array dtype_table{
    dtype_entry{PK_DTYPE_F64, red::dtype::f64}, dtype_entry{PK_DTYPE_F32, red::dtype::f32},
    dtype_entry{PK_DTYPE_F16, red::dtype::f16}, dtype_entry{PK_DTYPE_BF16, red::dtype::bf16},
    dtype_entry{PK_DTYPE_I32, red::dtype::i32}, dtype_entry{PK_DTYPE_I64, red::dtype::i64},
    dtype_entry{PK_DTYPE_I8, red::dtype::i8},   dtype_entry{PK_DTYPE_U8, red::dtype::u8},
};

struct op_entry {
  std::int32_t c;
  pk::reduce_op cpp;
  bool index_result;  //!< argmin/argmax: the output is an int64 index
};
constexpr std::array op_table{
    op_entry{PK_REDUCE_SUM, pk::reduce_op::sum, false},       op_entry{PK_REDUCE_PROD, pk::reduce_op::prod, false},
    op_entry{PK_REDUCE_MIN, pk::reduce_op::min, false},       op_entry{PK_REDUCE_MAX, pk::reduce_op::max, false},
    op_entry{PK_REDUCE_ARGMIN, pk::reduce_op::argmin, true},  op_entry{PK_REDUCE_ARGMAX, pk::reduce_op::argmax, true},
};

status to_cpp(const std::string& where, std::int32_t d, red::dtype& out) {
  for (const dtype_entry& e : dtype_table)
    if (e.c == d) {
      out = e.cpp;
      return {};
    }
  const char* name = dtype_name(d);
  // FP8 (e4m3fn, e4m3fnuz) is a KV-cache storage format only: no reduction or row operation takes it.
  const bool fp8 = d == PK_DTYPE_F8E4M3FN || d == PK_DTYPE_F8E4M3FNUZ;
  return pk::unsupported(where + ": dtype " + (name ? name : std::to_string(d)) + " is not a dtype of the reduction family" +
                         (fp8 ? " (FP8 is a KV-cache storage format: pk_attention_decode, pk_kv_cache_append)" : ""));
}

status to_cpp(const std::string& api, std::int32_t op, const op_entry*& out) {
  for (const op_entry& e : op_table)
    if (e.c == op) {
      out = &e;
      return {};
    }
  return pk::invalid_argument(api + ": op = " + std::to_string(op) + ": not a pk_reduce_op");
}

pk::reduce_options to_cpp(const pk_reduce_options* o) {
  pk::reduce_options r;
  if (o != nullptr) {
    r.reproducible = o->reproducible != 0;
    r.policy = o->policy;
  }
  return r;
}

//! The dtype of a result: int64 indices for argmin/argmax, else the input's dtype.
std::int32_t result_dtype(const op_entry& op, const pk_tensor& in) { return op.index_result ? PK_DTYPE_I64 : in.dtype; }

//! fp32 for f16/bf16/f32 (and integers), fp64 for f64: the dtype of means and variances.
std::int32_t accumulator_dtype(const pk_tensor& in) { return in.dtype == PK_DTYPE_F64 ? PK_DTYPE_F64 : PK_DTYPE_F32; }

//! A C descriptor as the reduction family's strided view (rank <= pk::tensor_view::max_rank).
status to_view(const std::string& where, const pk_tensor& t, pk::tensor_view& v) {
  if (t.rank > pk::tensor_view::max_rank)
    return pk::invalid_argument(where + ": rank = " + std::to_string(t.rank) + ": must be <= " +
                                std::to_string(pk::tensor_view::max_rank));
  PK_TRY(to_cpp(where, t.dtype, v.type));
  v.data = t.data;
  v.rank = t.rank;
  for (std::int32_t k = 0; k < t.rank; ++k) {
    v.shape[k] = t.shape[k];
    v.stride[k] = t.strides[k];
  }
  return {};
}

//! A 1-D contiguous tensor of `n` elements of `dtype` (`what` names the expected length).
status check_vector(const std::string& where, const pk_tensor* t, std::int32_t dtype, std::int64_t n, std::string_view what) {
  PK_TRY(check_tensor(where, t));
  if (t->rank != 1 || t->shape[0] != n)
    return pk::invalid_argument(where + ": must be 1-D with " + std::string(what) + " = " + std::to_string(n) + " elements");
  PK_TRY(check_contiguous(where, *t));
  PK_TRY(check_dtype(where, *t, dtype));
  if (t->data == nullptr && n > 0) return pk::invalid_argument(where + ": data: must not be null");
  return {};
}

status reduce(const std::string& api, pk_stream_t stream, std::int32_t op, const pk_tensor* in, const pk_tensor* out,
              const pk_reduce_options* opt) {
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  const op_entry* o = nullptr;
  PK_TRY(to_cpp(api, op, o));
  PK_TRY(check_tensor(api + ": in", in));
  PK_TRY(check_tensor(api + ": out", out));
  PK_TRY(check_contiguous(api + ": in", *in));
  red::dtype type{};
  PK_TRY(to_cpp(api + ": in", in->dtype, type));
  PK_TRY(check_single(api + ": out", *out));
  PK_TRY(check_dtype(api + ": out", *out, result_dtype(*o, *in)));
  const std::int64_t n = element_count(*in);
  if (in->data == nullptr && n > 0) return pk::invalid_argument(api + ": in: data: must not be null when the tensor is not empty");
  return pk::reduce(*s, o->cpp, type, in->data, n, out->data, to_cpp(opt));
}

status reduce_axis(pk_stream_t stream, std::int32_t op, const pk_tensor* in, std::int32_t axis, const pk_tensor* out,
                   const pk_reduce_options* opt) {
  const std::string api = "pk_reduce_axis";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  const op_entry* o = nullptr;
  PK_TRY(to_cpp(api, op, o));
  PK_TRY(check_tensor(api + ": in", in));
  PK_TRY(check_tensor(api + ": out", out));
  pk::tensor_view vin, vout;
  PK_TRY(to_view(api + ": in", *in, vin));
  PK_TRY(check_dtype(api + ": out", *out, result_dtype(*o, *in)));
  PK_TRY(to_view(api + ": out", *out, vout));
  return pk::reduce_axis(*s, o->cpp, vin, axis, vout, to_cpp(opt));
}

status segmented(pk_stream_t stream, std::int32_t op, const pk_tensor* in, const pk_tensor* offsets, const pk_tensor* out,
                 const pk_reduce_options* opt) {
  const std::string api = "pk_segmented_reduce";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  const op_entry* o = nullptr;
  PK_TRY(to_cpp(api, op, o));
  PK_TRY(check_tensor(api + ": in", in));
  if (in->rank != 1) return pk::invalid_argument(api + ": in: rank = " + std::to_string(in->rank) + ": must be 1");
  PK_TRY(check_contiguous(api + ": in", *in));
  red::dtype type{};
  PK_TRY(to_cpp(api + ": in", in->dtype, type));
  // The C++ entry takes no element count (the offsets, in device memory, bound the segments): the input's
  // byte extent is checked here.
  if (std::int64_t bytes = 0; __builtin_mul_overflow(element_count(*in), std::int64_t{red::size_of(type)}, &bytes))
    return pk::invalid_argument(api + ": in: shape[0] = " + std::to_string(in->shape[0]) + " elements of " +
                                std::to_string(red::size_of(type)) + " bytes: the byte extent exceeds 2^63 - 1");
  PK_TRY(check_tensor(api + ": out", out));
  if (out->rank != 1) return pk::invalid_argument(api + ": out: rank = " + std::to_string(out->rank) + ": must be 1");
  const std::int64_t segments = out->shape[0];
  if (segments == INT64_MAX)  // segments + 1 offsets would overflow
    return pk::invalid_argument(api + ": out: segments = " + std::to_string(segments) + ": must be < 2^63 - 1");
  PK_TRY(check_vector(api + ": out", out, result_dtype(*o, *in), segments, "segments"));
  PK_TRY(check_vector(api + ": offsets", offsets, PK_DTYPE_I64, segments + 1, "segments + 1"));
  return pk::segmented_reduce(*s, o->cpp, type, in->data, segments, static_cast<const std::int64_t*>(offsets->data),
                              out->data, to_cpp(opt));
}

status mean_var(pk_stream_t stream, const pk_tensor* in, const pk_tensor* mean, const pk_tensor* var, std::int32_t correction) {
  const std::string api = "pk_reduce_mean_var";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  PK_TRY(check_tensor(api + ": in", in));
  PK_TRY(check_contiguous(api + ": in", *in));
  red::dtype type{};
  PK_TRY(to_cpp(api + ": in", in->dtype, type));
  for (const auto& [name, t] : {std::pair{": mean", mean}, std::pair{": var", var}}) {
    PK_TRY(check_tensor(api + name, t));
    PK_TRY(check_single(api + name, *t));
    PK_TRY(check_dtype(api + name, *t, accumulator_dtype(*in)));
  }
  const std::int64_t n = element_count(*in);
  if (in->data == nullptr && n > 0) return pk::invalid_argument(api + ": in: data: must not be null when the tensor is not empty");
  return pk::reduce_mean_var(*s, type, in->data, n, mean->data, var->data, correction);
}

// ---------------------------------------------------------------------------------------------
// Row operations.

//! x (and y, when given): [rows, cols], last dimension contiguous; y has x's shape and dtype.
status to_rows(const std::string& api, const pk_tensor* x, const pk_tensor* y, pk::rows_desc& r) {
  PK_TRY(check_tensor(api + ": x", x));
  if (x->rank != 2) return pk::invalid_argument(api + ": x: rank = " + std::to_string(x->rank) + ": must be 2 ([rows, cols])");
  if (x->shape[1] > 1 && x->strides[1] != 1)
    return pk::invalid_argument(api + ": x: strides[1] = " + std::to_string(x->strides[1]) + ": must be 1 (rows contiguous)");
  PK_TRY(to_cpp(api + ": x", x->dtype, r.type));
  r.x = x->data;
  r.rows = x->shape[0];
  r.cols = x->shape[1];
  // Row strides are non-negative; a negative one must not reach the C++ API, where -1 stands for cols.
  if (x->shape[0] > 1 && x->strides[0] < 0)
    return pk::invalid_argument(api + ": x: strides[0] = " + std::to_string(x->strides[0]) + ": must be >= 0");
  r.x_row_stride = r.rows > 1 ? x->strides[0] : -1;
  if (y == nullptr) return {};
  PK_TRY(check_tensor(api + ": y", y));
  if (y->rank != 2 || y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1])
    return pk::invalid_argument(api + ": y: must have x's shape [" + std::to_string(x->shape[0]) + ", " +
                                std::to_string(x->shape[1]) + "]");
  if (y->shape[1] > 1 && y->strides[1] != 1)
    return pk::invalid_argument(api + ": y: strides[1] = " + std::to_string(y->strides[1]) + ": must be 1 (rows contiguous)");
  PK_TRY(check_dtype(api + ": y", *y, x->dtype));
  r.y = y->data;
  if (y->shape[0] > 1 && y->strides[0] < 0)
    return pk::invalid_argument(api + ": y: strides[0] = " + std::to_string(y->strides[0]) + ": must be >= 0");
  r.y_row_stride = r.rows > 1 ? y->strides[0] : -1;
  return {};
}

using row_fn = status (*)(const pk::stream&, const pk::rows_desc&);
struct row_entry {
  std::string_view api;
  row_fn fn;
};
constexpr std::array row_table{
    row_entry{"pk_softmax", [](const pk::stream& s, const pk::rows_desc& r) { return pk::softmax(s, r); }},
    row_entry{"pk_log_softmax", [](const pk::stream& s, const pk::rows_desc& r) { return pk::log_softmax(s, r); }},
};

status rows_op(std::string_view name, pk_stream_t stream, const pk_tensor* x, const pk_tensor* y) {
  for (const row_entry& e : row_table) {
    if (e.api != name) continue;
    const std::string api(e.api);
    const pk::stream* s = nullptr;
    PK_TRY(get_stream(api, stream, s));
    pk::rows_desc r;
    PK_TRY(to_rows(api, x, y, r));
    return e.fn(*s, r);
  }
  return {pk::errc::internal, std::string(name) + ": no row operation of that name"};
}

status norm(bool layer, pk_stream_t stream, const pk_tensor* x, const pk_tensor* y, const pk_tensor* weight,
            const pk_tensor* bias, double eps, float* mean, float* rstd) {
  const std::string api = layer ? "pk_layer_norm" : "pk_rms_norm";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  pk::norm_args a;
  PK_TRY(to_rows(api, x, y, a.rows));
  PK_TRY(check_vector(api + ": weight", weight, x->dtype, a.rows.cols, "cols"));
  a.weight = weight->data;
  if (bias != nullptr) {
    PK_TRY(check_vector(api + ": bias", bias, x->dtype, a.rows.cols, "cols"));
    a.bias = bias->data;
  }
  a.eps = eps;
  a.mean = mean;
  a.rstd = rstd;
  return layer ? pk::layer_norm(*s, a) : pk::rms_norm(*s, a);
}

status row_mean_var(pk_stream_t stream, const pk_tensor* x, const pk_tensor* mean, const pk_tensor* var, std::int32_t correction) {
  const std::string api = "pk_row_mean_var";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  pk::rows_desc r;
  PK_TRY(to_rows(api, x, nullptr, r));
  PK_TRY(check_vector(api + ": mean", mean, accumulator_dtype(*x), r.rows, "rows"));
  PK_TRY(check_vector(api + ": var", var, accumulator_dtype(*x), r.rows, "rows"));
  return pk::row_mean_var(*s, r, mean->data, var->data, correction);
}

}  // namespace

extern "C" {

pk_reduce_options pk_reduce_options_default(void) {
  const pk::reduce_options d;
  return pk_reduce_options{d.reproducible ? 1 : 0, d.policy};
}

pk_status pk_reduce(pk_stream_t stream, pk_reduce_op op, const pk_tensor* in, const pk_tensor* out, const pk_reduce_options* opt) {
  return guarded([&] { return reduce("pk_reduce", stream, enum_value(op), in, out, opt); });
}
pk_status pk_reduce_sum(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out) {
  return guarded([&] { return reduce("pk_reduce_sum", stream, PK_REDUCE_SUM, in, out, nullptr); });
}
pk_status pk_reduce_prod(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out) {
  return guarded([&] { return reduce("pk_reduce_prod", stream, PK_REDUCE_PROD, in, out, nullptr); });
}
pk_status pk_reduce_min(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out) {
  return guarded([&] { return reduce("pk_reduce_min", stream, PK_REDUCE_MIN, in, out, nullptr); });
}
pk_status pk_reduce_max(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out) {
  return guarded([&] { return reduce("pk_reduce_max", stream, PK_REDUCE_MAX, in, out, nullptr); });
}
pk_status pk_reduce_argmin(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out) {
  return guarded([&] { return reduce("pk_reduce_argmin", stream, PK_REDUCE_ARGMIN, in, out, nullptr); });
}
pk_status pk_reduce_argmax(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out) {
  return guarded([&] { return reduce("pk_reduce_argmax", stream, PK_REDUCE_ARGMAX, in, out, nullptr); });
}
pk_status pk_reduce_axis(pk_stream_t stream, pk_reduce_op op, const pk_tensor* in, int32_t axis, const pk_tensor* out,
                         const pk_reduce_options* opt) {
  return guarded([&] { return reduce_axis(stream, enum_value(op), in, axis, out, opt); });
}
pk_status pk_segmented_reduce(pk_stream_t stream, pk_reduce_op op, const pk_tensor* in, const pk_tensor* offsets,
                              const pk_tensor* out, const pk_reduce_options* opt) {
  return guarded([&] { return segmented(stream, enum_value(op), in, offsets, out, opt); });
}
pk_status pk_reduce_mean_var(pk_stream_t stream, const pk_tensor* in, const pk_tensor* mean, const pk_tensor* var,
                             int32_t correction) {
  return guarded([&] { return mean_var(stream, in, mean, var, correction); });
}
pk_status pk_softmax(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y) {
  return guarded([&] { return rows_op("pk_softmax", stream, x, y); });
}
pk_status pk_log_softmax(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y) {
  return guarded([&] { return rows_op("pk_log_softmax", stream, x, y); });
}
pk_status pk_layer_norm(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y, const pk_tensor* weight,
                        const pk_tensor* bias, double eps, float* mean, float* rstd) {
  return guarded([&] { return norm(true, stream, x, y, weight, bias, eps, mean, rstd); });
}
pk_status pk_rms_norm(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y, const pk_tensor* weight, double eps,
                      float* rstd) {
  return guarded([&] { return norm(false, stream, x, y, weight, nullptr, eps, nullptr, rstd); });
}
pk_status pk_row_mean_var(pk_stream_t stream, const pk_tensor* x, const pk_tensor* mean, const pk_tensor* var,
                          int32_t correction) {
  return guarded([&] { return row_mean_var(stream, x, mean, var, correction); });
}

}  // extern "C"
