// The strided tensor view shared by every kernel family's public API (core: no GPU headers).
#pragma once
#include <pk/dtype.hpp>

#include <cstdint>

namespace pk {

//! A strided tensor of rank 0..4 in device memory: shape and strides in elements. Operations state
//! the rank and layout they accept (attention: rank 4, [batch, seqlen, heads, head_dim], last stride 1).
struct tensor_view {
  static constexpr int max_rank = 4;
  const void* data = nullptr;
  dtype type = dtype::f32;
  int rank = 0;
  std::int64_t shape[max_rank] = {};
  std::int64_t stride[max_rank] = {};
};

//! A rank-N row-major (contiguous) view: `contiguous(p, dtype::bf16, {b, s, h, d})`.
template <int N>
constexpr tensor_view contiguous(const void* data, dtype type, const std::int64_t (&shape)[N]) noexcept {
  static_assert(N >= 1 && N <= tensor_view::max_rank, "rank 1..4");
  tensor_view t;
  t.data = data;
  t.type = type;
  t.rank = N;
  std::int64_t s = 1;
  for (int i = N - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.stride[i] = s;
    s *= shape[i];
  }
  return t;
}

}  // namespace pk
