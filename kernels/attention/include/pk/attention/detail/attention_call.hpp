// The type-erased arguments the dispatcher (compiled once) passes to the per-target launch code, and
// the kernel's parameter block.
#pragma once
#include <pk/attention/attention.hpp>
#include <pk/runtime.hpp>

#include <cstdint>

namespace pk::attention {

//! Kernel parameters. Strides in elements; a row is one token of one head.
struct fwd_params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  //!< null: not written
  std::int64_t q_batch = 0, q_row = 0, q_head = 0;
  std::int64_t k_batch = 0, k_row = 0, k_head = 0;
  std::int64_t v_batch = 0, v_row = 0, v_head = 0;
  std::int64_t o_batch = 0, o_row = 0, o_head = 0;
  std::int64_t lse_batch = 0, lse_head = 0;  //!< lse[b*lse_batch + h*lse_head + token]
  const std::int32_t* cu_q = nullptr;        //!< varlen offsets (null: fixed length)
  const std::int32_t* cu_k = nullptr;
  int seqlen_q = 0, seqlen_k = 0;            //!< fixed length
  int group = 1;                             //!< heads_q / heads_kv
  int window_left = -1, window_right = -1;   //!< -1: unbounded
  float scale_log2 = 0;                      //!< softmax scale * log2(e)
  int l2_group = 1;                          //!< (head, batch) entries whose K/V share L2 (block order, ws_wgmma_tma)
};

struct fwd_call {
  const stream* s = nullptr;
  int policy = 0;  //!< index into candidates(family, ws_compiled(target), head_dim)
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  //! Extents of the rank-4 views [batch, tokens, heads, head_dim] (varlen: batch 1, packed tokens), for
  //! the tensor maps of the warp-specialized strategy.
  std::int64_t batch_q = 1, q_tokens = 0, k_tokens = 0, heads_q = 0, heads_kv = 0;
  fwd_params p;
};

}  // namespace pk::attention
