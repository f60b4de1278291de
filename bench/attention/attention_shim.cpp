// extern "C" entry points for the Python benchmark driver (ctypes): pk::attention_forward on a CUDA
// stream, q/k/v/out as strided [batch, seqlen, heads, head_dim] bf16/f16 tensors in device memory.
#include <pk/attention/attention.hpp>
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
pk::tensor_view view(const void* p, int type, const std::int64_t* shape, const std::int64_t* stride) {
  pk::tensor_view t;
  t.data = p;
  t.type = type == 0 ? pk::dtype::bf16 : pk::dtype::f16;
  t.rank = 4;
  for (int i = 0; i < 4; ++i) {
    t.shape[i] = shape[i];
    t.stride[i] = stride[i];
  }
  return t;
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
}
