// extern "C" entry points for the Python benchmark drivers (ctypes): pk::attention_forward on a CUDA
// stream, q/k/v/out as strided [batch, seqlen, heads, head_dim] bf16/f16 tensors in device memory
// (bench_attention.py); pk::attention_decode / pk::kv_cache_append over paged or contiguous KV caches and
// the decode planner's split count (bench_decode.py).
#include <pk/attention/attention.hpp>
#include <pk/attention/decode.hpp>
#include <pk/runtime.hpp>

#include <cstdint>
#include <cstring>
#include <string>

namespace {
void copy_err(const std::string& m, char* err, int n) {
  if (err == nullptr || n <= 0) return;
  std::strncpy(err, m.c_str(), static_cast<std::size_t>(n - 1));
  err[n - 1] = '\0';
}
// Type codes of every entry: 0 = bf16, 1 = f16, 2 = f8e4m3fn, 3 = f8e4m3fnuz (the last two: KV caches only).
bool to_dtype(int type, pk::dtype& out) {
  switch (type) {
    case 0: out = pk::dtype::bf16; return true;
    case 1: out = pk::dtype::f16; return true;
    case 2: out = pk::dtype::f8e4m3fn; return true;
    case 3: out = pk::dtype::f8e4m3fnuz; return true;
    default: return false;
  }
}
pk::tensor_view view(const void* p, pk::dtype type, const std::int64_t* shape, const std::int64_t* stride) {
  pk::tensor_view t;
  t.data = p;
  t.type = type;
  t.rank = 4;
  for (int i = 0; i < 4; ++i) {
    t.shape[i] = shape[i];
    t.stride[i] = stride[i];
  }
  return t;
}
pk::tensor_view view(const void* p, int type, const std::int64_t* shape, const std::int64_t* stride) {
  return view(p, type == 0 ? pk::dtype::bf16 : pk::dtype::f16, shape, stride);
}
int fail(pk::errc e, const std::string& m, char* err, int n) {
  copy_err(m, err, n);
  return static_cast<int>(e);
}
int wrap_stream(void* cuda_stream, int ordinal, pk::stream& s, char* err, int n) {
  if (auto st = pk::stream::cuda(cuda_stream, ordinal, s); !st) return fail(st.code(), st.to_string(), err, n);
  return 0;
}
//! The cache of the decode/append entries: k/v [num_pages, page_size, heads_kv, head_dim] with an int32
//! block table [table_rows, table_cols] (row stride table_row_stride elements, last stride 1), or
//! contiguous [batch, capacity, heads_kv, head_dim] when `table` is null.
int make_cache(int kv_type, const void* k, const void* v, const std::int64_t* kv_shape,
               const std::int64_t* k_stride, const std::int64_t* v_stride, const std::int32_t* table,
               std::int64_t table_rows, std::int64_t table_cols, std::int64_t table_row_stride,
               const std::int32_t* seqlens, const float* k_scale, const float* v_scale, pk::kv_cache& c,
               char* err, int n) {
  pk::dtype t{};
  if (!to_dtype(kv_type, t)) return fail(pk::errc::invalid_argument, "kv_type: not a type code (0..3)", err, n);
  c.k = view(k, t, kv_shape, k_stride);
  c.v = view(v, t, kv_shape, v_stride != nullptr ? v_stride : k_stride);
  if (table != nullptr) {
    c.block_table.data = table;
    c.block_table.type = pk::dtype::i32;
    c.block_table.rank = 2;
    c.block_table.shape[0] = table_rows;
    c.block_table.shape[1] = table_cols;
    c.block_table.stride[0] = table_row_stride;
    c.block_table.stride[1] = 1;
  }
  c.seqlens = seqlens;
  c.k_scale = k_scale;
  c.v_scale = v_scale;
  return 0;
}
}  // namespace

