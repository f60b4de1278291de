// Element types and the strided tensor view shared by every kernel family's public API.
#pragma once
#include <pk/portable/numeric.hpp>

#include <cstdint>
#include <type_traits>

namespace pk {

//! Element types. Which ones an operation accepts is stated by the operation.
enum class dtype : std::uint8_t { f64, f32, f16, bf16, i32, i64, i8, u8 };

//! "f64", "f32", "f16", "bf16", "i32", "i64", "i8", "u8".
constexpr const char* to_string(dtype t) noexcept {
  switch (t) {
    case dtype::f64: return "f64";
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::i32: return "i32";
    case dtype::i64: return "i64";
    case dtype::i8: return "i8";
    case dtype::u8: return "u8";
  }
  return "?";
}

//! Bytes per element (0 for an out-of-range value).
constexpr int size_of(dtype t) noexcept {
  switch (t) {
    case dtype::f64:
    case dtype::i64: return 8;
    case dtype::f32:
    case dtype::i32: return 4;
    case dtype::f16:
    case dtype::bf16: return 2;
    case dtype::i8:
    case dtype::u8: return 1;
  }
  return 0;
}

//! The dtype of a C++ element type.
template <class T>
inline constexpr dtype dtype_of = [] {
  if constexpr (std::is_same_v<T, double>) return dtype::f64;
  else if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, fp16>) return dtype::f16;
  else if constexpr (std::is_same_v<T, bf16>) return dtype::bf16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return dtype::i64;
  else if constexpr (std::is_same_v<T, std::int8_t>) return dtype::i8;
  else {
    static_assert(std::is_same_v<T, std::uint8_t>, "pk: no dtype for this element type");
    return dtype::u8;
  }
}();

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
