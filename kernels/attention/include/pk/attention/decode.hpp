// Attention over a KV cache (decode, speculative decoding, chunked appends) and the cache append.
//
//   pk::kv_cache c;
//   c.k = {k_pages, pk::dtype::bf16, 4, {num_pages, page_size, heads_kv, head_dim}, {...}};  c.v = ...;
//   c.block_table = {table, pk::dtype::i32, 2, {batch, max_pages_per_seq}, {max_pages_per_seq, 1}};
//   c.seqlens = cache_seqlens;                      // device int32 [batch]
//   pk::decode_args a;  a.q = ...;  a.out = ...;  a.cache = c;  a.causal = true;
//   if (auto st = pk::attention_decode(s, a); !st) std::cerr << st.to_string();
//
// Argument rules:
//  - q, out: [batch, seqlen_q, heads_q, head_dim], rank 4, seqlen_q 1..16 (max_decode_seqlen_q; 0 computes
//    nothing and succeeds, as an empty batch does); the last
//    dimension contiguous, the others non-negative multiples of 8 elements, data 16-byte aligned; dtypes bf16
//    or f16 (out has q's dtype); head_dim 64, 128 or 256 (decode_head_dims); out's elements distinct.
//  - What a call writes (decode: out, lse, error; kv_cache_append: cache.k, cache.v, error) shares no byte
//    with what it reads or another output (checked: on address ranges, and element by element for views of
//    one shape and strides, so K and V interleaved page by page in one buffer are fine).
//  - The cache, paged: k and v [num_pages, page_size, heads_kv, head_dim] with block_table [batch,
//    max_pages_per_seq] int32 (device memory, any row stride, last stride 1): token t of sequence b is row
//    t % page_size of page block_table[b][t / page_size]. page_size a power of two from 1 to 256 (others:
//    unsupported). Contiguous (block_table.data null): k and v [batch, capacity, heads_kv, head_dim]. Strides
//    as for q in 16-byte rows (multiples of 8 elements for 16-bit caches, of 16 for FP8); heads_kv divides
//    heads_q (grouped-query attention).
//  - seqlens (device int32 [batch]): tokens in the cache for each sequence, the new ones included; 0 <=
//    seqlens[b] <= the capacity (max_pages_per_seq * page_size, or capacity). The query tokens are the last
//    seqlen_q positions of the sequence: masks are bottom-right aligned (diag = seqlens[b] - seqlen_q), as in
//    attention.hpp: query i sees cache position j iff i + diag - window_left <= j <= i + diag + window_right
//    (causal: window_right = 0; -1: no bound). A sequence with seqlens[b] = 0 gives output 0, LSE -inf.
//  - KV dtypes: the queries' dtype, or FP8 e4m3 in either variant (dtype::f8e4m3fn, OCP, NVIDIA and gfx950
//    hardware; dtype::f8e4m3fnuz, gfx942 hardware): the cache's dtype says which one it holds and is never read
//    as the other. FP8 caches take per-KV-head fp32 scales k_scale/v_scale (device [heads_kv]; null: 1.0):
//    the real value is code * scale; scales must be finite and positive (checked on the emulator). The
//    dequantization is exact (every e4m3 value is an f16). With an FP8 cache the products run on fp16: the
//    codes become fp16 in registers, and the queries are rounded to fp16 after each query row is scaled by a
//    power of two that brings its largest magnitude into fp16's top binade (exact scaling; a bf16 row keeps
//    at least bf16's precision and never overflows), which the row's scores take back.
//  - Validation of the block table and seqlens contents: on the emulator (host backend), where device memory is
//    host memory, they are checked and bad entries give invalid_argument before anything is written. On a GPU
//    they are the caller's precondition (checking would copy and synchronise); the kernels still never read or
//    write out of bounds: a page index outside [0, num_pages) or a length past the capacity makes the affected
//    output rows NaN (decode) or writes nothing (append), and sets *error (if given) to 1.
// Splits: the planner cuts each sequence's keys into splits (FlashDecoding) so that batch x heads_kv x splits
// blocks fill the device, and merges the partial results in a second kernel (workspace from
// pk::set_workspace_allocator or the stream's). `pk plan attention --context N ...` prints the choice.
#pragma once
#include <pk/archdb/planner.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>
#include <pk/tensor.hpp>

