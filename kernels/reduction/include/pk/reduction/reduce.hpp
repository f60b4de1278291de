// Reductions: public API (device-wide, along an axis of a strided tensor, segmented, mean/variance).
//
//   pk::stream s;  pk::default_stream(s);
//   pk::device_buffer<float> x, total;  x.allocate(s, n);  total.allocate(s, 1);  ... upload ...
//   if (auto st = pk::reduce_sum(s, x.data(), n, total.data()); !st) std::cerr << st.to_string();
//   pk::reduce(s, pk::reduce_op::argmax, pk::reduction::dtype::bf16, xb, n, index_out);  // type-erased form
//
// Row operations (softmax, log_softmax, layer_norm, rms_norm, row mean/variance) are in norm.hpp; a
// user-supplied associative operator is the header-only reduce_custom.hpp.
//
// Semantics, for every backend (the host emulator included):
//  - Work is enqueued on the stream; scratch memory comes from the stream's workspace
//    (pk::detail::stream_workspace, or the pk::set_workspace_allocator hook): no size query.
//  - Device-wide reductions are one launch (single pass: the last block to finish combines the
//    per-block partials). 64-bit indexing: n may exceed 2^31.
//  - Limits: every element count (the product of a view's extents), offset ((shape - 1) * stride
//    summed over the dimensions) and byte extent (count or largest offset + 1, times the element
//    size) is computed in overflow-checked int64 arithmetic and must fit 2^63 - 1 bytes; otherwise the
//    call returns invalid_argument naming the argument and writes nothing.
//  - Accumulation: fp16/bf16/fp32 in fp32, fp64 in fp64, integers in int64. Integer sums and products
//    wrap modulo 2^64 and are then narrowed modularly to T (exact, order-independent).
//  - Identities (n == 0, empty segments): sum 0, prod 1, min +inf (integers: max()), max -inf
//    (integers: lowest()), argmin/argmax index -1. A float sum of only -0 values gives +0.
//  - NaN: sum/prod propagate as IEEE does; min/max return NaN when any element is NaN; argmin/argmax
//    treat NaN as the most extreme value (the first NaN's index), like NumPy and PyTorch.
//  - argmin/argmax: the FIRST index among equal extreme values. The index is relative to the start of
//    the input (device-wide), the segment (segmented) or the reduced axis (reduce_axis), as int64.
//  - Deterministic: the same bits run to run for the same plan (the combination order depends only on
//    the policy, the grid and the arch's warp size). `reduce_options::reproducible` (fp32/fp64 sum)
//    gives the same bits on every device, every plan and the emulator (reduce_policy.hpp: the fixed
//    chunked order). A NaN result of the reproducible sum (NaN inputs of any sign or payload, inf +
//    -inf) is the canonical quiet NaN: f32 0x7fc00000, f64 0x7ff8000000000000, on every device.
#pragma once
#include <pk/archdb/planner.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>
#include <pk/portable/numeric.hpp>
#include <pk/tensor.hpp>

#include <cstdint>
#include <type_traits>

