// The C API's attention over a KV cache and the cache append, over pk/attention/decode.hpp.
#include "c_attention_common.hpp"

#include <pk/attention/decode.hpp>

#include <string>

using namespace pk::capi;
using pk::status;

namespace {

//! A rank-4 C descriptor as a pk::tensor_view: pk::attention_decode / pk::kv_cache_append apply the
//! rest of the rule (shapes, strides, dtypes) for both APIs. `layout` names the dimensions.
status to_view(const std::string& where, const pk_tensor* t, const char* layout, pk::tensor_view& v) {
  PK_TRY(check_tensor(where, t));
  if (t->rank != 4) return pk::invalid_argument(where + ": rank " + std::to_string(t->rank) + " must be 4 (" + layout + ")");
  return to_attention_view(where, *t, v);
}

//! The block table: data NULL is a contiguous cache (the descriptor's other fields are ignored), else
//! int32 of rank 2 [batch, max_pages_per_seq].
status to_block_table(const std::string& where, const pk_tensor& t, pk::tensor_view& v) {
  v = pk::tensor_view{};
  if (t.data == nullptr) return {};
  PK_TRY(check_tensor(where, &t));
  if (t.rank != 2)
    return pk::invalid_argument(where + ": rank " + std::to_string(t.rank) + " must be 2 ([batch, max_pages_per_seq])");
  PK_TRY(check_dtype(where, t, PK_DTYPE_I32));
  v.data = t.data;
  v.type = pk::dtype::i32;
  v.rank = 2;
  for (std::int32_t k = 0; k < 2; ++k) {
    v.shape[k] = t.shape[k];
    v.stride[k] = t.strides[k];
  }
  return {};
}

constexpr const char* cache_layout =
    "paged [num_pages, page_size, heads_kv, head_dim] or contiguous [batch, capacity, heads_kv, head_dim]";

status to_cache(const std::string& api, const pk_kv_cache& c, pk::kv_cache& out) {
  PK_TRY(to_view(api + ": cache.k", &c.k, cache_layout, out.k));
  PK_TRY(to_view(api + ": cache.v", &c.v, cache_layout, out.v));
  PK_TRY(to_block_table(api + ": cache.block_table", c.block_table, out.block_table));
  out.seqlens = c.seqlens;
  out.k_scale = c.k_scale;
  out.v_scale = c.v_scale;
  return {};
}

status decode(pk_stream_t stream, const pk_decode_args* a) {
  const std::string api = "pk_attention_decode";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  if (a == nullptr) return pk::invalid_argument(api + ": args: must not be null");
  pk::decode_args args;
  PK_TRY(to_view(api + ": q", &a->q, "[batch, seqlen_q, heads_q, head_dim]", args.q));
  PK_TRY(to_view(api + ": out", &a->out, "[batch, seqlen_q, heads_q, head_dim]", args.out));
  PK_TRY(to_cache(api, a->cache, args.cache));
  args.lse = a->lse;
  args.softmax_scale = a->softmax_scale;
  args.causal = a->causal != 0;
  args.window_left = a->window_left;
  args.window_right = a->window_right;
  args.num_splits = a->num_splits;
  args.max_seqlen_k = a->max_seqlen_k;
  args.error = a->error;
  args.policy = a->policy;
  return pk::attention_decode(*s, args);
}

status append(pk_stream_t stream, const pk_kv_append_args* a) {
  const std::string api = "pk_kv_cache_append";
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  if (a == nullptr) return pk::invalid_argument(api + ": args: must not be null");
  pk::kv_append_args args;
  PK_TRY(to_cache(api, a->cache, args.cache));
  PK_TRY(to_view(api + ": k_new", &a->k_new, "[batch, new_tokens, heads_kv, head_dim]", args.k_new));
  PK_TRY(to_view(api + ": v_new", &a->v_new, "[batch, new_tokens, heads_kv, head_dim]", args.v_new));
  args.error = a->error;
  return pk::kv_cache_append(*s, args);
}

}  // namespace

extern "C" {

pk_decode_args pk_decode_args_default(void) {
  const pk::decode_args d;
  pk_decode_args a{};
  a.cache.seqlens = d.cache.seqlens;
  a.cache.k_scale = d.cache.k_scale;
  a.cache.v_scale = d.cache.v_scale;
  a.lse = d.lse;
  a.softmax_scale = d.softmax_scale;
  a.causal = d.causal ? 1 : 0;
  a.window_left = d.window_left;
  a.window_right = d.window_right;
  a.num_splits = d.num_splits;
  a.max_seqlen_k = d.max_seqlen_k;
  a.error = d.error;
  a.policy = d.policy;
  return a;
}

pk_status pk_attention_decode(pk_stream_t stream, const pk_decode_args* args) {
  return guarded([&] { return decode(stream, args); });
}

pk_kv_append_args pk_kv_append_args_default(void) {
  const pk::kv_append_args d;
  pk_kv_append_args a{};
  a.cache.seqlens = d.cache.seqlens;
  a.cache.k_scale = d.cache.k_scale;
  a.cache.v_scale = d.cache.v_scale;
  a.error = d.error;
  return a;
}

pk_status pk_kv_cache_append(pk_stream_t stream, const pk_kv_append_args* args) {
  return guarded([&] { return append(stream, args); });
}

}  // extern "C"
