// Internal to the C API: the boundary guard, the stream handle, descriptor checks. Each kernel family
// is wrapped in its own translation units (c_reduce.cpp; c_attention.cpp and c_decode.cpp, which share
// c_attention_common.hpp), which include only that family's C++ headers.
#pragma once
#include <pk/pk.h>
#include <pk/runtime.hpp>
#include <pk/status.hpp>

#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

struct pk_stream_impl {
  pk::stream s;
};

namespace pk::capi {

//! The calling thread's last error message (one per thread, shared by every translation unit).
inline std::string& last_error() noexcept {
  thread_local std::string message;
  return message;
}

//! The integer a C caller passed as an enumeration. C allows any value of the enumeration's integer type;
//! in C++ loading a value outside the enumeration's range through the enum type is undefined behaviour
//! (UBSan's -fsanitize=enum found pk_memcpy_async(..., (pk_memcpy_kind)99) doing so), so the entry points
//! read the parameter's bytes instead and compare integers.
template <class E>
inline std::int32_t enum_value(const E& e) noexcept {
  static_assert(sizeof(E) == sizeof(std::int32_t), "the C enumerations of pk.h are int-sized");
  std::int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

inline pk_status to_c(errc e) noexcept {
  switch (e) {
    case errc::ok: return PK_SUCCESS;
    case errc::invalid_argument: return PK_ERROR_INVALID_ARGUMENT;
    case errc::unsupported: return PK_ERROR_UNSUPPORTED;
    case errc::out_of_memory: return PK_ERROR_OUT_OF_MEMORY;
    case errc::backend_error: return PK_ERROR_BACKEND;
    case errc::emulation_error: return PK_ERROR_EMULATION;
    case errc::not_found: return PK_ERROR_NOT_FOUND;
    case errc::internal: return PK_ERROR_INTERNAL;
  }
  return PK_ERROR_INTERNAL;
}

//! Stores `message`; if even that allocation fails, leaves the message empty.
inline void set_last_error(std::string_view message) noexcept {
  try {
    last_error().assign(message);
  } catch (...) {
    last_error().clear();
  }
}

//! The boundary: runs `body` (returning pk::status), records its message and maps it to a pk_status.
//! Exceptions become PK_ERROR_OUT_OF_MEMORY / PK_ERROR_INTERNAL with a message; none escapes.
template <class F>
pk_status guarded(F&& body) noexcept {
  try {
    last_error().clear();
    const status st = body();
    if (st.ok()) return PK_SUCCESS;
    set_last_error(st.message());
    return to_c(st.code());
  } catch (const std::bad_alloc&) {
    set_last_error("out of host memory");
    return PK_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      last_error() = std::string("internal error: ") + e.what();
    } catch (...) {
      last_error().clear();
    }
    return PK_ERROR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return PK_ERROR_INTERNAL;
  }
}

inline status get_stream(std::string_view api, pk_stream_t s, const stream*& out) {
  if (s == nullptr) return invalid_argument(std::string(api) + ": stream: must not be null (create one with pk_stream_default)");
  if (!s->s.valid()) return invalid_argument(std::string(api) + ": stream: not initialized");
  out = &s->s;
  return {};
}

//! "f32", ... or null for a value that is not a pk_dtype.
inline const char* dtype_name(std::int32_t d) noexcept {
  switch (d) {
    case PK_DTYPE_F32: return "f32";
    case PK_DTYPE_F64: return "f64";
    case PK_DTYPE_F16: return "f16";
    case PK_DTYPE_BF16: return "bf16";
    case PK_DTYPE_I32: return "i32";
    case PK_DTYPE_I64: return "i64";
    case PK_DTYPE_I8: return "i8";
    case PK_DTYPE_U8: return "u8";
    case PK_DTYPE_F8E4M3FN: return "f8e4m3fn";
    case PK_DTYPE_F8E4M3FNUZ: return "f8e4m3fnuz";
    default: return nullptr;
  }
}

//! Checks a descriptor's header: not null, a known dtype, rank in [0, PK_MAX_RANK], non-negative
//! extents whose product (the element count) fits int64. `where` names it in the message ("pk_reduce:
//! in"). Byte extents and strided offsets are checked by the C++ entry points.
inline status check_tensor(std::string_view where, const pk_tensor* t) {
  const std::string w(where);
  if (t == nullptr) return invalid_argument(w + ": must not be null");
  if (dtype_name(t->dtype) == nullptr)
    return invalid_argument(w + ": dtype = " + std::to_string(t->dtype) + ": not a pk_dtype");
  if (t->rank < 0 || t->rank > PK_MAX_RANK)
    return invalid_argument(w + ": rank = " + std::to_string(t->rank) + ": must be in [0, " + std::to_string(PK_MAX_RANK) + "]");
  for (std::int32_t k = 0; k < t->rank; ++k)
    if (t->shape[k] < 0)
      return invalid_argument(w + ": shape[" + std::to_string(k) + "] = " + std::to_string(t->shape[k]) + ": must be >= 0");
  std::int64_t n = 1;
  for (std::int32_t k = 0; k < t->rank; ++k)
    if (__builtin_mul_overflow(n, t->shape[k], &n)) {
      std::string shape;
      for (std::int32_t j = 0; j < t->rank; ++j) shape += (j ? ", " : "") + std::to_string(t->shape[j]);
      return invalid_argument(w + ": shape = [" + shape + "]: the element count overflows int64");
    }
  return {};
}

//! The element count of a descriptor that passed check_tensor (the product cannot overflow).
inline std::int64_t element_count(const pk_tensor& t) noexcept {
  std::int64_t n = 1;
  for (std::int32_t k = 0; k < t.rank; ++k) n *= t.shape[k];
  return n;
}

//! Row-major with no gaps: strides[rank-1] == 1, strides[k] == strides[k+1] * shape[k+1]. Extents of 1
//! (and empty tensors) accept any stride, as in DLPack and PyTorch.
inline status check_contiguous(std::string_view where, const pk_tensor& t) {
  if (element_count(t) == 0) return {};
  std::int64_t expected = 1;
  for (std::int32_t k = t.rank - 1; k >= 0; --k) {
    if (t.shape[k] != 1 && t.strides[k] != expected)
      return invalid_argument(std::string(where) + ": strides[" + std::to_string(k) + "] = " + std::to_string(t.strides[k]) +
                              ": must be " + std::to_string(expected) + " (the tensor must be contiguous, row-major)");
    expected *= t.shape[k];
  }
  return {};
}

//! A tensor of exactly one element (rank 0, or any rank with every extent 1).
inline status check_single(std::string_view where, const pk_tensor& t) {
  if (element_count(t) != 1)
    return invalid_argument(std::string(where) + ": must hold one element (rank 0, or every extent 1); holds " +
                            std::to_string(element_count(t)));
  if (t.data == nullptr) return invalid_argument(std::string(where) + ": data: must not be null");
  return {};
}

//! `t` has dtype `expected`.
inline status check_dtype(std::string_view where, const pk_tensor& t, std::int32_t expected) {
  if (t.dtype != expected)
    return invalid_argument(std::string(where) + ": dtype " + dtype_name(t.dtype) + ": must be " + dtype_name(expected));
  return {};
}

}  // namespace pk::capi
