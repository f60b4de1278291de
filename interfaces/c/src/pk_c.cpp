// The C API (pk/pk.h): status strings, descriptors, streams and memory. The kernel families are
// wrapped in c_reduce.cpp, c_attention.cpp and c_decode.cpp. Every entry point goes through
// capi::guarded: nothing thrown crosses the C boundary.
#include "c_api.hpp"

#include <pk/config.hpp>

#include <algorithm>
#include <cstring>

using namespace pk::capi;

namespace {


size_t copy_string(std::string_view s, char* buf, size_t capacity) noexcept {
  if (buf != nullptr && capacity > 0) {
    const size_t n = std::min(s.size(), capacity - 1);
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
  return s.size();
}

// Wraps a freshly made pk::stream into a handle.
template <class Make>
pk::status make_handle(const char* api, pk_stream_t* out, Make&& make) {
  if (out == nullptr) return pk::invalid_argument(std::string(api) + ": out: must not be null");
  *out = nullptr;
  pk::stream s;
  PK_TRY(make(s));
  *out = new pk_stream_impl{s};
  return {};
}

pk::status copy(const char* api, pk_stream_t stream, void* dst, const void* src, size_t bytes, pk::copy_kind kind, bool async) {
  const pk::stream* s = nullptr;
  PK_TRY(get_stream(api, stream, s));
  if (bytes == 0) return {};
  if (dst == nullptr) return pk::invalid_argument(std::string(api) + ": dst: must not be null");
  if (src == nullptr) return pk::invalid_argument(std::string(api) + ": src: must not be null");
  return async ? pk::copy_async(*s, dst, src, bytes, kind) : pk::copy(*s, dst, src, bytes, kind);
}

}  // namespace

extern "C" {

const char* pk_status_string(pk_status status) {
  switch (enum_value(status)) {
    case PK_SUCCESS: return "success";
    case PK_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case PK_ERROR_UNSUPPORTED: return "unsupported";
    case PK_ERROR_OUT_OF_MEMORY: return "out_of_memory";
    case PK_ERROR_BACKEND: return "backend_error";
    case PK_ERROR_EMULATION: return "emulation_error";
    case PK_ERROR_NOT_FOUND: return "not_found";
    case PK_ERROR_INTERNAL: return "internal";
  }
  return "unknown pk_status";
}

const char* pk_last_error_message(void) { return last_error().c_str(); }

size_t pk_last_error_message_copy(char* buf, size_t capacity) { return copy_string(last_error(), buf, capacity); }

const char* pk_version_string(void) { return PK_VERSION_STRING; }

size_t pk_dtype_size(pk_dtype dtype) {
  switch (enum_value(dtype)) {
    case PK_DTYPE_F32: return sizeof(float);
    case PK_DTYPE_F64: return sizeof(double);
    case PK_DTYPE_F16: return sizeof(std::uint16_t);
    case PK_DTYPE_BF16: return sizeof(std::uint16_t);
    case PK_DTYPE_I32: return sizeof(std::int32_t);
    case PK_DTYPE_I64: return sizeof(std::int64_t);
    case PK_DTYPE_I8: return sizeof(std::int8_t);
    case PK_DTYPE_U8:
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E4M3FNUZ: return sizeof(std::uint8_t);
  }
  return 0;
}

pk_tensor pk_tensor_scalar(void* data, pk_dtype dtype) {
  pk_tensor t{};
  t.data = data;
  t.dtype = enum_value(dtype);
  t.rank = 0;
  return t;
}

pk_tensor pk_tensor_1d(void* data, pk_dtype dtype, int64_t n) {
  pk_tensor t = pk_tensor_scalar(data, PK_DTYPE_F32);
  t.dtype = enum_value(dtype);
  t.rank = 1;
  t.shape[0] = n;
  t.strides[0] = 1;
  return t;
}

pk_tensor pk_tensor_contiguous(void* data, pk_dtype dtype, int32_t rank, const int64_t* shape) {
  pk_tensor t = pk_tensor_scalar(data, PK_DTYPE_F32);
  t.dtype = enum_value(dtype);
  if (rank < 0 || rank > PK_MAX_RANK || (rank > 0 && shape == nullptr)) {
    t.rank = -1;
    return t;
  }
  t.rank = rank;
  std::int64_t stride = 1;
  for (int32_t k = rank - 1; k >= 0; --k) {
    t.shape[k] = shape[k];
    t.strides[k] = stride;
    // Saturates instead of overflowing: the entry points reject a shape whose element count does not
    // fit int64 (check_tensor), naming it.
    if (__builtin_mul_overflow(stride, shape[k], &stride)) stride = INT64_MAX;
  }
  return t;
}

pk_status pk_stream_create_host(const char* device_name, pk_stream_t* out) {
  return guarded([&] {
    return make_handle("pk_stream_create_host", out, [&](pk::stream& s) {
      if (device_name == nullptr) return pk::default_host_stream(s);
      return pk::stream::host(device_name, s);
    });
  });
}

pk_status pk_stream_create_cuda(void* native_stream, int ordinal, pk_stream_t* out) {
  return guarded([&] {
    return make_handle("pk_stream_create_cuda", out, [&](pk::stream& s) { return pk::stream::cuda(native_stream, ordinal, s); });
  });
}

pk_status pk_stream_create_hip(void* native_stream, int ordinal, pk_stream_t* out) {
  return guarded([&] {
    return make_handle("pk_stream_create_hip", out, [&](pk::stream& s) { return pk::stream::hip(native_stream, ordinal, s); });
  });
}

pk_status pk_stream_default(pk_stream_t* out) {
  return guarded([&] { return make_handle("pk_stream_default", out, [](pk::stream& s) { return pk::default_stream(s); }); });
}

pk_status pk_stream_destroy(pk_stream_t stream) {
  return guarded([&] {
    delete stream;
    return pk::status{};
  });
}

pk_status pk_stream_synchronize(pk_stream_t stream) {
  return guarded([&] {
    const pk::stream* s = nullptr;
    PK_TRY(get_stream("pk_stream_synchronize", stream, s));
    return pk::synchronize(*s);
  });
}

pk_status pk_stream_describe(pk_stream_t stream, char* buf, size_t capacity, size_t* length) {
  return guarded([&] {
    const pk::stream* s = nullptr;
    PK_TRY(get_stream("pk_stream_describe", stream, s));
    if (buf == nullptr && capacity > 0) return pk::invalid_argument("pk_stream_describe: buf: must not be null when capacity > 0");
    const size_t n = copy_string(s->describe(), buf, capacity);
    if (length != nullptr) *length = n;
    return pk::status{};
  });
}

pk_status pk_malloc(pk_stream_t stream, size_t bytes, void** out) {
  return guarded([&] {
    const pk::stream* s = nullptr;
    PK_TRY(get_stream("pk_malloc", stream, s));
    if (out == nullptr) return pk::invalid_argument("pk_malloc: out: must not be null");
    *out = nullptr;
    return pk::device_malloc(*s, bytes, out);
  });
}

pk_status pk_free(pk_stream_t stream, void* ptr) {
  return guarded([&] {
    const pk::stream* s = nullptr;
    PK_TRY(get_stream("pk_free", stream, s));
    return ptr == nullptr ? pk::status{} : pk::device_free(*s, ptr);
  });
}

pk_status pk_memcpy_h2d(pk_stream_t stream, void* device_dst, const void* host_src, size_t bytes) {
  return guarded([&] { return copy("pk_memcpy_h2d", stream, device_dst, host_src, bytes, pk::copy_kind::host_to_device, false); });
}

pk_status pk_memcpy_d2h(pk_stream_t stream, void* host_dst, const void* device_src, size_t bytes) {
  return guarded([&] { return copy("pk_memcpy_d2h", stream, host_dst, device_src, bytes, pk::copy_kind::device_to_host, false); });
}

pk_status pk_memcpy_d2d(pk_stream_t stream, void* device_dst, const void* device_src, size_t bytes) {
  return guarded([&] { return copy("pk_memcpy_d2d", stream, device_dst, device_src, bytes, pk::copy_kind::device_to_device, false); });
}

pk_status pk_memcpy_async(pk_stream_t stream, void* dst, const void* src, size_t bytes, pk_memcpy_kind kind) {
  return guarded([&] {
    pk::copy_kind k{};
    const std::int32_t kind_value = enum_value(kind);
    switch (kind_value) {
      case PK_MEMCPY_HOST_TO_DEVICE: k = pk::copy_kind::host_to_device; break;
      case PK_MEMCPY_DEVICE_TO_HOST: k = pk::copy_kind::device_to_host; break;
      case PK_MEMCPY_DEVICE_TO_DEVICE: k = pk::copy_kind::device_to_device; break;
      default:
        return pk::invalid_argument("pk_memcpy_async: kind = " + std::to_string(kind_value) + ": not a pk_memcpy_kind");
    }
    return copy("pk_memcpy_async", stream, dst, src, bytes, k, true);
  });
}

pk_status pk_memset_async(pk_stream_t stream, void* device_dst, int byte_value, size_t bytes) {
  return guarded([&] {
    const pk::stream* s = nullptr;
    PK_TRY(get_stream("pk_memset_async", stream, s));
    if (bytes == 0) return pk::status{};
    if (device_dst == nullptr) return pk::invalid_argument("pk_memset_async: device_dst: must not be null");
    return pk::memset_async(*s, device_dst, byte_value, bytes);
  });
}

}  // extern "C"
