// The type-erased arguments the dispatchers (compiled once) pass to the per-target launch code.
#pragma once
#include <pk/runtime.hpp>
#include <pk/tensor.hpp>

#include <cstdint>

namespace pk::reduction {

//! Where segment i of a per-segment reduction lies: offsets[i] .. offsets[i+1] (offsets != null), or
//! the outer index i decomposed over outer_shape (row-major) with `len` elements `axis_stride` apart.
struct seg_map {
  //! Outer dimensions of a reduce_axis call: the tensor's less the reduced axis.
  static constexpr int max_outer_rank = tensor_view::max_rank - 1;
  const std::int64_t* offsets = nullptr;
  int outer_rank = 0;
  std::int64_t outer_shape[max_outer_rank] = {1, 1, 1};
  std::int64_t in_stride[max_outer_rank] = {0, 0, 0};
  std::int64_t out_stride[max_outer_rank] = {0, 0, 0};
  std::int64_t len = 0;
  std::int64_t axis_stride = 1;
};

enum class call_kind : std::uint8_t {
  device,     //!< single-pass device-wide reduction
  segments,   //!< a group of threads per segment (segment_candidates[policy])
  strided,    //!< a thread per output
  split,      //!< segmented (offsets): an even split of the elements over the grid (split_candidates[policy])
  mean_var,   //!< device-wide Welford
};
//! reduce_op as a plain integer for the per-target code (same enumerators as pk::reduce_op).
enum class op_code : std::uint8_t { sum, prod, min, max, argmin, argmax };

struct reduce_call {
  const stream* s = nullptr;
  call_kind kind = call_kind::device;
  op_code op = op_code::sum;
  int policy = 0;       //!< index into the candidate list of the kind
  unsigned grid = 1;    //!< blocks
  const void* in = nullptr;
  std::int64_t n = 0;   //!< elements (device-wide) or segments
  void* out = nullptr;
  void* out2 = nullptr;         //!< mean_var: the variance
  void* partials = nullptr;     //!< grid accumulators (workspace)
  unsigned* ticket = nullptr;   //!< zero between calls (workspace); split: one per block
  void* partials2 = nullptr;    //!< split: the second array of `grid` accumulators
  seg_map map;
  std::int64_t correction = 0;  //!< mean_var
  const char* type_name = "";   //!< "f32": part of the instance name
};

//! The reproducible sum: workspace layout (all zero-initialised counters stay zero between calls).
struct repro_call {
  const stream* s = nullptr;
  int policy = 0;
  unsigned grid = 1;
  const void* in = nullptr;
  std::int64_t n = 0;
  void* out = nullptr;
  unsigned* group_tickets = nullptr;  //!< one per group
  unsigned* top_ticket = nullptr;
  void* chunk_sums = nullptr;         //!< one per chunk
  void* group_sums = nullptr;         //!< one per group
  const char* type_name = "";
};

enum class row_kind : std::uint8_t { softmax, log_softmax, layer_norm, rms_norm, mean_var };

//! Row operations over the last axis of [rows, cols] with row strides (norm.hpp).
struct rows_call {
  const stream* s = nullptr;
  row_kind kind = row_kind::softmax;
  //! Streaming policies: 16-byte vectors of each row's head a group keeps in shared memory between its passes
  //! (dynamic shared memory: groups per block x this x 16 bytes; at most a block's shared memory, 14592
  //! vectors on the largest devices); 0: none. In the padding after `kind`, so that every other member keeps
  //! its offset in the kernels' parameters: with one more 8-byte member at the end, ptxas (sm_90a) gave some
  //! on-chip kernels other register counts and the H100 ran the unchanged on-chip kernels 6-25% slower.
  std::uint16_t cache_vectors = 0;
  int policy = 0;  //!< index into row_candidates
  unsigned grid = 1;
  //! Every row start of x and y, weight and bias are 16-byte aligned: the on-chip kernel's vector loads
  //! and stores apply (the stream kernel aligns per row itself).
  bool vectors = false;
  const void* x = nullptr;
  void* y = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* stat0 = nullptr;  //!< layer_norm: fp32 mean; mean_var: mean (accumulator type)
  void* stat1 = nullptr;  //!< layer_norm/rms_norm: fp32 rstd; mean_var: variance (accumulator type)
  std::int64_t rows = 0, cols = 0, x_stride = 0, y_stride = 0;
  double eps = 0;
  std::int64_t correction = 0;
  const char* type_name = "";
};

}  // namespace pk::reduction

#if defined(PK_DETAIL_TARGET_NS)
namespace pk {
inline namespace PK_DETAIL_TARGET_NS {
namespace impl {
using reduction::reduce_call;
using reduction::repro_call;
using reduction::rows_call;
}  // namespace impl
}  // namespace PK_DETAIL_TARGET_NS
}  // namespace pk
#endif
