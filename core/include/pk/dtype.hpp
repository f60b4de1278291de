// Element types shared by every kernel family's public API (core: no GPU headers, no device code).
#pragma once
#include <cstdint>

namespace pk {

//! Element types. Which ones an operation accepts is stated by the operation.
//! f8e4m3fn / f8e4m3fnuz: 8-bit e4m3 floats, storage formats of KV caches only (attention/decode.hpp).
//! e4m3fn (OCP FP8, NVIDIA and gfx950 hardware): bias 7, largest 448, NaN S.1111.111, no infinities.
//! e4m3fnuz (gfx942 hardware): bias 8, largest 240, one NaN 0x80 (no -0), no infinities.
enum class dtype : std::uint8_t { f64, f32, f16, bf16, i32, i64, i8, u8, f8e4m3fn, f8e4m3fnuz };

//! "f64", "f32", "f16", "bf16", "i32", "i64", "i8", "u8", "f8e4m3fn", "f8e4m3fnuz".
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
    case dtype::f8e4m3fn: return "f8e4m3fn";
    case dtype::f8e4m3fnuz: return "f8e4m3fnuz";
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
    case dtype::u8:
    case dtype::f8e4m3fn:
    case dtype::f8e4m3fnuz: return 1;
  }
  return 0;
}

}  // namespace pk
