// Element types shared by every kernel family's public API (core: no GPU headers, no device code).
#pragma once
#include <cstdint>

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

}  // namespace pk