#include <array>
#include <cstdint>

namespace pk {

//! A KV cache: paged (block_table given) or contiguous per sequence.
struct kv_cache {
  tensor_view k;            //!< paged [num_pages, page_size, heads_kv, head_dim]; contiguous [batch, capacity, heads_kv, head_dim]
  tensor_view v;            //!< same shape and dtype as k
  tensor_view block_table;  //!< int32 [batch, max_pages_per_seq] (data null: contiguous cache)
  const std::int32_t* seqlens = nullptr;  //!< device int32 [batch]: tokens in the cache (decode: the new ones included)
  const float* k_scale = nullptr;         //!< FP8 only: fp32 [heads_kv] dequantization scales (null: 1.0)
  const float* v_scale = nullptr;
};

struct decode_args {
  tensor_view q;    //!< [batch, seqlen_q, heads_q, head_dim], seqlen_q 1..16
  tensor_view out;  //!< like q (its data is written)
  kv_cache cache;
  float* lse = nullptr;     //!< optional fp32 [batch, heads_q, seqlen_q], contiguous
  float softmax_scale = 0;  //!< 0 = 1/sqrt(head_dim)
  bool causal = false;      //!< among the new tokens, bottom-right aligned (window_right = 0)
  int window_left = -1;
  int window_right = -1;
  int num_splits = 0;             //!< 0: the planner's; else 1..max_decode_splits (at most one per key tile)
  //! The longest sequence (seqlens' maximum), for the planner's split count: 0 = the cache's capacity. The
  //! lengths themselves live in device memory; the kernels read them, the host does not.
  int max_seqlen_k = 0;
  std::int32_t* error = nullptr;  //!< optional device int32: set to 1 when the GPU finds a bad slot (see above)
  const char* policy = nullptr;   //!< a compiled decode candidate's name instead of the plan's (tuning)
};

//! Runs attention of q over the cache on `s`. Bad input gives invalid_argument / unsupported naming the argument.
status attention_decode(const stream& s, const decode_args& args);

struct kv_append_args {
  //! seqlens: tokens already in the cache; new token t of sequence b goes to position seqlens[b] + t. The
  //! caller then decodes with seqlens + new_tokens (pk does not update them).
  kv_cache cache;
  tensor_view k_new;  //!< [batch, new_tokens, heads_kv, head_dim]: the cache's dtype, or bf16/f16 for FP8 caches
  tensor_view v_new;
  std::int32_t* error = nullptr;  //!< optional device int32: 1 when a slot is out of range (nothing written)
};

//! Writes k_new/v_new into the cache (quantizing to FP8 with 1/scale, round to nearest even, saturating at the
//! format's largest finite value, when the cache is FP8). A slot out of range (page index outside [0,
//! num_pages), a position past the table's capacity) is invalid_argument on the emulator; on a GPU nothing is
//! written and *error is set.
status kv_cache_append(const stream& s, const kv_append_args& args);

inline constexpr int max_decode_seqlen_q = 16;
inline constexpr int max_decode_splits = 512;
inline constexpr int max_page_size = 256;

namespace attention {

//! What the decode planner needs (no pointers).
struct decode_problem {
  dtype type = dtype::bf16;     //!< queries
  dtype kv_type = dtype::bf16;  //!< cache
  int batch = 1, heads_q = 1, heads_kv = 1, head_dim = 128;
  int seqlen_q = 1;
  std::int64_t context = 1;  //!< keys per sequence (the planner's model: the longest)
  int page_size = 0;         //!< 0: contiguous cache
  bool causal = false;
  int window_left = -1, window_right = -1;
  int num_splits = 0;  //!< forced (0: choose)
};

struct decode_plan {
  archdb::plan choice;   //!< the policy (candidate) and `why`
  int splits = 1;        //!< key splits per sequence
  int rows = 1;          //!< packed query rows per KV head: seqlen_q x heads_q / heads_kv
  int m_blocks = 1;      //!< blocks of packed rows per (sequence, KV head)
};

decode_plan plan_decode(const archdb::device_desc& device, const decode_problem& problem);

}  // namespace attention
}  // namespace pk