extern "C" {

//! type: 0 = bf16, 1 = f16. Shapes/strides: 4 int64 each (elements). policy: a candidate name or null
//! (the plan's choice). Returns 0 or the pk::errc value (message in err).
int pk_attention_forward(void* cuda_stream, int type, const void* q, const std::int64_t* q_shape,
                         const std::int64_t* q_stride, const void* k, const void* v, const std::int64_t* kv_shape,
                         const std::int64_t* kv_stride, void* out, float* lse, int causal, const char* policy,
                         char* err, int err_len) {
  pk::stream s;
  if (auto st = pk::stream::cuda(cuda_stream, 0, s); !st) {
    copy_err(st.to_string(), err, err_len);
    return static_cast<int>(st.code());
  }
  pk::attention_args a;
  a.q = view(q, type, q_shape, q_stride);
  a.k = view(k, type, kv_shape, kv_stride);
  a.v = view(v, type, kv_shape, kv_stride);
  a.out = view(out, type, q_shape, q_stride);
  a.lse = lse;
  a.causal = causal != 0;
  a.policy = policy;
  const pk::status st = pk::attention_forward(s, a);
  if (!st) copy_err(st.to_string(), err, err_len);
  return static_cast<int>(st.code());
}

//! type: 0 = bf16, 1 = f16; policy: a candidate name or null (the plan's choice). for a problem on the stream's device.
int pk_attention_plan(void* cuda_stream, int type, int batch, int heads, int head_dim, std::int64_t seqlen, int causal,
                      char* out, int out_len) {
  pk::stream s;
  if (auto st = pk::stream::cuda(cuda_stream, 0, s); !st) {
    copy_err(st.to_string(), out, out_len);
    return static_cast<int>(st.code());
  }
  pk::attention::attention_problem p;
  p.type = type == 0 ? pk::dtype::bf16 : pk::dtype::f16;
  p.batch = batch;
  p.heads_q = p.heads_kv = heads;
  p.head_dim = head_dim;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.causal = causal != 0;
  const auto pl = pk::attention::plan(s.device(), p);
  std::string fitting;
  for (const auto& c : pl.choice.all)
    if (c.fits) fitting += (fitting.empty() ? "" : ",") + c.name;
  copy_err(pl.choice.name + "|" + fitting + "|" + pl.choice.why, out, out_len);
  return 0;
}

//! pk::attention_decode on a CUDA stream of device `ordinal`. q/out: [batch, seqlen_q, heads_q, head_dim] of
//! q_type (0 = bf16, 1 = f16), 4 int64 shape and strides each (elements; out has q's shape, its own strides).
//! The cache (kv_type 0..3, see to_dtype): k/v [num_pages, page_size, heads_kv, head_dim] with the int32 block
//! table [table_rows, table_cols] (row stride table_row_stride), or contiguous [batch, capacity, heads_kv,
//! head_dim] when table is null; v_stride null: k's strides. seqlens: device int32 [batch]. k_scale/v_scale:
//! device fp32 [heads_kv] or null (FP8 only). lse: fp32 [batch, heads_q, seqlen_q] or null. softmax_scale 0:
//! 1/sqrt(head_dim). num_splits 0: the planner's. error: device int32 or null. policy: a decode candidate's
//! name or null (the plan's choice). Returns 0 or the pk::errc value (message in err).
int pk_attention_decode(void* cuda_stream, int ordinal, int q_type, const void* q, const std::int64_t* q_shape,
                        const std::int64_t* q_stride, void* out, const std::int64_t* out_stride, float* lse,
                        int kv_type, const void* k, const void* v, const std::int64_t* kv_shape,
                        const std::int64_t* k_stride, const std::int64_t* v_stride, const std::int32_t* table,
                        std::int64_t table_rows, std::int64_t table_cols, std::int64_t table_row_stride,
                        const std::int32_t* seqlens, const float* k_scale, const float* v_scale, float softmax_scale,
                        int causal, int window_left, int window_right, int num_splits, std::int32_t* error,
                        const char* policy, char* err, int err_len) {
  pk::stream s;
  if (int rc = wrap_stream(cuda_stream, ordinal, s, err, err_len)) return rc;
  if (q_type != 0 && q_type != 1) return fail(pk::errc::invalid_argument, "q_type: 0 (bf16) or 1 (f16)", err, err_len);
  pk::decode_args a;
  a.q = view(q, q_type, q_shape, q_stride);
  a.out = view(out, q_type, q_shape, out_stride != nullptr ? out_stride : q_stride);
  if (int rc = make_cache(kv_type, k, v, kv_shape, k_stride, v_stride, table, table_rows, table_cols,
                          table_row_stride, seqlens, k_scale, v_scale, a.cache, err, err_len))
    return rc;
  a.lse = lse;
  a.softmax_scale = softmax_scale;
  a.causal = causal != 0;
  a.window_left = window_left;
  a.window_right = window_right;
  a.num_splits = num_splits;
  a.error = error;
  a.policy = policy;
  const pk::status st = pk::attention_decode(s, a);
  if (!st) copy_err(st.to_string(), err, err_len);
  return static_cast<int>(st.code());
}

//! pk::kv_cache_append: k_new/v_new [batch, new_tokens, heads_kv, head_dim] of new_type (0..3; bf16/f16 for an
//! FP8 cache: quantized with 1/scale), 4 int64 shape and strides each (v_new_stride null: k_new's); the cache as
//! in pk_attention_decode, seqlens = tokens already in it. Returns 0 or the pk::errc value (message in err).
int pk_kv_cache_append(void* cuda_stream, int ordinal, int kv_type, void* k, void* v, const std::int64_t* kv_shape,
                       const std::int64_t* k_stride, const std::int64_t* v_stride, const std::int32_t* table,
                       std::int64_t table_rows, std::int64_t table_cols, std::int64_t table_row_stride,
                       const std::int32_t* seqlens, const float* k_scale, const float* v_scale, int new_type,
                       const void* k_new, const void* v_new, const std::int64_t* new_shape,
                       const std::int64_t* k_new_stride, const std::int64_t* v_new_stride, std::int32_t* error,
                       char* err, int err_len) {
  pk::stream s;
  if (int rc = wrap_stream(cuda_stream, ordinal, s, err, err_len)) return rc;
  pk::kv_append_args a;
  if (int rc = make_cache(kv_type, k, v, kv_shape, k_stride, v_stride, table, table_rows, table_cols,
                          table_row_stride, seqlens, k_scale, v_scale, a.cache, err, err_len))
    return rc;
  pk::dtype nt{};
  if (!to_dtype(new_type, nt)) return fail(pk::errc::invalid_argument, "new_type: not a type code (0..3)", err, err_len);
  a.k_new = view(k_new, nt, new_shape, k_new_stride);
  a.v_new = view(v_new, nt, new_shape, v_new_stride != nullptr ? v_new_stride : k_new_stride);
  a.error = error;
  const pk::status st = pk::kv_cache_append(s, a);
  if (!st) copy_err(st.to_string(), err, err_len);
  return static_cast<int>(st.code());
}

//! pk::attention::plan_decode for a problem on the stream's device (q_type 0/1, kv_type 0..3, page_size 0:
//! contiguous cache, num_splits 0: the planner chooses). info (int[3], may be null) gets the plan's splits,
//! rows and m_blocks; out gets "name|fitting candidates, comma-separated|why" (name empty: nothing fits).
//! Returns the plan's split count (>= 1), or minus the pk::errc value (message in out).
int pk_attention_decode_plan(void* cuda_stream, int ordinal, int q_type, int kv_type, int batch, int heads_q,
                             int heads_kv, int head_dim, int seqlen_q, std::int64_t context, int page_size, int causal,
                             int window_left, int window_right, int num_splits, int* info, char* out, int out_len) {
  pk::stream s;
  if (int rc = wrap_stream(cuda_stream, ordinal, s, out, out_len)) return -rc;
  pk::attention::decode_problem p;
  if (q_type != 0 && q_type != 1) return -fail(pk::errc::invalid_argument, "q_type: 0 (bf16) or 1 (f16)", out, out_len);
  if (!to_dtype(kv_type, p.kv_type)) return -fail(pk::errc::invalid_argument, "kv_type: not a type code (0..3)", out, out_len);
  p.type = q_type == 0 ? pk::dtype::bf16 : pk::dtype::f16;
  p.batch = batch;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.head_dim = head_dim;
  p.seqlen_q = seqlen_q;
  p.context = context;
  p.page_size = page_size;
  p.causal = causal != 0;
  p.window_left = window_left;
  p.window_right = window_right;
  p.num_splits = num_splits;
  const pk::attention::decode_plan pl = pk::attention::plan_decode(s.device(), p);
  if (info != nullptr) {
    info[0] = pl.splits;
    info[1] = pl.rows;
    info[2] = pl.m_blocks;
  }
  std::string fitting;
  for (const auto& c : pl.choice.all)
    if (c.fits) fitting += (fitting.empty() ? "" : ",") + c.name;
  copy_err(pl.choice.name + "|" + fitting + "|" + pl.choice.why, out, out_len);
  return pl.splits;
}
}
