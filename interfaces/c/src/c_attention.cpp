// The C API's attention forward over pk/attention/attention.hpp.
#include "c_attention_common.hpp"

#include <pk/attention/attention.hpp>

#include <string>

using namespace pk::capi;
using pk::status;

namespace {

//! A C descriptor as a pk::tensor_view of the same rank: pk::attention_forward applies one rule to
//! both APIs (rank 4 [batch, seqlen, heads, head_dim], or rank 3 [tokens, heads, head_dim] as batch 1).
//! Only ranks a tensor_view holds pass here; the C++ entry point names any other rank's rule.
status to_view(const std::string& where, const pk_tensor* t, pk::tensor_view& v) {
  PK_TRY(check_tensor(where, t));
  if (t->rank != 4 && t->rank != 3)
    return pk::invalid_argument(where + ": rank " + std::to_string(t->rank) +
                                " must be 4 ([batch, seqlen, heads, head_dim]) or 3 ([tokens, heads, head_dim], batch 1)");
  return to_attention_view(where, *t, v);
}

status forward(pk_stream_t stream, const pk_attention_args* a) {
  const std::string api = "pk_attention_forward";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  if (a == nullptr) return pk::invalid_argument(api + ": args: must not be null");
  pk::attention_args args;
  PK_TRY(to_view(api + ": q", &a->q, args.q));
  PK_TRY(to_view(api + ": k", &a->k, args.k));
  PK_TRY(to_view(api + ": v", &a->v, args.v));
  PK_TRY(to_view(api + ": out", &a->out, args.out));
  args.lse = a->lse;
  args.softmax_scale = a->softmax_scale;
  args.causal = a->causal != 0;
  args.window_left = a->window_left;
  args.window_right = a->window_right;
  args.cu_seqlens_q = a->cu_seqlens_q;
  args.cu_seqlens_k = a->cu_seqlens_k;
  args.varlen_batch = a->varlen_batch;
  args.max_seqlen_q = a->max_seqlen_q;
  args.max_seqlen_k = a->max_seqlen_k;
  args.policy = a->policy;
  return pk::attention_forward(*s, args);
}

}  // namespace

extern "C" {

pk_attention_args pk_attention_args_default(void) {
  const pk::attention_args d;
  pk_attention_args a{};
  a.lse = d.lse;
  a.softmax_scale = d.softmax_scale;
  a.causal = d.causal ? 1 : 0;
  a.window_left = d.window_left;
  a.window_right = d.window_right;
  a.varlen_batch = d.varlen_batch;
  a.max_seqlen_q = d.max_seqlen_q;
  a.max_seqlen_k = d.max_seqlen_k;
  a.policy = d.policy;
  return a;
}

pk_status pk_attention_forward(pk_stream_t stream, const pk_attention_args* args) {
  return guarded([&] { return forward(stream, args); });
}

}  // extern "C"
