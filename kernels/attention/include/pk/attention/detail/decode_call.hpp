// Attention over a KV cache: the kernel parameter block and the type-erased call the dispatcher (compiled
// once) passes to the per-target launch code.
#pragma once
#include <pk/attention/decode.hpp>
#include <pk/attention/decode_policy.hpp>
#include <pk/runtime.hpp>

#include <cstdint>

namespace pk::attention {

//! A KV cache as the kernels index it: decode reads it, the append writes it. Strides in elements of the
//! cache's dtype; paged [page][slot][head_kv][d], contiguous [batch][position][head_kv][d] (page b is
//! sequence b, slot the position).
struct kv_cache_params {
  void* k = nullptr;
  void* v = nullptr;
  std::int64_t k_page = 0, k_row = 0, k_head = 0;  //!< contiguous: k_page is the batch stride
  std::int64_t v_page = 0, v_row = 0, v_head = 0;
  const std::int32_t* block_table = nullptr;  //!< null: contiguous
  std::int64_t table_row = 0;                 //!< elements between sequences' table rows
  int pages_per_seq = 0;                      //!< the table's columns
  int page_shift = 0;                         //!< log2(page_size) (paged)
  std::int64_t slot_mask = 0;                 //!< page_size - 1 (paged), all ones (contiguous)
  std::int64_t num_pages = 0;                 //!< pages in the cache (contiguous: batch)
  std::int64_t capacity = 0;                  //!< positions per sequence
  const std::int32_t* seqlens = nullptr;
  const float* k_scale = nullptr;  //!< FP8: per KV head (null: 1)
  const float* v_scale = nullptr;
  kv_format format = kv_format::same;
};

//! Kernel parameters. Strides in elements of their tensors.
struct decode_params {
  const void* q = nullptr;
  void* o = nullptr;
  float* lse = nullptr;       //!< null: not written
  float* o_part = nullptr;    //!< splits > 1: [split][batch][heads_q][seqlen_q][head_dim] fp32, normalised
  float* lse_part = nullptr;  //!< splits > 1: [split][batch][heads_q][seqlen_q]
  std::int64_t q_batch = 0, q_row = 0, q_head = 0;
  std::int64_t o_batch = 0, o_row = 0, o_head = 0;
  kv_cache_params cache;
  int heads_q = 1, heads_kv = 1, group = 1, seqlen_q = 1;
  int rows = 1;    //!< packed rows per (sequence, KV head): seqlen_q * group; row t is query t / group, head t % group
  int splits = 1;  //!< key splits per sequence (gridDim.x)
  int window_left = -1, window_right = -1;
  float scale_log2 = 0;
  std::int32_t* error = nullptr;  //!< optional: set to 1 on a slot outside the cache
};

//! kv_cache_append's parameters: new token t of sequence b goes to position seqlens[b] + t.
struct append_params {
  const void* k_new = nullptr;
  const void* v_new = nullptr;
  std::int64_t kn_batch = 0, kn_row = 0, kn_head = 0;
  std::int64_t vn_batch = 0, vn_row = 0, vn_head = 0;
  kv_cache_params cache;
  int batch = 1, new_tokens = 1, heads_kv = 1;
  std::int32_t* bad = nullptr;    //!< workspace flag: the check kernel sets it, the write kernel reads it
  std::int32_t* error = nullptr;  //!< the caller's optional flag
};

struct decode_call {
  const stream* s = nullptr;
  int policy = 0;  //!< index into decode_candidates(family, head_dim)
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  int batch = 1;
  decode_params p;
  // kv_cache_append (op == append): the same instance TU launches it.
  bool append = false;
  append_params ap;
};

}  // namespace pk::attention
