// Attention forward: public API.
//
//   pk::attention_args a;
//   a.q = {q_ptr, pk::dtype::bf16, {batch, seqlen_q, heads_q, head_dim}, {sq*hq*d, hq*d, d, 1}};
//   a.k = ...; a.v = ...; a.out = ...;          // k, v: [batch, seqlen_k, heads_kv, head_dim]
//   a.causal = true;
//   if (auto st = pk::attention_forward(s, a); !st) std::cerr << st.to_string();
//
// Layout [batch, seqlen, heads, head_dim], the last dimension contiguous, other strides free (in
// elements, multiples of 8 so that rows are 16-byte aligned). Variable-length batches: packed tokens
// [total, heads, head_dim] (batch dimension 1, its stride ignored) plus cumulative offsets
// cu_seqlens_q/k (batch + 1 int32 in device memory) and the maximum lengths. Masks are runtime
// parameters: causal (aligned bottom-right when seqlen_q != seqlen_k: query i sees keys
// j <= i + seqlen_k - seqlen_q, as FlashAttention 2.1+), sliding window (left, right; -1 unbounded).
// Fully masked rows give output 0 and LSE -inf. Work is asynchronous on the stream.
#pragma once
#include <pk/archdb/planner.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>
#include <pk/tensor.hpp>

#include <cstdint>
#include <string>

namespace pk {

struct attention_args {
  tensor_view q;    //!< rank 4: [batch, seqlen_q, heads_q, head_dim]
  tensor_view k;    //!< [batch, seqlen_k, heads_kv, head_dim]
  tensor_view v;    //!< [batch, seqlen_k, heads_kv, head_dim]
  tensor_view out;  //!< [batch, seqlen_q, heads_q, head_dim], the input dtype (its data is written)
  //! Optional fp32 log-sum-exp (natural log), contiguous: [batch, heads_q, seqlen_q]; varlen [heads_q, total_q].
  float* lse = nullptr;
  float softmax_scale = 0;  //!< 0 = 1/sqrt(head_dim); must be positive and finite otherwise
  bool causal = false;      //!< bottom-right aligned; sets window_right to 0
  int window_left = -1;     //!< keys more than window_left before the diagonal are masked (-1: none)
  int window_right = -1;    //!< keys more than window_right after the diagonal are masked (-1: none)
  // Variable length (both null for fixed-length batches):
  const std::int32_t* cu_seqlens_q = nullptr;  //!< [batch + 1], device memory, cu[0] == 0
  const std::int32_t* cu_seqlens_k = nullptr;  //!< [batch + 1]
  int varlen_batch = 0;    //!< number of sequences
  int max_seqlen_q = 0;
  int max_seqlen_k = 0;
  //! Name of a compiled candidate policy to run instead of the planner's choice (tuning, benchmarks:
  //! e.g. "attn_fwd_bf16_d128_b128x64_t128_s1"); null: the plan. Unknown or not fitting: unsupported.
  const char* policy = nullptr;
};

//! Runs attention forward on `s`. Bad input gives invalid_argument / unsupported naming the argument.
status attention_forward(const stream& s, const attention_args& args);

namespace attention {

//! How the forward pass is computed. Callers see it only in the plan; new strategies (a Hopper
//! wgmma + TMA warp-specialized kernel) are added beside the existing one behind the same API.
enum class strategy : std::uint8_t {
  tiled_mma,  //!< FlashAttention-2 style: warps split the query tile; portable MMA atoms (mma.sync/MFMA/WMMA)
};
const char* to_string(strategy s) noexcept;

//! What the planner needs to know about a call (no pointers).
struct attention_problem {
  dtype type = dtype::bf16;
  int batch = 1;
  int heads_q = 1, heads_kv = 1;
  int head_dim = 128;
  std::int64_t seqlen_q = 1, seqlen_k = 1;  //!< varlen: the maximum lengths
  bool causal = false;
  int window_left = -1, window_right = -1;
};

//! The planner's choice: strategy, the policy (candidate) among the ones compiled for the device's arch
//! family, the grid, and `why` (limits, occupancy, waves over SMs, predicted time). index < 0: nothing fits.
struct attention_plan {
  strategy strat = strategy::tiled_mma;
  archdb::plan choice;
  unsigned grid_x = 0, grid_y = 0, grid_z = 0;
  int block_threads = 0;
  std::int64_t smem_bytes = 0;
};

attention_plan plan(const archdb::device_desc& device, const attention_problem& problem);

}  // namespace attention

//! The plan pk::attention_forward would use on `device` (`pk plan attention` prints `why`).
archdb::plan plan_attention(const archdb::device_desc& device, const attention::attention_problem& problem);

}  // namespace pk