namespace pk {

namespace reduction {
//! The reduction family's element types are pk::dtype (pk/tensor.hpp).
using pk::dtype;
using pk::dtype_of;
using pk::size_of;
using pk::to_string;
}  // namespace reduction

//! The built-in reductions. sum and prod: f64 f32 f16 bf16 i32 i64; min max argmin argmax: also i8 u8.
enum class reduce_op : std::uint8_t { sum, prod, min, max, argmin, argmax };
const char* to_string(reduce_op op) noexcept;

struct reduce_options {
  //! fp32/fp64 sum only: the same bits on every device, plan and backend (fixed-order chunked sum).
  bool reproducible = false;
  //! null: the planner chooses. Otherwise the name of a compiled candidate of the entry point (`pk candidates`
  //! lists them: reduce_b256_i16_v4, repro_sum_b256, seg_b256_g32_u4): an unknown name is invalid_argument, a
  //! candidate that does not fit the device or a path without candidates (a strided reduce_axis) unsupported.
  const char* policy = nullptr;
};

//! Device-wide reduction of n elements of `type` at `in`. `out` is untyped because the result type
//! depends on `op`: for sum/prod/min/max exactly one value of `type` itself (not the accumulator:
//! sizeof is size_of(type), e.g. 2 bytes for bf16), for argmin/argmax exactly one std::int64_t (8
//! bytes); nothing else is written. It must be aligned for that type, and `in` for its element type
//! (otherwise invalid_argument; the same holds for every pointer of every reduction and row operation). The typed wrappers below
//! (reduce_sum<T>, reduce_argmax<T>, ...) check the pointer types at compile time.
status reduce(const stream& s, reduce_op op, reduction::dtype type, const void* in, std::int64_t n, void* out,
              const reduce_options& opt = {});

template <class T>
status reduce_sum(const stream& s, std::type_identity_t<const T>* in, std::int64_t n, T* out,
                  const reduce_options& opt = {}) {
  return reduce(s, reduce_op::sum, reduction::dtype_of<T>, in, n, out, opt);
}
//! The fp32 sum without template deduction (the original entry point: accepts nullptr arguments, which
//! are then reported as invalid).
inline status reduce_sum(const stream& s, const float* in, std::int64_t n, float* out, const reduce_options& opt = {}) {
  return reduce(s, reduce_op::sum, reduction::dtype::f32, in, n, out, opt);
}
template <class T>
status reduce_prod(const stream& s, std::type_identity_t<const T>* in, std::int64_t n, T* out,
                   const reduce_options& opt = {}) {
  return reduce(s, reduce_op::prod, reduction::dtype_of<T>, in, n, out, opt);
}
template <class T>
status reduce_min(const stream& s, std::type_identity_t<const T>* in, std::int64_t n, T* out,
                  const reduce_options& opt = {}) {
  return reduce(s, reduce_op::min, reduction::dtype_of<T>, in, n, out, opt);
}
template <class T>
status reduce_max(const stream& s, std::type_identity_t<const T>* in, std::int64_t n, T* out,
                  const reduce_options& opt = {}) {
  return reduce(s, reduce_op::max, reduction::dtype_of<T>, in, n, out, opt);
}
template <class T>
status reduce_argmin(const stream& s, const T* in, std::int64_t n, std::int64_t* out, const reduce_options& opt = {}) {
  return reduce(s, reduce_op::argmin, reduction::dtype_of<T>, in, n, out, opt);
}
template <class T>
status reduce_argmax(const stream& s, const T* in, std::int64_t n, std::int64_t* out, const reduce_options& opt = {}) {
  return reduce(s, reduce_op::argmax, reduction::dtype_of<T>, in, n, out, opt);
}

//! Reduces `in` along `axis` into out.data (written, although the view holds a const pointer): `out`
//! has in's shape without that axis (its own strides; rank 0 when in has rank 1) and in's type (std::int64_t for argmin/argmax). Each output
//! element is reduced in a fixed order. When in.stride[axis] == 1 a group of threads shares each
//! output (rows: the last axis of a row-major tensor); otherwise one thread owns one output.
status reduce_axis(const stream& s, reduce_op op, const tensor_view& in, int axis, const tensor_view& out,
                   const reduce_options& opt = {});

//! Segmented reduction: out[i] = reduce(in[offsets[i] .. offsets[i+1])) for i < segments. `offsets`
//! (segments + 1 non-decreasing int64, device memory) — an empty segment gives the identity.
status segmented_reduce(const stream& s, reduce_op op, reduction::dtype type, const void* in, std::int64_t segments,
                        const std::int64_t* offsets, void* out, const reduce_options& opt = {});

//! Mean and variance of n elements. The statistics are those of x - K, K = in[0] (exact for data
//! within a factor of 2 of K), by Welford per thread and Chan's merge across threads and blocks, so a
//! large common offset costs no accuracy (fp32 data near 1e8 keeps the variance to a few ulps times
//! log2 n); mean = K + mean(x - K). `mean` and `var` point to one accumulator-type value each (fp32
//! for f16/bf16/f32, fp64 for f64); var = M2 / (n - correction), NaN when n <= correction. Both are
//! NaN when n == 0 or when any element is NaN or +-inf.
status reduce_mean_var(const stream& s, reduction::dtype type, const void* in, std::int64_t n, void* mean, void* var,
                       int correction = 0);

namespace reduction {
//! The plan pk::reduce would use for n elements of `elem_bytes` bytes on `device`: the policy
//! chosen among the compiled candidates, with the reasons (`pk plan reduce` prints it).
archdb::plan plan_reduce(const archdb::device_desc& device, std::int64_t n, int elem_bytes);
//! Blocks the single-pass kernel launches for a plan.
unsigned reduce_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t n, int elem_bytes);
//! The plan of the reproducible fp32/fp64 sum (the plan changes speed, never the bits).
archdb::plan plan_reduce_reproducible(const archdb::device_desc& device, std::int64_t n, int elem_bytes);
//! The plan of a segmented reduction or a reduction along a unit-stride axis: `segments` outputs of
//! `total` elements in all.
archdb::plan plan_segmented(const archdb::device_desc& device, std::int64_t segments, std::int64_t total,
                            int elem_bytes);
//! Elements per segment pk::segmented_reduce plans its per-segment candidates for (the lengths are on the
//! device): a few thousand, the common case of the benchmarks.
inline constexpr std::int64_t segmented_assumed_len = 4096;
//! The plan of pk::segmented_reduce for `segments` offsets-given segments of `elem_bytes`-byte elements:
//! the even split over the grid (split_candidates, whose time depends on the total alone) and the
//! per-segment candidates (a warp or a block per segment, planned for `assumed_len` elements a segment:
//! the host does not see the lengths), in that order.
archdb::plan plan_segmented_reduce(const archdb::device_desc& device, std::int64_t segments, std::int64_t assumed_len,
                                   int elem_bytes);
//! Blocks the per-segment kernels launch for a plan of plan_segmented: enough for every
//! segment, at most 16 waves of resident blocks (the kernels loop over the rest).
unsigned segment_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t segments);
}  // namespace reduction

}  // namespace pk
