// Attention forward: public API.
//
//   pk::attention_args a;
//   a.q = {q_ptr, pk::dtype::bf16, 4, {batch, seqlen_q, heads_q, head_dim}, {sq*hq*d, hq*d, d, 1}};
//   a.k = ...; a.v = ...; a.out = ...;          // k, v: [batch, seqlen_k, heads_kv, head_dim]
//   a.causal = true;
//   if (auto st = pk::attention_forward(s, a); !st) std::cerr << st.to_string();
//
// Argument rules (the C API, pk/pk.h, has the same ones):
//  - Tensors: q, out [batch, seqlen_q, heads_q, head_dim]; k, v [batch, seqlen_k, heads_kv, head_dim].
//    Rank 4, or rank 3 [tokens, heads, head_dim], which is rank 4 with batch 1. Strides in elements:
//    the last dimension contiguous, the others non-negative multiples of 8 (16-byte rows) and free;
//    the stride of a dimension of extent 1 is not used. Data 16-byte aligned. dtypes bf16, f16 (all
//    four the same); head_dim 32, 64, 96, 128, 192 or 256; heads_kv divides heads_q (grouped-query
//    attention); batch and heads_q <= 65535; seqlen <= 2^31 - 1 less one tile (32-bit positions);
//    out's elements distinct (no stride 0, no overlapping rows or heads: checked); out and lse share no
//    byte with q, k, v or each other, first to last element (checked; q, k and v may share memory).
//  - Variable length: packed tokens (rank 4 with batch 1, or rank 3 [total, heads, head_dim]) plus
//    cu_seqlens_q/k (varlen_batch + 1 int32 in device memory: cu[0] >= 0, non-decreasing, cu[batch] <=
//    the packed token count; sequence b is tokens [cu[b], cu[b+1])) and the maximum lengths
//    (max_seqlen_q/k >= every sequence's length, <= the packed token counts). The emulator checks the
//    offsets; on a GPU they are the caller's precondition (checking would copy and synchronize).
//  - LSE (optional, fp32 natural log, contiguous): [batch, heads_q, seqlen_q] of q's rank-4 view,
//    lse[(b * heads_q + h) * seqlen_q + i]. Varlen q has batch 1 and seqlen_q = total_q (its packed
//    token count), so the LSE is [heads_q, total_q] (FlashAttention's varlen layout), indexed by the
//    token's packed position.
//  - Masks (runtime parameters), bottom-right aligned: with diag = seqlen_k - seqlen_q (per sequence),
//    query i sees key j iff  i + diag - window_left <= j <= i + diag + window_right  (a bound of -1 is
//    absent; causal is window_right = 0, as FlashAttention 2.1+). Windows are any value >= -1 up to
//    INT_MAX. A bound that reaches past the sequence masks nothing and is treated as -1: window_left
//    >= seqlen_k - 1 and window_right >= seqlen_q - 1 (varlen: the packed token counts, which bound
//    every sequence), exactly the conditions under which no row loses a key, so the meaning of every
//    row is kept (FlashAttention clamps at seqlen_k for both, which changes rows when seqlen_q >
//    seqlen_k + 1).
//  - softmax_scale: 0 = 1/sqrt(head_dim), else positive and finite (also times log2(e)).
// Fully masked rows give output 0 and LSE -inf. Work is asynchronous on the stream. Bad input gives
// invalid_argument (or unsupported for valid requests pk has no kernel for) naming the argument.
#pragma once
#include <pk/archdb/planner.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>
#include <pk/tensor.hpp>

#include <cstdint>
#include <string>

namespace pk {

struct attention_args {
  tensor_view q;    //!< [batch, seqlen_q, heads_q, head_dim] (rank 4, or rank 3 without batch: batch 1)
  tensor_view k;    //!< [batch, seqlen_k, heads_kv, head_dim]
  tensor_view v;    //!< [batch, seqlen_k, heads_kv, head_dim]
  tensor_view out;  //!< [batch, seqlen_q, heads_q, head_dim], the input dtype (its data is written)
  //! Optional fp32 log-sum-exp (natural log), contiguous [batch, heads_q, seqlen_q] of q's rank-4 view:
  //! varlen (batch 1, seqlen_q = total_q) [heads_q, total_q].
  float* lse = nullptr;
  float softmax_scale = 0;  //!< 0 = 1/sqrt(head_dim); must be positive and finite otherwise
  bool causal = false;      //!< bottom-right aligned; sets window_right to 0
  int window_left = -1;     //!< keys more than window_left before the diagonal are masked (-1: none)
  int window_right = -1;    //!< keys more than window_right after the diagonal are masked (-1: none)
  // Variable length (both null for fixed-length batches):
  const std::int32_t* cu_seqlens_q = nullptr;  //!< [varlen_batch + 1], device memory, non-decreasing
  const std::int32_t* cu_seqlens_k = nullptr;  //!< [varlen_batch + 1]
  int varlen_batch = 0;    //!< number of sequences, 1..65535
  int max_seqlen_q = 0;    //!< >= every query sequence's length (the grid covers max_seqlen_q rows)
  int max_seqlen_k = 0;    //!< >= every key sequence's length (the planner's model)
  //! Name of a compiled candidate policy to run instead of the planner's choice (tuning, benchmarks:
  //! e.g. "attn_fwd_bf16_d128_b128x64_t128_s1"); null: the plan. Unknown or not fitting: unsupported.
  const char* policy = nullptr;
};

//! Runs attention forward on `s`. Bad input gives invalid_argument / unsupported naming the argument.
status attention_forward(const stream& s, const attention_args& args);

namespace attention {

//! How the forward pass is computed. Callers see it only in the plan (and the policy names).
enum class strategy : std::uint8_t {
  tiled_mma,     //!< FlashAttention-2 style: warps split the query tile; portable MMA atoms (mma.sync/MFMA/WMMA)
  ws_wgmma_tma,  //!< sm_90a: a producer warpgroup loads Q/K/V tiles with the tensor copy engine into a
                 //!< stage ring guarded by mbarriers; consumer warpgroups (64 query rows each) multiply with
                 //!< warpgroup MMAs from shared memory, P kept in registers
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
  //! Whether the code that will run has the warp-specialized (sm_90a) instances: false for a build
  //! without sm_90a code (attention_forward sets it from the stream's code target; `pk plan` assumes a
  //! build that covers the device).
  bool ws_compiled = true;
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

//! The tuning-cache bucket of a problem: head_dim, mask kind and the powers of two of seqlen_q, seqlen_k
//! and batch x heads_q (problems in one bucket share a measured winner: `pk tune attention`, PK_TUNING=tune).
std::string tuning_bucket(const attention_problem& problem);

}  // namespace attention

//! The plan pk::attention_forward would use on `device` (`pk plan attention` prints `why`).
archdb::plan plan_attention(const archdb::device_desc& device, const attention::attention_problem& problem);

}  // namespace pk
